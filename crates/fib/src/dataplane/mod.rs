//! The dataplane runtime: one worker thread per core, each owning one
//! queue of every port and running the element graph of [`graph_engine`]
//! (with IPv4 forwarding as the fused `Ip4Forward` element by default,
//! see [`Engine`]), plus the FIB thread, the
//! only writer of the published [`FibTables`].
//!
//! Queues: with AF_XDP, a port is read on [`PortConfig::queues`] RX queues
//! (by default as many as there are cores), one AF_XDP socket per (port,
//! queue), and core `c` serves queues `c, c + cores, ...` of every port
//! ([`core_queues`]; several as one `io::xdp::XskQueues`, sending on the
//! first), so the device's own flow hashing (RSS, or the sender's TX queue
//! on a veth) spreads the load. Refused: fewer queues than cores (a core
//! would have no queue to send on), more than the driver has, and several
//! queues of a veth on the generic hook (veth then delivers every frame on
//! queue 0: [`GENERIC_VETH_QUEUES`]). Each queue's counters are published
//! with the core's ([`core_stats::CoreSnapshot::queues`]). With AF_PACKET, every core
//! opens a socket per port in one `PACKET_FANOUT_HASH` group per port: the
//! kernel's flow hash picks the core, so a flow stays on one core. Each
//! core runs its loop to completion on its own queues; nothing on the
//! packet path is shared but the read-mostly tables. The cluster fabric
//! is one more port with a UDP socket per core, all in one `SO_REUSEPORT`
//! group on the fabric address (the kernel hashes each received datagram
//! to one member by its 4-tuple); each core has its own fabric elements
//! (balancer, packer) and they share only the live-node mask.
//!
//! The FIB thread takes batches of [`Change`]s from a channel, coalesces
//! what is queued, applies them to the [`Fib`], takes learned neighbours
//! from the workers' rings, publishes the deltas in one left-right swap,
//! and optionally exports the resolved routes to the kernel.
//!
//! An empty batch on the feed is a marker, not a change: the sender's
//! first full sync after a graceful restart is complete (tesserad sends
//! it when every RIB part's selection deferral is over and its selected
//! routes were sent). The FIB thread then sweeps the kernel routes it
//! adopted at start ([`KernelConfig::adopt`]) and that were not selected
//! again. Without adoption the marker changes nothing.

pub mod balance;
pub mod common;
pub mod core_stats;
pub mod graph_engine;
mod switch;
pub mod vr;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use io::fabric::FabricDevice;
use io::packet::{Fanout, FanoutMode, PacketConfig, PacketSocket};
use io::rss::{spsc, Consumer};
use io::xdp::fast::{ApplyStats, FastCounters, FastMaps};
use io::xdp::{XdpMode, XdpProgram, XskConfig, XskQueues, XskSocket};
use io::IoError;
use lpm::publish::{left_right, Writer};

use crate::kernel::{self, KernelConfig};
use crate::resolve::{Change, Fib, FibStats, PortSpec};
use crate::table::FibTables;
use crate::xdp_mirror::FastFeed;
pub use balance::BalanceGroup;
pub use common::{
    ElementCounters, Engine, FabricCc, FabricConfig, GraphText, IpsecConfig, IpsecCounters,
    IpsecSa, Learned, LoopConfig, PortInfo, WorkerCounters,
};
pub use graph::BalanceParams;
pub use graph_engine::{check_graph, GraphPort, GraphWorker, LiveTable, Swap, WorkerLink};
pub use vr::{VrDef, VrSnapshot};

/// What a worker thread needs besides its sockets.
struct Job {
    ports: Vec<GraphPort>,
    v4: lpm::publish::ReadHandle<FibTables>,
    v6: lpm::publish::ReadHandle<FibTables>,
    share: (
        lpm::publish::ReadHandle<FibTables>,
        io::rss::Producer<Learned>,
    ),
    /// This core's fabric socket (one `SO_REUSEPORT` group over the
    /// cores), its settings and the shared live-node mask.
    fabric: Option<(FabricDevice, FabricConfig, Arc<AtomicU64>)>,
    /// The operator's graph, if any (else the built-in one).
    graph: Option<GraphText>,
    link: WorkerLink,
    /// IPsec SAs (`[dataplane.ipsec]`; one core).
    ipsec: Option<IpsecConfig>,
    /// NICBalance port groups of the built-in graph.
    balance: Vec<BalanceGroup>,
    /// Virtual routers: this core runs them instead of the main graph.
    vr: Option<vr::VrJob>,
}

/// A worker's device: one queue of an external port, or the cluster
/// fabric's UDP socket (`io::fabric::FabricDevice`), behind one
/// `pkt::Device` so that one graph drives both.
pub enum PortDev<D> {
    /// An external port's queue (AF_XDP or AF_PACKET).
    Port(D),
    /// The fabric socket.
    Fabric(FabricDevice),
}

impl<D: pkt::Device<Error = IoError>> pkt::Device for PortDev<D> {
    type Error = IoError;
    fn name(&self) -> &str {
        match self {
            PortDev::Port(d) => d.name(),
            PortDev::Fabric(d) => d.name(),
        }
    }
    fn rx_burst(&mut self, pool: &pkt::Pool, batch: &mut pkt::Batch, max: usize) -> usize {
        match self {
            PortDev::Port(d) => d.rx_burst(pool, batch, max),
            PortDev::Fabric(d) => d.rx_burst(pool, batch, max),
        }
    }
    fn tx_burst(&mut self, batch: &mut pkt::Batch) -> usize {
        match self {
            PortDev::Port(d) => d.tx_burst(batch),
            PortDev::Fabric(d) => d.tx_burst(batch),
        }
    }
    fn flush(&mut self) {
        match self {
            PortDev::Port(d) => d.flush(),
            PortDev::Fabric(d) => d.flush(),
        }
    }
    fn stats(&self) -> pkt::DevStats {
        match self {
            PortDev::Port(d) => d.stats(),
            PortDev::Fabric(d) => d.stats(),
        }
    }
    fn poll_fd(&self) -> Option<i32> {
        match self {
            PortDev::Port(d) => d.poll_fd(),
            PortDev::Fabric(d) => d.poll_fd(),
        }
    }
    fn last_error(&self) -> Option<IoError> {
        match self {
            PortDev::Port(d) => d.last_error(),
            PortDev::Fabric(d) => d.last_error(),
        }
    }
    fn rx_ring_drops(&self) -> Option<u64> {
        match self {
            PortDev::Port(d) => d.rx_ring_drops(),
            PortDev::Fabric(d) => d.rx_ring_drops(),
        }
    }
    fn queue_stats(&self, out: &mut Vec<pkt::QueueStats>) {
        match self {
            PortDev::Port(d) => d.queue_stats(out),
            PortDev::Fabric(d) => d.queue_stats(out),
        }
    }
}

fn serve<D: pkt::Device<Error = IoError>>(
    socks: Vec<D>,
    job: Job,
    lc: LoopConfig,
    stop: &AtomicBool,
) -> Result<WorkerCounters, IoError> {
    let Job {
        ports,
        v4,
        v6,
        share,
        fabric,
        graph,
        link,
        ipsec,
        balance,
        vr,
    } = job;
    let Some((fab, fc, live)) = fabric else {
        let mut g = GraphWorker::with_graph(
            &ports,
            socks,
            v4,
            v6,
            Some(share),
            lc,
            None,
            graph.as_ref(),
            ipsec.as_ref(),
            &balance,
        )
        .map_err(|e| e.unwrap_or(IoError::Config("the dataplane graph does not build")))?;
        g.set_link(link);
        // A core that may run virtual routers (now, or after a reload).
        if let Some(vj) = vr {
            return switch::serve(&ports, g, vj, lc, stop);
        }
        g.run(lc, stop)?;
        return Ok(g.counters());
    };
    let devs: Vec<PortDev<D>> = socks
        .into_iter()
        .map(PortDev::Port)
        .chain(std::iter::once(PortDev::Fabric(fab)))
        .collect();
    let mut g = GraphWorker::with_graph(
        &ports,
        devs,
        v4,
        v6,
        Some(share),
        lc,
        Some(&fc),
        None,
        None,
        &balance,
    )
    .map_err(|e| e.unwrap_or(IoError::Config("the dataplane graph does not build")))?;
    g.set_link(link);
    g.follow_live(&live);
    g.run(lc, stop)?;
    Ok(g.counters())
}

/// Why kernel export and the cluster fabric do not go together.
pub const KERNEL_WITH_FABRIC: &str = "kernel export with the cluster fabric is not supported: \
     routes across the fabric leave through GENEVE in this dataplane, and the kernel has no \
     next hop for them (sent as plain IP to a peer's fabric address, nothing forwards them); \
     exporting only the routes of the external ports would leave the kernel a partial table";

/// Which packet I/O the workers use.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IoMode {
    /// AF_XDP copy mode, generic (skb) XDP hook.
    AfXdp,
    /// AF_XDP copy mode, the driver's XDP hook.
    AfXdpDriver,
    /// AF_PACKET TPACKET_V3 with a hash fanout group per port.
    AfPacket,
}

/// One dataplane interface and the router's addresses on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortConfig {
    pub name: String,
    pub addrs: Vec<(IpAddr, u8)>,
    /// The RX queues the AF_XDP modes read on it.
    pub queues: Queues,
}

/// How many RX queues of a port the AF_XDP modes read (one socket each).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Queues {
    /// One per core (queue `c` on core `c`): the default.
    #[default]
    PerCore,
    /// Queues `0..n`, `n` >= cores (core `c` serves `c, c + cores, ...`).
    Count(u32),
    /// Every RX queue the driver reports (`ethtool -l`), at least cores.
    All,
}

/// The queues core `core` of `cores` serves on a port read on `queues`
/// queues: `core, core + cores, ...` (every queue on exactly one core).
pub fn core_queues(core: usize, cores: usize, queues: u32) -> impl Iterator<Item = u32> {
    (core as u32..queues).step_by(cores.max(1))
}

/// Why several queues of a veth cannot be read on the generic hook.
pub const GENERIC_VETH_QUEUES: &str = "io = \"af_xdp\" (generic XDP) on a veth with several \
     queues: veth delivers every frame to the generic hook as RX queue 0 (kernel 6.18, also \
     with GRO on), so only the first queue's core would receive; use io = \"af_xdp_driver\" \
     (veth's native hook runs per RX queue), or queues = 1 with cores = 1";

/// Why `queues` does not apply to AF_PACKET.
pub const QUEUES_AF_PACKET: &str = "queues on an interface needs io = \"af_xdp\" or \
     \"af_xdp_driver\": AF_PACKET is not bound to queues (its fanout group spreads flows \
     over the cores)";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataplaneConfig {
    pub ports: Vec<PortConfig>,
    pub mode: IoMode,
    /// Worker threads (one queue of every port each).
    pub cores: usize,
    pub loop_cfg: LoopConfig,
    /// Install resolved routes into the kernel too.
    pub kernel: Option<KernelConfig>,
    /// This node's cluster fabric (`[cluster]`): one more port, after the
    /// external ones, with a socket per core (one `SO_REUSEPORT` group).
    /// Not with [`Engine::Fast`] (the fabric keeps the unfused chain) and
    /// no kernel export ([`KERNEL_WITH_FABRIC`]);
    /// congestion control needs one core (not supported yet otherwise).
    pub fabric: Option<FabricConfig>,
    /// The operator's element graph (`[dataplane] graph`) instead of the
    /// built-in one; its devices are the interfaces, by name. Not with
    /// the fabric or `Engine::Fast` (not supported yet).
    pub graph: Option<GraphText>,
    /// IPsec ESP tunnel mode (`[dataplane.ipsec]`): not with
    /// [`Engine::Fast`] (IPsec keeps the unfused chain), one core and no fabric ([`IPSEC_NOT_SUPPORTED`]).
    pub ipsec: Option<IpsecConfig>,
    /// NICBalance port groups (`[[dataplane.port_group]]`) in the
    /// built-in graph ([`balance`]); not with an operator's graph, which
    /// holds its own `NICBalance` elements.
    pub balance: Vec<BalanceGroup>,
    /// Virtual routers ([`vr`]): each core runs one built-in graph per VR
    /// under a proportional-share scheduler instead of the main graph.
    /// Not with the fabric, an operator's graph, IPsec or NICBalance
    /// ([`VR_NOT_SUPPORTED`]). Where [`vrs_possible`], a reload can add
    /// the first VRs or remove the last ([`Dataplane::set_vrs`]).
    pub vrs: Vec<VrDef>,
}

/// Why virtual routers and some other settings do not go together.
pub const VR_NOT_SUPPORTED: &str = "virtual routers with the cluster fabric, an operator's \
     graph, IPsec, NICBalance port groups or the XDP fast path are not supported yet: each VR \
     runs its own instance of the built-in graph (and the fast path forwards by the main FIB)";

/// Whether the dataplane of `cfg` can run virtual routers, now or after a
/// reload ([`Dataplane::set_vrs`]): not with the cluster fabric, IPsec or
/// the XDP fast path, which a reload cannot take away.
pub fn vrs_possible(cfg: &DataplaneConfig) -> bool {
    cfg.fabric.is_none() && cfg.ipsec.is_none() && !cfg.loop_cfg.xdp_fastpath
}

/// Why an IPsec configuration cannot run (the config crate refuses the
/// same combinations with the file position).
pub const IPSEC_NOT_SUPPORTED: &str = "IPsec is not supported yet with several cores, \
     engine = \"fast\" or the cluster fabric: an SA's sequence numbers and replay window \
     belong to one core's element graph";

/// Why the XDP fast path cannot run with a configuration (the config crate
/// refuses the same combinations with the file position).
pub const FASTPATH_NOT_SUPPORTED: &str = "xdp_fastpath needs io = \"af_xdp\" or \"af_xdp_driver\" \
     and the built-in graph without IPsec or NICBalance port groups: packets the fast path \
     forwards never reach the element graph";

/// Routes the fast path's LPM map can hold (an LPM_TRIE allocates per
/// entry, so the bound costs nothing until used).
const FAST_ROUTES: u32 = 4 << 20;

/// Why NICBalance port groups and an operator's graph do not go together.
pub const BALANCE_WITH_GRAPH: &str = "NICBalance port groups with an operator's graph: the \
     operator's graph holds its own NICBalance(...) elements";

/// Why the dataplane could not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DpError {
    /// The operator's graph is invalid (`FILE:LINE:COL: what`).
    Graph(String),
    Io(IoError),
    Config(&'static str),
    /// Port `usize` has fewer RX queues than there are cores (or than
    /// its `queues`).
    TooFewQueues(usize),
    /// Port `port` is set to read `queues` queues, fewer than `cores`.
    QueuesBelowCores {
        port: usize,
        queues: u32,
        cores: usize,
    },
    /// Port `usize` has `queues = "all"` and its driver does not report
    /// its queues.
    QueuesUnknown(usize),
    Kernel(kernel::KernelError),
    /// A worker thread ended before saying it was ready.
    WorkerGone,
    /// The virtual routers cannot run (what is wrong).
    Vr(String),
}

impl std::fmt::Display for DpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DpError::Io(e) => write!(f, "{e}"),
            DpError::Graph(e) => write!(f, "{e}"),
            DpError::Config(s) => write!(f, "{s}"),
            DpError::TooFewQueues(p) => write!(
                f,
                "dataplane port {p} has fewer RX queues than cores or its `queues` (lower them, \
                 or use af_packet)"
            ),
            DpError::QueuesBelowCores {
                port,
                queues,
                cores,
            } => write!(
                f,
                "dataplane port {port}: queues = {queues} is fewer than cores = {cores} (every \
                 core needs a queue of every port to send on)"
            ),
            DpError::QueuesUnknown(p) => write!(
                f,
                "dataplane port {p}: queues = \"all\" but its driver does not report its RX \
                 queues (ETHTOOL_GCHANNELS); give the number"
            ),
            DpError::Kernel(e) => write!(f, "kernel export: {e:?}"),
            DpError::WorkerGone => write!(f, "a dataplane worker stopped during start-up"),
            DpError::Vr(e) => write!(f, "virtual routers: {e}"),
        }
    }
}

impl std::error::Error for DpError {}

impl From<IoError> for DpError {
    fn from(e: IoError) -> Self {
        DpError::Io(e)
    }
}

/// What the FIB thread reports (also readable while running).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FibReport {
    pub stats: FibStats,
    /// Left-right publications and the deltas they carried.
    pub publishes: u64,
    pub deltas: u64,
    /// Neighbours learned from the workers.
    pub learned: u64,
    /// Routes written to / failed in the kernel.
    pub kernel_ok: u64,
    pub kernel_err: u64,
    /// Kernel routes adopted at a graceful restart (IPv4, IPv6), and
    /// those of them deleted by the sweep after the first full sync.
    pub kernel_adopted: (u64, u64),
    pub kernel_swept: u64,
    /// The feed channel was closed by the sender.
    pub feed_closed: bool,
    /// The XDP fast path's map writes (`LoopConfig::xdp_fastpath`).
    pub fast: ApplyStats,
}

/// Final counters.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub total: WorkerCounters,
    pub per_core: Vec<WorkerCounters>,
    pub fib: FibReport,
    /// Errors of workers that stopped on one.
    pub errors: Vec<IoError>,
}

/// A worker's latest element counters.
type SharedCounters = Arc<Mutex<Vec<ElementCounters>>>;

/// A running dataplane. Drop or [`Dataplane::stop`] stops it.
pub struct Dataplane {
    /// Each worker's graph replacements and element counters.
    links: Vec<(mpsc::Sender<Swap>, SharedCounters)>,
    /// Each core's packet counters, core 0 first.
    cores: Vec<Arc<core_stats::CoreStats>>,
    /// The interface names (the graph's devices), in port order.
    devs: Vec<String>,
    /// The operator's graph running now (`None`: the built-in one).
    graph: Mutex<Option<GraphText>>,
    /// The cluster fabric's live nodes (bit `i`: node `i`), when there is
    /// a fabric: see [`Dataplane::set_node_live`].
    fabric_live: Option<Arc<AtomicU64>>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<Result<WorkerCounters, IoError>>>,
    fib: Option<JoinHandle<FibReport>>,
    live: Arc<Mutex<FibReport>>,
    /// The XDP fast path's maps, when it is on.
    fast: Option<Arc<FastMaps>>,
    /// The virtual routers' FIBs and the cores' VR channels.
    vr: Option<Mutex<vr::VrControl>>,
    /// Asks the main FIB thread for its routes.
    routes: Option<MainRoutes>,
}

/// Where the main FIB thread sends a copy of its routes.
type RoutesReply = mpsc::Sender<Vec<Change>>;

/// A handle on the main FIB's routes, for the thread that feeds virtual
/// routers (`table = "main"`) added by a reload: [`MainRoutes::get`].
#[derive(Clone)]
pub struct MainRoutes(mpsc::Sender<RoutesReply>);

impl MainRoutes {
    /// Every best route the main FIB knows, after every batch its feed
    /// had queued when asked (call it from the feed's sending thread,
    /// between two batches: what it sends next follows from there).
    /// Errors: the dataplane stopped, or no answer within `wait`.
    pub fn get(&self, wait: Duration) -> Result<Vec<Change>, String> {
        let (tx, rx) = mpsc::channel();
        self.0
            .send(tx)
            .map_err(|_| "the dataplane's FIB thread has stopped".to_string())?;
        rx.recv_timeout(wait)
            .map_err(|_| format!("the dataplane's FIB thread did not answer within {wait:?}"))
    }
}

/// An `ifreq` named `name` and a datagram socket to run interface ioctls
/// on (in the calling thread's network namespace, unlike /sys, which shows
/// the namespace that mounted it).
fn ifreq_socket(name: &str) -> Result<(std::os::fd::OwnedFd, libc::ifreq), DpError> {
    let b = name.as_bytes();
    if b.is_empty() || b.len() >= libc::IFNAMSIZ {
        return Err(DpError::Io(IoError::NoSuchInterface));
    }
    // SAFETY: plain socket(2); checked below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(DpError::Config("cannot open a socket for interface ioctls"));
    }
    // SAFETY: fd is ours; OwnedFd closes it.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: a zeroed ifreq is valid.
    let mut ifr: libc::ifreq = unsafe { core::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    Ok((fd, ifr))
}

/// The interface's MAC by `SIOCGIFHWADDR`.
fn read_mac(name: &str) -> Result<[u8; 6], DpError> {
    let (fd, mut ifr) = ifreq_socket(name)?;
    // SAFETY: SIOCGIFHWADDR fills the ifreq we pass.
    let rc = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            libc::SIOCGIFHWADDR as _,
            &mut ifr as *mut libc::ifreq,
        )
    };
    if rc < 0 {
        return Err(DpError::Io(IoError::NoSuchInterface));
    }
    // SAFETY: after SIOCGIFHWADDR the union holds a sockaddr.
    let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
    let mut m = [0u8; 6];
    for (d, s) in m.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    Ok(m)
}

/// `struct ethtool_channels` (linux/ethtool.h).
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// The interface's RX queues in use, by `ETHTOOL_GCHANNELS` (what
/// `ethtool -l` shows: separate RX plus combined channels). `None` when the
/// driver does not say; the AF_XDP bind then tells.
fn rx_queues(name: &str) -> Option<usize> {
    let (fd, mut ifr) = ifreq_socket(name).ok()?;
    let mut ch = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..EthtoolChannels::default()
    };
    ifr.ifr_ifru.ifru_data = (&mut ch as *mut EthtoolChannels).cast();
    // SAFETY: SIOCETHTOOL with ETHTOOL_GCHANNELS fills the
    // ethtool_channels that ifru_data points to, which outlives the call.
    let rc = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            SIOCETHTOOL as _,
            &mut ifr as *mut libc::ifreq,
        )
    };
    if rc < 0 {
        return None;
    }
    let n = ch.rx_count.saturating_add(ch.combined_count);
    (n > 0).then_some(n as usize)
}

/// `struct ethtool_drvinfo` (linux/ethtool.h), the part up to the driver.
#[repr(C)]
struct EthtoolDrvinfo {
    cmd: u32,
    driver: [u8; 32],
    rest: [u8; 160],
}

const ETHTOOL_GDRVINFO: u32 = 0x03;

/// The interface's driver name by `ETHTOOL_GDRVINFO` (`ethtool -i`), in the
/// calling thread's namespace.
fn driver(name: &str) -> Option<String> {
    let (fd, mut ifr) = ifreq_socket(name).ok()?;
    let mut di = EthtoolDrvinfo {
        cmd: ETHTOOL_GDRVINFO,
        driver: [0; 32],
        rest: [0; 160],
    };
    ifr.ifr_ifru.ifru_data = (&mut di as *mut EthtoolDrvinfo).cast();
    // SAFETY: SIOCETHTOOL with ETHTOOL_GDRVINFO fills the ethtool_drvinfo
    // (196 bytes, our struct's size) that ifru_data points to, which
    // outlives the call.
    let rc = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            SIOCETHTOOL as _,
            &mut ifr as *mut libc::ifreq,
        )
    };
    if rc < 0 {
        return None;
    }
    let end = di.driver.iter().position(|b| *b == 0).unwrap_or(32);
    Some(String::from_utf8_lossy(di.driver.get(..end)?).into_owned())
}

/// The number of RX queues each port is read on (AF_XDP modes; one per
/// port with AF_PACKET), checked against the cores, the driver's queues
/// and the hook (see [`Queues`]).
fn port_queues(cfg: &DataplaneConfig) -> Result<Vec<u32>, DpError> {
    let mut v = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        if cfg.mode == IoMode::AfPacket {
            if p.queues != Queues::PerCore {
                return Err(DpError::Config(QUEUES_AF_PACKET));
            }
            v.push(1);
            continue;
        }
        let hw = rx_queues(&p.name);
        let n = match p.queues {
            Queues::PerCore => cfg.cores as u32,
            Queues::Count(n) => n,
            Queues::All => hw.ok_or(DpError::QueuesUnknown(i))? as u32,
        };
        if n == 0 || n > 1024 {
            return Err(DpError::Config("an interface's queues must be in 1..=1024"));
        }
        if hw.is_some_and(|h| h < n as usize) {
            return Err(DpError::TooFewQueues(i));
        }
        if (n as usize) < cfg.cores {
            return Err(DpError::QueuesBelowCores {
                port: i,
                queues: n,
                cores: cfg.cores,
            });
        }
        if n > 1 && cfg.mode == IoMode::AfXdp && driver(&p.name).as_deref() == Some("veth") {
            return Err(DpError::Config(GENERIC_VETH_QUEUES));
        }
        v.push(n);
    }
    Ok(v)
}

/// Starts the dataplane: FIB thread fed by `feed`, and `cfg.cores`
/// workers. Returns once every worker has opened its queues.
pub fn start(cfg: &DataplaneConfig, feed: Receiver<Vec<Change>>) -> Result<Dataplane, DpError> {
    start_with_vrs(cfg, feed, Vec::new())
}

/// [`start`] with virtual routers: `cfg.vrs`, each VR's FIB fed by its
/// entry of `vr_feeds` (by name; the same batches as the main feed).
pub fn start_with_vrs(
    cfg: &DataplaneConfig,
    feed: Receiver<Vec<Change>>,
    vr_feeds: Vec<(String, Receiver<Vec<Change>>)>,
) -> Result<Dataplane, DpError> {
    if cfg.ports.is_empty() || cfg.ports.len() > 16 {
        return Err(DpError::Config("a dataplane needs 1..=16 ports"));
    }
    if cfg.cores == 0 || cfg.cores > 64 {
        return Err(DpError::Config("dataplane cores must be in 1..=64"));
    }
    cfg.loop_cfg.batch.validate()?;
    let frames = cfg.loop_cfg.xdp_frames;
    if !frames.is_power_of_two() || !(64..=1 << 20).contains(&frames) {
        return Err(DpError::Config(
            "dataplane frames must be a power of two in 64..=1048576",
        ));
    }
    if cfg.loop_cfg.qdisc && cfg.mode != IoMode::AfPacket {
        return Err(DpError::Config(
            "sending through the qdisc needs io = \"af_packet\" (AF_XDP bypasses it)",
        ));
    }
    if let Some(g) = &cfg.graph {
        if cfg.fabric.is_some() {
            return Err(DpError::Config(
                "an operator's graph with the cluster fabric is not supported yet",
            ));
        }
        if cfg.loop_cfg.engine == Engine::Fast {
            return Err(DpError::Config(
                "an operator's graph with engine = \"fast\" is not supported (put Ip4Forward in the graph)",
            ));
        }
        let devs: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
        check_graph(g, &devs).map_err(DpError::Graph)?;
    }
    balance::check(&cfg.balance, cfg.ports.len()).map_err(DpError::Config)?;
    if cfg.graph.is_some() && !cfg.balance.is_empty() {
        return Err(DpError::Config(BALANCE_WITH_GRAPH));
    }
    if cfg.ipsec.is_some()
        && (cfg.cores != 1
            || cfg.loop_cfg.engine == Engine::Fast
            || cfg.fabric.is_some()
            || cfg.graph.is_some())
    {
        return Err(DpError::Config(IPSEC_NOT_SUPPORTED));
    }
    if !cfg.vrs.is_empty()
        && (cfg.fabric.is_some()
            || cfg.graph.is_some()
            || cfg.ipsec.is_some()
            || !cfg.balance.is_empty()
            || cfg.loop_cfg.xdp_fastpath)
    {
        return Err(DpError::Config(VR_NOT_SUPPORTED));
    }
    // The fabric socket of each core (empty without a fabric).
    let mut fabric_dev: Vec<Option<(FabricDevice, FabricConfig, Arc<AtomicU64>)>> = Vec::new();
    let mut fabric_live = None;
    if let Some(f) = &cfg.fabric {
        if cfg.cores != 1 && f.cc.is_some() {
            return Err(DpError::Config(
                "cluster congestion control runs on one dataplane core (cores > 1: not supported yet)",
            ));
        }
        if cfg.loop_cfg.engine == Engine::Fast {
            return Err(DpError::Config(
                "the cluster fabric needs engine = \"graph\" (fast: not supported yet)",
            ));
        }
        if cfg.kernel.is_some() {
            return Err(DpError::Config(KERNEL_WITH_FABRIC));
        }
        // One socket per core, one SO_REUSEPORT group on the fabric
        // address: each core encapsulates, balances and packs on its own
        // (Direct VLB's R/N budget split over the cores).
        let mut devs = FabricDevice::bind_group("fabric", f.local, &f.peers, cfg.cores)?;
        for fd in &mut devs {
            // Bursts of datagrams arrive between two polls: ask for 8 MiB
            // (granted in full to root, else capped by net.core.rmem_max).
            fd.set_buffers(8 << 20);
        }
        let all = f
            .peers
            .iter()
            .map(|(id, _)| *id)
            .chain(std::iter::once(f.node))
            .fold(0u64, |m, id| m | (1u64 << (id & 63)));
        let mut per_core = f.clone();
        per_core.rate = (f.rate / cfg.cores as u64).max(1);
        let live = Arc::new(AtomicU64::new(all));
        fabric_live = Some(Arc::clone(&live));
        fabric_dev = devs
            .into_iter()
            .map(|d| Some((d, per_core.clone(), Arc::clone(&live))))
            .collect();
    }
    let mut info = Vec::new();
    for p in &cfg.ports {
        info.push(PortInfo {
            name: p.name.clone(),
            mac: read_mac(&p.name)?,
            v4: p
                .addrs
                .iter()
                .filter_map(|(a, l)| match a {
                    IpAddr::V4(a) => Some((*a, *l)),
                    IpAddr::V6(_) => None,
                })
                .collect::<Vec<(Ipv4Addr, u8)>>(),
        });
    }
    let specs: Vec<PortSpec> = cfg
        .ports
        .iter()
        .map(|p| PortSpec {
            name: p.name.clone(),
            addrs: p.addrs.clone(),
        })
        .collect();
    let mut adopted = (0, 0);
    let exporter = match &cfg.kernel {
        Some(k) => {
            let idx = cfg
                .ports
                .iter()
                .map(|p| io::sys::ifindex(&p.name))
                .collect::<Result<Vec<_>, _>>()?;
            let mut ex = kernel::Exporter::open(k.clone(), idx).map_err(DpError::Kernel)?;
            if k.adopt {
                let (v4, v6) = ex.adopt().map_err(DpError::Kernel)?;
                adopted = (v4 as u64, v6 as u64);
            }
            Some(ex)
        }
        None => None,
    };
    let mut fib = Fib::new(&specs, exporter.is_some());
    if let Some(f) = &cfg.fabric {
        // Each peer's fabric address is on-link on the fabric port (the
        // port after the external ones).
        // Routes through a peer resolve to (egress node, its port).
        let port = cfg.ports.len() as u16;
        for (id, a) in &f.peers {
            let ports = f
                .peer_ports
                .iter()
                .find(|(p, _)| p == id)
                .map_or(&[][..], |(_, v)| &v[..]);
            fib.add_peer(port, a.ip(), *id, ports);
        }
    }
    // The VRs' FIBs (threads of their own), each core's first VR set
    // (empty sets without VRs: the cores run the main graph until a
    // reload adds VRs). Not with the fabric, IPsec or the XDP fast path.
    let (mut vrc, mut vr_sets) = if !vrs_possible(cfg) {
        (None, Vec::new())
    } else {
        let (c, sets) = vr::VrControl::start(&cfg.vrs, vr_feeds, specs.clone(), cfg.cores)
            .map_err(DpError::Vr)?;
        (Some(c), sets)
    };
    let mut writer = left_right(FibTables::new());
    // Connected prefixes are in place before any packet is read.
    let first = fib.take_deltas();
    let _ = writer.publish(&first);
    let (fast, mut feed_fast) = match cfg.loop_cfg.xdp_fastpath {
        true => {
            let (maps, mut f, mut st) = fast_path(cfg, &info)?;
            st.add(&f.feed(&first));
            (Some((maps, st)), Some(f))
        }
        false => (None, None),
    };

    let nqueues = port_queues(cfg)?;
    let progs = match cfg.mode {
        IoMode::AfXdp | IoMode::AfXdpDriver => {
            let mode = if cfg.mode == IoMode::AfXdp {
                XdpMode::Skb
            } else {
                XdpMode::Driver
            };
            let mut v = Vec::new();
            for (i, p) in cfg.ports.iter().enumerate() {
                let q = nqueues.get(i).copied().unwrap_or(1);
                v.push(match (&fast, info.get(i)) {
                    (Some((maps, _)), Some(pi)) => {
                        XdpProgram::attach_fast(&p.name, mode, q, maps, pi.mac)?
                    }
                    _ => XdpProgram::attach(&p.name, mode, q)?,
                });
            }
            v
        }
        IoMode::AfPacket => Vec::new(),
    };

    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), IoError>>();
    let mut workers = Vec::new();
    let mut consumers: Vec<Consumer<Learned>> = Vec::new();
    let group_base = (std::process::id() as u16).wrapping_mul(31);
    let mut links = Vec::new();
    let mut cores = Vec::new();
    for core in 0..cfg.cores {
        let (p, c) = spsc::<Learned>(256);
        consumers.push(c);
        let (swap_tx, swap_rx) = mpsc::channel::<Swap>();
        let counters = Arc::new(Mutex::new(Vec::new()));
        let core_stats = Arc::new(core_stats::CoreStats::default());
        cores.push(Arc::clone(&core_stats));
        links.push((swap_tx, Arc::clone(&counters)));
        let job = Job {
            ports: info
                .iter()
                .zip(&cfg.ports)
                .map(|(i, p)| GraphPort {
                    mac: i.mac,
                    addrs: p.addrs.clone(),
                })
                .collect(),
            v4: writer.reader(),
            v6: writer.reader(),
            share: (writer.reader(), p),
            fabric: fabric_dev.get_mut(core).and_then(Option::take),
            graph: cfg.graph.clone(),
            link: WorkerLink {
                swaps: swap_rx,
                counters,
                core: Arc::clone(&core_stats),
            },
            ipsec: cfg.ipsec.clone(),
            balance: cfg.balance.clone(),
            vr: match vrc.as_mut() {
                Some(c) => Some(vr::VrJob {
                    vrs: std::mem::take(vr_sets.get_mut(core).ok_or(DpError::WorkerGone)?),
                    cmds: c.add_core(),
                    core: Arc::clone(&core_stats),
                }),
                None => None,
            },
        };
        let multi = cfg.cores > 1;
        let (stop, ready, progs, ports, mode, lc, nq, ncores) = (
            Arc::clone(&stop),
            ready_tx.clone(),
            progs.clone(),
            cfg.ports.clone(),
            cfg.mode,
            cfg.loop_cfg,
            nqueues.clone(),
            cfg.cores,
        );
        let h = std::thread::Builder::new()
            .name(format!("dp-core{core}"))
            .spawn(move || -> Result<WorkerCounters, IoError> {
                if mode == IoMode::AfPacket {
                    let socks = ports
                        .iter()
                        .enumerate()
                        .map(|(i, p)| {
                            let mut pc = PacketConfig::new(&p.name);
                            pc.qdisc_bypass = !lc.qdisc;
                            // Every core's socket on a port joins the
                            // port's group: the kernel's flow hash picks
                            // the core.
                            if multi {
                                pc.fanout = Some(Fanout {
                                    group: group_base.wrapping_add(i as u16),
                                    mode: FanoutMode::Hash,
                                });
                            }
                            let mut s = PacketSocket::open(&pc)?;
                            s.set_name(&p.name);
                            s.set_kn(lc.batch.kn);
                            Ok(s)
                        })
                        .collect::<Result<Vec<_>, _>>();
                    let _ = ready.send(socks.as_ref().map(|_| ()).map_err(|e| *e));
                    drop(ready);
                    serve(socks?, job, lc, &stop)
                } else {
                    // This core's queues of each port, as one device.
                    let socks = progs
                        .iter()
                        .zip(&ports)
                        .zip(&nq)
                        .map(|((pr, p), &n)| {
                            let mut qs = Vec::new();
                            for q in core_queues(core, ncores, n) {
                                let mut xc = XskConfig::new(q);
                                xc.frame_count = lc.xdp_frames;
                                xc.ring_size =
                                    (lc.xdp_frames / 2).max(xc.ring_size.min(lc.xdp_frames));
                                qs.push(XskSocket::open(pr, &xc)?);
                            }
                            let mut d = XskQueues::new(qs)?;
                            d.set_name(&p.name);
                            d.set_kn(lc.batch.kn);
                            Ok(d)
                        })
                        .collect::<Result<Vec<_>, _>>();
                    let _ = ready.send(socks.as_ref().map(|_| ()).map_err(|e| *e));
                    drop(ready);
                    serve(socks?, job, lc, &stop)
                }
            })
            .map_err(|_| DpError::Config("cannot spawn a dataplane thread"))?;
        workers.push(h);
    }
    drop(ready_tx);
    let mut failed = None;
    for _ in 0..cfg.cores {
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed = Some(DpError::Io(e)),
            Err(_) => failed = Some(DpError::WorkerGone),
        }
    }
    let live = Arc::new(Mutex::new(FibReport {
        kernel_adopted: adopted,
        fast: fast.as_ref().map(|(_, st)| *st).unwrap_or_default(),
        ..FibReport::default()
    }));
    let mut dp = Dataplane {
        links,
        cores,
        devs: cfg.ports.iter().map(|p| p.name.clone()).collect(),
        graph: Mutex::new(cfg.graph.clone()),
        fabric_live,
        stop: Arc::clone(&stop),
        workers,
        fib: None,
        live: Arc::clone(&live),
        fast: fast.map(|(m, _)| m),
        vr: vrc.map(Mutex::new),
        routes: None,
    };
    if let Some(e) = failed {
        dp.halt();
        return Err(e);
    }
    let fib_stop = Arc::clone(&stop);
    let (snap_tx, snap_rx) = mpsc::channel::<RoutesReply>();
    dp.routes = Some(MainRoutes(snap_tx));
    dp.fib = Some(
        std::thread::Builder::new()
            .name("dp-fib".into())
            .spawn(move || {
                fib_thread(
                    &mut fib,
                    &mut writer,
                    feed,
                    consumers,
                    &fib_stop,
                    exporter,
                    feed_fast.as_mut(),
                    &live,
                    Some(&snap_rx),
                )
            })
            .map_err(|_| DpError::Config("cannot spawn the FIB thread"))?,
    );
    Ok(dp)
}

/// The XDP fast path's maps for `cfg` (its ports in the DEVMAP by index)
/// and the feed that mirrors the FIB into them (with the own addresses
/// already written, and what that took).
fn fast_path(
    cfg: &DataplaneConfig,
    info: &[PortInfo],
) -> Result<(Arc<FastMaps>, FastFeed, ApplyStats), DpError> {
    if !matches!(cfg.mode, IoMode::AfXdp | IoMode::AfXdpDriver)
        || cfg.graph.is_some()
        || cfg.ipsec.is_some()
        || !cfg.balance.is_empty()
    {
        return Err(DpError::Config(FASTPATH_NOT_SUPPORTED));
    }
    let maps = Arc::new(FastMaps::create(FAST_ROUTES, cfg.ports.len() as u32)?);
    for (i, p) in cfg.ports.iter().enumerate() {
        maps.set_port(i as u32, io::sys::ifindex(&p.name)?)?;
    }
    let own: Vec<IpAddr> = cfg
        .ports
        .iter()
        .flat_map(|p| p.addrs.iter().map(|(a, _)| *a))
        .collect();
    let macs = info.iter().map(|p| p.mac).collect();
    let (feed, st) = FastFeed::new(Arc::clone(&maps), macs, &own);
    Ok((maps, feed, st))
}

/// The built-in graph the workers run for `cfg` (the interfaces' MACs
/// read from the system), as `tesserad --print-graph` prints it: where
/// an operator's graph (`[dataplane] graph`) starts from.
pub fn builtin_graph(cfg: &DataplaneConfig) -> Result<String, DpError> {
    let ports = cfg
        .ports
        .iter()
        .map(|p| {
            Ok(GraphPort {
                mac: read_mac(&p.name)?,
                addrs: p.addrs.clone(),
            })
        })
        .collect::<Result<Vec<_>, DpError>>()?;
    let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
    balance::check(&cfg.balance, cfg.ports.len()).map_err(DpError::Config)?;
    let mut text = graph_engine::graph_config_ext(
        &ports,
        &names,
        cfg.loop_cfg.engine,
        None,
        cfg.ipsec.as_ref(),
    );
    text.push_str(&balance::balance_config(&cfg.balance));
    Ok(text)
}

/// How long the FIB thread waits for a feed batch before looking at the
/// learned-neighbour rings again.
const FIB_TICK: Duration = Duration::from_millis(2);
/// Feed batches coalesced into one publication at most.
const COALESCE: usize = 64;

// The FIB thread's whole state, passed once at spawn.
#[allow(clippy::too_many_arguments)]
fn fib_thread(
    fib: &mut Fib,
    writer: &mut Writer<FibTables>,
    feed: Receiver<Vec<Change>>,
    mut learn: Vec<Consumer<Learned>>,
    stop: &AtomicBool,
    mut exporter: Option<kernel::Exporter>,
    mut fast: Option<&mut FastFeed>,
    live: &Mutex<FibReport>,
    snaps: Option<&Receiver<RoutesReply>>,
) -> FibReport {
    let mut r = *live.lock().unwrap_or_else(PoisonError::into_inner);
    let mut deltas = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let mut took = 0;
        // The sender's first full sync after a restart is complete.
        let mut synced = false;
        // A copy of the routes for a VR added by a reload: after every
        // batch sent before the request (its sender, the VR fan-out,
        // waits for the answer meanwhile), so that the VR then follows
        // the same batches from there.
        while let Some(reply) = snaps.and_then(|s| s.try_recv().ok()) {
            while let Ok(b) = feed.try_recv() {
                synced |= b.is_empty();
                fib.apply(&b);
                took += 1;
            }
            let _ = reply.send(fib.routes());
        }
        if !r.feed_closed {
            match feed.recv_timeout(FIB_TICK) {
                Ok(b) => {
                    synced |= b.is_empty();
                    fib.apply(&b);
                    took += 1;
                    while took < COALESCE {
                        let Ok(b) = feed.try_recv() else { break };
                        synced |= b.is_empty();
                        fib.apply(&b);
                        took += 1;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => r.feed_closed = true,
            }
        } else {
            std::thread::sleep(FIB_TICK);
        }
        for c in &mut learn {
            while let Some(l) = c.pop() {
                fib.learn(l.ip, l.mac);
                r.learned += 1;
            }
            c.release();
        }
        fib.drain_deltas_into(&mut deltas);
        if !deltas.is_empty() {
            let _ = writer.publish(&deltas);
            if let Some(f) = fast.as_deref_mut() {
                r.fast.add(&f.feed(&deltas));
            }
            r.publishes += 1;
            r.deltas += deltas.len() as u64;
            deltas.clear();
        }
        if let Some(k) = exporter.as_mut() {
            let ex = fib.take_exported();
            if !ex.is_empty() {
                let (ok, err) = k.apply(&ex);
                r.kernel_ok += ok;
                r.kernel_err += err;
            }
            if synced && k.stale() > 0 {
                let (ok, err) = k.sweep();
                r.kernel_swept += ok;
                r.kernel_err += err;
            }
        }
        r.stats = fib.stats();
        if took > 0 || r.learned > 0 || synced {
            *live.lock().unwrap_or_else(PoisonError::into_inner) = r;
        }
    }
    if let Some(k) = exporter.as_mut() {
        k.withdraw_all();
    }
    r
}

impl Dataplane {
    /// Marks cluster node `id` live or dead (BFD up or down): the fabric
    /// elements see it at their next batch; a dead node leaves the VLB
    /// set and the direct targets, and frames for it are dropped
    /// (`unreachable`) until routing withdraws its routes. `false` without
    /// a fabric or for an id above 63.
    pub fn set_node_live(&self, id: u16, live: bool) -> bool {
        let (Some(m), true) = (&self.fabric_live, id < 64) else {
            return false;
        };
        if live {
            m.fetch_or(1 << id, Ordering::Relaxed);
        } else {
            m.fetch_and(!(1 << id), Ordering::Relaxed);
        }
        true
    }

    /// Whether cluster node `id` is in the live set (`None` without a
    /// fabric or for an id above 63).
    pub fn node_live(&self, id: u16) -> Option<bool> {
        let m = self.fabric_live.as_ref().filter(|_| id < 64)?;
        Some(m.load(Ordering::Relaxed) & (1 << id) != 0)
    }

    /// Every element's counters, summed over the cores by element name
    /// (each core runs the same graph), in the graph's order. Refreshed by
    /// each worker every `graph_engine::PUBLISH_ROUNDS` busy polls and
    /// whenever it goes idle.
    pub fn elements(&self) -> Vec<ElementCounters> {
        let mut all: Vec<ElementCounters> = Vec::new();
        for (_, c) in &self.links {
            let c = c.lock().unwrap_or_else(PoisonError::into_inner);
            for e in c.iter() {
                match all.iter_mut().find(|x| x.name == e.name) {
                    Some(x) => x.add(e),
                    None => all.push(e.clone()),
                }
            }
        }
        all
    }

    /// Each core's packets received and sent and drops by reason, core 0
    /// first (stored by the cores per batch; see [`core_stats`]).
    pub fn core_stats(&self) -> Vec<core_stats::CoreSnapshot> {
        self.cores.iter().map(|c| c.snapshot()).collect()
    }

    /// The operator's graph running now (`None`: the built-in one).
    pub fn graph(&self) -> Option<GraphText> {
        self.graph
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Checks the operator's graph `g` and, when it is valid, has every
    /// core replace its graph with it, on the same devices and the same
    /// live FIB (nothing is rebuilt or withdrawn; packets queued inside
    /// the old graph are dropped with it). An invalid graph changes
    /// nothing: the error starts with `FILE:LINE:COL`. Each core answers
    /// within `wait` or the call reports it.
    pub fn replace_graph(&self, g: &GraphText, wait: Duration) -> Result<(), String> {
        if self.fabric_live.is_some() {
            return Err(
                "replacing the graph with the cluster fabric is not supported yet (an \
                        operator's graph, or a changed [[dataplane.port_group]]: restart tesserad)"
                    .into(),
            );
        }
        let devs: Vec<&str> = self.devs.iter().map(String::as_str).collect();
        check_graph(g, &devs)?;
        let mut answers = Vec::new();
        for (core, (tx, _)) in self.links.iter().enumerate() {
            let (rtx, rrx) = mpsc::channel();
            let sw = Swap {
                graph: g.clone(),
                reply: rtx,
            };
            if tx.send(sw).is_err() {
                return Err(format!("dataplane core {core} has stopped"));
            }
            answers.push(rrx);
        }
        let mut errs = Vec::new();
        for (core, r) in answers.iter().enumerate() {
            match r.recv_timeout(wait) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errs.push(format!("core {core}: {e}")),
                Err(_) => errs.push(format!("core {core}: no answer within {wait:?}")),
            }
        }
        if errs.len() < self.links.len() {
            // At least one core runs it now.
            *self.graph.lock().unwrap_or_else(PoisonError::into_inner) = Some(g.clone());
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs.join("; "))
        }
    }

    /// The XDP fast path's per-CPU counters summed (`None` when it is
    /// off, or the kernel refused the read).
    pub fn fast_counters(&self) -> Option<FastCounters> {
        self.fast.as_ref()?.counters().ok()
    }

    /// Whether the cores run virtual routers now.
    pub fn runs_vrs(&self) -> bool {
        !self.vrs().is_empty()
    }

    /// The virtual routers running now, in configuration order.
    pub fn vrs(&self) -> Vec<VrDef> {
        self.vr.as_ref().map_or_else(Vec::new, |v| {
            v.lock().unwrap_or_else(PoisonError::into_inner).defs()
        })
    }

    /// Each virtual router's counters, summed over the cores (stored by
    /// the cores after each scheduling decision; see [`vr::VrCoreStats`]).
    pub fn vr_stats(&self) -> Vec<VrSnapshot> {
        self.vr.as_ref().map_or_else(Vec::new, |v| {
            v.lock().unwrap_or_else(PoisonError::into_inner).snapshot()
        })
    }

    /// Replaces the virtual routers by `defs`: a VR named in `feeds` gets
    /// a new FIB fed by its channel (a new VR, or a VR whose source
    /// changed; its counters start again), the other VRs keep their FIBs
    /// and counters, and the main FIB is never touched. Each core rebuilds
    /// its VR graphs and scheduler (match and share changes) and answers
    /// within `wait`. The first VRs take the cores' devices from the main
    /// graph, and an empty `defs` gives them back, at a batch boundary
    /// (see `switch.rs`). Errors, with nothing changed: a dataplane that
    /// cannot run VRs ([`vrs_possible`], [`VR_NOT_SUPPORTED`]), an invalid
    /// set.
    pub fn set_vrs(
        &self,
        defs: &[VrDef],
        feeds: Vec<(String, Receiver<Vec<Change>>)>,
        wait: Duration,
    ) -> Result<(), String> {
        let Some(v) = &self.vr else {
            return Err(VR_NOT_SUPPORTED.into());
        };
        v.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set(defs, feeds, wait)
    }

    /// A handle on the main FIB's routes ([`MainRoutes::get`]).
    pub fn main_routes(&self) -> Option<MainRoutes> {
        self.routes.clone()
    }

    /// The FIB thread's counters now.
    pub fn fib_report(&self) -> FibReport {
        *self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn halt(&mut self) -> Report {
        self.stop.store(true, Ordering::Relaxed);
        let mut rep = Report::default();
        for h in self.workers.drain(..) {
            match h.join() {
                Ok(Ok(c)) => {
                    rep.total.add(&c);
                    rep.per_core.push(c);
                }
                Ok(Err(e)) => rep.errors.push(e),
                Err(_) => rep.errors.push(IoError::Config("worker panicked")),
            }
        }
        if let Some(f) = self.fib.take() {
            if let Ok(r) = f.join() {
                rep.fib = r;
            }
        }
        if let Some(v) = &self.vr {
            v.lock().unwrap_or_else(PoisonError::into_inner).halt();
        }
        rep
    }

    /// Stops every thread and returns the counters.
    pub fn stop(mut self) -> Report {
        self.halt()
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loopback exists in every namespace; it has a MAC of zeros and no
    /// ethtool channels. A name that does not exist is an error, not a
    /// guess.
    #[test]
    fn interface_ioctls_read_the_callers_namespace() {
        assert_eq!(read_mac("lo"), Ok([0; 6]));
        assert_eq!(
            read_mac("no-such-if0"),
            Err(DpError::Io(IoError::NoSuchInterface))
        );
        assert_eq!(rx_queues("no-such-if0"), None);
        assert!(read_mac("").is_err());
        assert!(read_mac("a-name-longer-than-ifnamsiz").is_err());
        assert_eq!(driver("no-such-if0"), None);
    }

    /// `PortDev` passes a port's per-queue counters through (the cluster
    /// fabric's cores publish them like the others).
    #[test]
    fn port_dev_forwards_queue_stats() {
        struct Q;
        impl pkt::Device for Q {
            type Error = IoError;
            fn name(&self) -> &str {
                "q"
            }
            fn rx_burst(&mut self, _: &pkt::Pool, _: &mut pkt::Batch, _: usize) -> usize {
                0
            }
            fn tx_burst(&mut self, _: &mut pkt::Batch) -> usize {
                0
            }
            fn stats(&self) -> pkt::DevStats {
                pkt::DevStats::default()
            }
            fn queue_stats(&self, out: &mut Vec<pkt::QueueStats>) {
                out.push(pkt::QueueStats {
                    queue: 3,
                    ..pkt::QueueStats::default()
                });
            }
        }
        let mut v = Vec::new();
        pkt::Device::queue_stats(&PortDev::Port(Q), &mut v);
        assert_eq!(v.iter().map(|q| q.queue).collect::<Vec<_>>(), [3]);
    }

    /// Every queue is read by exactly one core, core `c` from queue `c`
    /// on, `cores` apart.
    #[test]
    fn core_queues_cover_every_queue_once() {
        let q = |c, n, k| core_queues(c, n, k).collect::<Vec<u32>>();
        assert_eq!(q(0, 2, 4), [0, 2]);
        assert_eq!(q(1, 2, 4), [1, 3]);
        assert_eq!(q(0, 1, 3), [0, 1, 2]);
        assert_eq!(q(1, 2, 3), [1]);
        for cores in 1..=8usize {
            for queues in cores as u32..=20 {
                let mut all: Vec<u32> = (0..cores).flat_map(|c| q(c, cores, queues)).collect();
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..queues).collect::<Vec<_>>(),
                    "{cores} cores, {queues}"
                );
                assert!((0..cores).all(|c| q(c, cores, queues).first() == Some(&(c as u32))));
            }
        }
    }

    /// AF_XDP frame counts the UMEM cannot take are refused before any
    /// interface is touched.
    #[test]
    fn frames_must_be_a_power_of_two() {
        for frames in [0, 1000, 32, 1 << 21] {
            let cfg = DataplaneConfig {
                ports: vec![PortConfig {
                    name: "lo".into(),
                    addrs: Vec::new(),
                    queues: Queues::PerCore,
                }],
                mode: IoMode::AfXdp,
                cores: 1,
                loop_cfg: LoopConfig {
                    xdp_frames: frames,
                    ..LoopConfig::default()
                },
                kernel: None,
                fabric: None,
                graph: None,
                ipsec: None,
                balance: Vec::new(),
                vrs: Vec::new(),
            };
            let (_t, r) = mpsc::channel();
            assert!(
                matches!(start(&cfg, r), Err(DpError::Config(_))),
                "{frames} frames"
            );
        }
    }
}
