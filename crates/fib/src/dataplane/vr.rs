//! Virtual routers in the dataplane (`[[dataplane.vr]]`, seed 002 slides
//! 30-38): each VR has its own FIB ([`FibTables`] behind its own FIB
//! thread and feed) and, on every core, its own instance of the built-in
//! graph; per core, one [`VrScheduler`] runs the VRs' graphs with their
//! tickets, granularity G, batch threshold B_i and delay threshold D_i.
//!
//! ```text
//! port queues (this core) --rx--> Demux: graph::VrClassifier
//!     -> per (VR, port) queue (256 frames; overflow: `queue_full`, the VR's)
//!     -> VrPort(VR, port) = the VR graph's FromDevice / ToDevice
//!     -> the VR's built-in graph, its FIB, its neighbours
//!     -> VrPort tx -> the real port queue
//! frames no VR claims: dropped, `no_vr` in the core's drops
//! ```
//!
//! The real devices belong to the core's demultiplexer; a VR's graph sees
//! one [`VrPort`] per port with the port's name, so the built-in graph
//! text is the same for every VR. Before each scheduling decision the
//! demultiplexer reads every port once (one burst), when a VR that may
//! take its frames has an empty queue for it (under ingress rules, its
//! owner's: an overloaded VR's backlog waits in its port's receive
//! ring), and spreads the frames over the VRs' queues; the scheduler then
//! receives only for the VRs whose queues hold frames (a ready list, not
//! a poll of every port for every VR: `VrScheduler::step_with`). In a
//! run, the running VR's `FromDevice` reading an empty queue of a port it
//! owns (or that no VR owns) reads that port again, so a VR's reads never
//! spend its time on another VR's frames. Transmit rings are kicked once
//! per few decisions (`KICK_DECISIONS`, `KICK_NS`, and when idle),
//! not after every run (the device kicks every `kn` frames by itself).
//! Frames are moved, never copied; they come from the demultiplexer's
//! pool (a packet carries its pool) and nothing is allocated per packet.
//!
//! Matches (one kind per set: [`graph::vr_class`] has the precedence
//! table): by ingress port, by 802.1Q VLAN id, or by destination prefix.
//! Under VLAN rules the demultiplexer pops the tag before the VR's graph
//! (which runs untagged, as the built-in graph does) and [`VrPort`]
//! pushes the VR's tag (priority 0) on every frame the VR sends, on every
//! port: each VLAN is a layer-2 domain of its own, ARP and ND included,
//! so two VRs may use the same addresses in their VLANs. Under prefix
//! rules frames are not changed.
//!
//! Neighbours: each VR's graph has its own EtherRewrites; what they learn
//! goes to the VR's FIB thread on a ring per core, as for the main graph.
//! Under ingress and prefix rules a VR sends out of ports (and to
//! addresses) it is not matched by, so the answers to its ARP requests
//! and Neighbor Solicitations arrive where another VR (or none) is
//! matched: ARP replies and Neighbor Advertisements go to every VR (copied
//! into the demultiplexer's pool). Questions go to the matched VR; under
//! prefix rules that is the VR whose prefix holds the target address, or
//! else the first VR (the port addresses, which every VR shares, answer
//! once). Under VLAN rules the VLAN's VR gets its own answers.
//!
//! Frames no VR claims (a port no ingress rule names, an untagged frame or
//! an unknown VLAN id under VLAN rules, a destination outside every
//! prefix) are dropped (`no_vr`): with VRs, the main FIB is kept and fed
//! but no graph forwards by it.
//!
//! Limits (not supported yet, refused by tesserad): an operator's graph,
//! IPsec, NICBalance groups and the cluster fabric together with VRs.
//!
//! Reload ([`super::Dataplane::set_vrs`]): each core rebuilds its VR
//! graphs and scheduler at once (packets queued inside the old graphs are
//! dropped with them; ARP caches are re-learned from the VRs' published
//! neighbours); the FIBs of VRs that stay and the main FIB are kept. The
//! first VRs of a reload take each core's devices from its main graph,
//! and removing the last VR gives them back (`switch.rs`): the main graph
//! and the main FIB live on meanwhile, idle and fed.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use elements::AnyElement;
/// Where the demultiplexer sends a frame (re-exported from
/// [`graph::vr_class`]).
pub use graph::vr_class::Target;
pub use graph::vr_class::VrClassifier;
/// A VR's match (re-exported: what [`VrDef::rules`] holds).
pub use graph::vr_class::VrRule;
use graph::vr_class::{Neigh, RuleKind};
use graph::{Charge, Runner, VrConfig, VrScheduler};
use io::rss::{spsc, Producer};
use io::IoError;
use lpm::publish::{left_right, ReadHandle};
use pkt::{Batch, DevStats, Device, Pool};

use super::common::{Engine, GraphText, Learned, LoopConfig};
use super::core_stats::{CorePublisher, CoreStats};
use super::graph_engine::{
    attach_share, build_graph, graph_config_ext, GraphPort, LiveTable, Shared, Tables,
};
use super::FibReport;
use crate::resolve::{Change, Fib, PortSpec};
use crate::table::FibTables;

/// Frames one (VR, port) queue holds between the demultiplexer and the
/// VR's graph: a VR that is not scheduled for that long loses the rest
/// (`queue_full`), as with a receive ring of its own.
pub const VR_QUEUE: usize = 256;

/// Packet buffers of a core's demultiplexer (the frames in the VRs'
/// queues and graphs).
const DEMUX_BUFFERS: usize = 8192;

/// One virtual router as the dataplane runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VrDef {
    /// The VR's name (`[[dataplane.vr]] name`).
    pub name: String,
    /// What it takes: `VrRule::Ingress(port index)`, one `VrRule::Vlan`,
    /// or `VrRule::Prefix4`/`Prefix6` rules (every VR of a set the same
    /// kind, see [`check`]).
    pub rules: Vec<VrRule>,
    /// CPU share relative to the other VRs.
    pub tickets: u32,
    /// B_i: packets before the VR is eligible.
    pub batch: u16,
    /// D_i in microseconds.
    pub delay_us: u32,
    /// G in microseconds (the same in every VR: one scheduler per core).
    pub granularity_us: u32,
}

/// Checks `vrs` against the dataplane's `ports` and the other settings:
/// ingress rules on existing ports, VLAN ids 1..=4094 and one per VR, one
/// G, unique names, rules of one kind and disjoint.
pub fn check(vrs: &[VrDef], ports: usize) -> Result<(), String> {
    let mut rules = Vec::new();
    for (i, v) in vrs.iter().enumerate() {
        if vrs[..i].iter().any(|o| o.name == v.name) {
            return Err(format!("VR {:?} is defined twice", v.name));
        }
        if v.granularity_us != vrs[0].granularity_us {
            return Err(format!(
                "VR {:?}: granularity differs between VRs (one scheduler per core)",
                v.name
            ));
        }
        if v.rules.is_empty() {
            return Err(format!("VR {:?} matches nothing", v.name));
        }
        let vlans = v
            .rules
            .iter()
            .filter(|r| matches!(r, VrRule::Vlan(_)))
            .count();
        if vlans > 1 {
            // The tag its frames leave with must be one.
            return Err(format!("VR {:?}: more than one VLAN", v.name));
        }
        for r in &v.rules {
            match *r {
                VrRule::Ingress(p) if usize::from(p) >= ports => {
                    return Err(format!("VR {:?}: no dataplane port {p}", v.name));
                }
                VrRule::Vlan(id) if !(1..=4094).contains(&id) => {
                    return Err(format!("VR {:?}: VLAN {id} is not in 1..=4094", v.name));
                }
                _ => {}
            }
            rules.push((*r, i));
        }
    }
    VrClassifier::new(rules).map_err(|e| e.to_string())?;
    Ok(())
}

/// One VR's counters on one core, written by that core only (relaxed
/// stores after each scheduling decision; no lock on the packet path).
#[derive(Default)]
pub struct VrCoreStats {
    /// Packets in (received by the VR's graph) and out (sent), and its
    /// graph's drops by reason.
    pub graph: Arc<CoreStats>,
    queue_full: AtomicU64,
    charged_ns: AtomicU64,
    runs: AtomicU64,
}

/// One VR's counters, summed over the cores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VrSnapshot {
    pub name: String,
    pub tickets: u32,
    /// Packets the VR's graphs received and sent.
    pub rx: u64,
    pub tx: u64,
    /// Drops by reason: the graphs' reasons, then `queue_full` (frames
    /// classified to the VR while its queue was full).
    pub drops: Vec<(String, u64)>,
    /// CPU time charged to the VR by the schedulers (thread CPU time, ns):
    /// its share used.
    pub charged_ns: u64,
    /// Times a scheduler ran it.
    pub runs: u64,
    /// Routes in its FIB (known, installed).
    pub routes: u64,
    pub installed: u64,
}

/// What a core needs to read and feed a VR's FIB.
pub(super) struct VrHandles {
    v4: ReadHandle<FibTables>,
    v6: ReadHandle<FibTables>,
    share: ReadHandle<FibTables>,
    learn: Producer<Learned>,
}

/// One VR of a core's set: `fresh` handles for a new FIB, or `None` to
/// keep the core's current one of that name.
pub(super) struct CoreVr {
    def: VrDef,
    stats: Arc<VrCoreStats>,
    fresh: Option<VrHandles>,
}

/// A new VR set for a core, and where its answer goes.
pub(super) struct VrCmd {
    pub(super) vrs: Vec<CoreVr>,
    pub(super) reply: mpsc::Sender<Result<(), String>>,
}

/// What a worker thread that can run VRs starts with: its first VR set
/// (empty: the main graph runs), its command channel, its counters.
pub(super) struct VrJob {
    pub(super) vrs: Vec<CoreVr>,
    pub(super) cmds: mpsc::Receiver<VrCmd>,
    pub(super) core: Arc<CoreStats>,
}

/// A core's demultiplexer: the real devices, the classifier and the
/// per (VR, port) queues.
struct Demux<D> {
    devs: Vec<D>,
    pool: Pool,
    class: VrClassifier,
    /// `queues[vr][port]`.
    queues: Vec<Vec<Batch>>,
    tmp: Batch,
    burst: usize,
    rx: u64,
    tx: u64,
    no_vr: u64,
    /// Per VR (index in the current set).
    queue_full: Vec<u64>,
    /// VLAN rules: pop the tag of received frames before the VR's graph.
    pop: bool,
    /// Per VR: the VLAN id its frames leave with (VLAN rules).
    tags: Vec<Option<u16>>,
    /// Frames a VR sent that had no room for their VLAN tag (dropped).
    no_room: u64,
    /// Per port: the VR whose ingress rule takes it (`None`: no VR, or a
    /// rule kind that is not by port). A VR's reads fill a port's queues
    /// only when the port is its own or no VR's, so that CPU time a VR
    /// is charged is never spent on another VR's frames (an overloaded
    /// VR's backlog stays in its port's receive ring).
    owner: Vec<Option<usize>>,
    /// Set during the scheduler's receive pass ([`Demux::pass`] has read
    /// the ports): a VR's reads take only what its queues hold.
    scanning: bool,
    /// Ports with frames handed to their transmit ring and not kicked
    /// yet (bit per port): kicked once per few decisions
    /// ([`VrWorker::kick_due`]), not after every run.
    dirty: u32,
}

impl<D: Device> Demux<D> {
    /// Reads one burst from `port` and spreads it over the VRs' queues.
    fn fill(&mut self, port: usize) {
        let Some(dev) = self.devs.get_mut(port) else {
            return;
        };
        let n = dev.rx_burst(&self.pool, &mut self.tmp, self.burst);
        self.rx += n as u64;
        let p16 = port as u16;
        let vrs = self.queues.len();
        for mut p in self.tmp.drain() {
            let to = target(&self.class, p.data(), p16);
            if to == Target::Every {
                // Any VR may have asked (a VR sends out of ports it does
                // not own): each gets it, copied into a buffer of the
                // pool (no heap allocation).
                for vr in 1..vrs {
                    let Some(c) = self.pool.alloc_from(p.data()) else {
                        continue;
                    };
                    if let Some(q) = self.queues.get_mut(vr).and_then(|q| q.get_mut(port)) {
                        if q.push(c).is_err() {
                            if let Some(n) = self.queue_full.get_mut(vr) {
                                *n += 1;
                            }
                        }
                    }
                }
                if let Some(q) = self.queues.get_mut(0).and_then(|q| q.get_mut(port)) {
                    if q.push(p).is_err() {
                        if let Some(n) = self.queue_full.get_mut(0) {
                            *n += 1;
                        }
                    }
                }
                continue;
            }
            let Target::One(vr) = to else {
                self.no_vr += 1;
                continue;
            };
            if self.pop {
                // Classified by its tag, so it has one.
                pop_tag(&mut p);
            }
            let q = self.queues.get_mut(vr).and_then(|q| q.get_mut(port));
            match q.map(|q| q.push(p)) {
                Some(Ok(())) => {}
                _ => {
                    if let Some(c) = self.queue_full.get_mut(vr) {
                        *c += 1;
                    }
                }
            }
        }
    }

    fn pending(&self) -> bool {
        self.queues.iter().flatten().any(|q| !q.is_empty())
    }

    /// Before a scheduling decision: reads each port once, when a VR that
    /// may take its frames has an empty queue for it (its owner's, under
    /// ingress rules: an overloaded VR's backlog stays in its port's
    /// receive ring), so that the decision receives only for the VRs
    /// whose queues hold frames ([`Demux::ready`]) instead of polling
    /// every port for every VR.
    fn pass(&mut self) {
        for port in 0..self.devs.len() {
            let empty = |q: &Vec<Batch>| q.get(port).is_some_and(Batch::is_empty);
            let read = match self.owner.get(port).copied().flatten() {
                Some(o) => self.queues.get(o).is_some_and(empty),
                None => self.queues.iter().any(empty),
            };
            if read {
                self.fill(port);
            }
        }
    }

    /// Whether VR `vr`'s queues hold frames.
    fn ready(&self, vr: usize) -> bool {
        self.queues
            .get(vr)
            .is_some_and(|q| q.iter().any(|b| !b.is_empty()))
    }

    /// Kicks the transmit side of every port sent on since the last kick.
    fn kick(&mut self) {
        let dirty = std::mem::take(&mut self.dirty);
        if dirty == 0 {
            return;
        }
        for (p, dev) in self.devs.iter_mut().enumerate() {
            if p < 32 && dirty & (1 << p) != 0 {
                dev.flush();
            }
        }
    }
}

/// The demultiplexer's decision for `frame` received on `port`
/// ([`VrClassifier::target`]: the precedence table of
/// [`graph::vr_class`]), on untrusted input (fuzz target `vr_demux`):
/// never panics.
pub fn target(class: &VrClassifier, frame: &[u8], port: u16) -> Target {
    class.target(frame, port)
}

/// Whether `f` answers a neighbour question: an ARP reply, or an IPv6
/// Neighbor Advertisement (ICMPv6 right after the fixed header; untagged
/// or under one tag). Short or other frames: false.
pub fn neigh_answer(f: &[u8]) -> bool {
    graph::vr_class::neigh(f) == Some(Neigh::Answer)
}

/// Takes the 802.1Q tag out of `p` (which has one: at least 18 bytes, a
/// tag at 12): the MAC addresses move 4 bytes on.
fn pop_tag(p: &mut pkt::Packet) {
    if p.len() < 18 {
        return;
    }
    p.data_mut().copy_within(0..12, 4);
    let _ = p.pull_front(4);
}

/// Puts an 802.1Q tag with VLAN id `id` (priority 0) after `p`'s MAC
/// addresses, in its headroom or else its tailroom; false when there is
/// room in neither (or `p` is shorter than an Ethernet header).
fn push_tag(p: &mut pkt::Packet, id: u16) -> bool {
    let len = p.len();
    if len < 14 {
        return false;
    }
    let tag = {
        let t = (id & 0x0fff).to_be_bytes();
        [0x81, 0x00, t[0], t[1]]
    };
    if p.push_front(4).is_ok() {
        let d = p.data_mut();
        d.copy_within(4..16, 0);
        d[12..16].copy_from_slice(&tag);
        return true;
    }
    if p.set_len(len + 4).is_ok() {
        let d = p.data_mut();
        d.copy_within(12..len, 16);
        d[12..16].copy_from_slice(&tag);
        return true;
    }
    false
}

/// Port `port` as VR `vr`'s graph sees it: frames the demultiplexer gave
/// the VR, and the real port's transmit side.
pub struct VrPort<D> {
    name: String,
    vr: usize,
    port: usize,
    demux: Rc<RefCell<Demux<D>>>,
    stats: DevStats,
}

impl<D: Device<Error = IoError>> Device for VrPort<D> {
    type Error = IoError;
    fn name(&self) -> &str {
        &self.name
    }
    fn rx_burst(&mut self, _pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let mut d = self.demux.borrow_mut();
        let mine = d
            .owner
            .get(self.port)
            .copied()
            .flatten()
            .is_none_or(|o| o == self.vr);
        // In the receive pass the ports were read already (`Demux::pass`);
        // in a run, the running VR reads on.
        if mine
            && !d.scanning
            && d.queues
                .get(self.vr)
                .and_then(|q| q.get(self.port))
                .is_some_and(Batch::is_empty)
        {
            d.fill(self.port);
        }
        let Some(q) = d.queues.get_mut(self.vr).and_then(|q| q.get_mut(self.port)) else {
            return 0;
        };
        let n = if max >= batch.room() {
            batch.take_from(q)
        } else {
            let mut n = 0;
            for p in q.drain_front(max.min(batch.room())) {
                if batch.push(p).is_ok() {
                    n += 1;
                }
            }
            n
        };
        self.stats.rx += n as u64;
        n
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        let mut d = self.demux.borrow_mut();
        let tag = d.tags.get(self.vr).copied().flatten();
        if let Some(id) = tag {
            // The VR's VLAN on every frame it sends; a frame with no room
            // for the tag is dropped (counted), never sent untagged into
            // another layer-2 domain (a rare path: buffers keep headroom).
            let mut failed = 0;
            for p in batch.iter_mut() {
                if !push_tag(p, id) {
                    // Marked by length 0, taken out below.
                    p.truncate(0);
                    failed += 1;
                }
            }
            if failed > 0 {
                batch.retain(|p| !p.is_empty());
                d.no_room += failed;
            }
        }
        let Some(dev) = d.devs.get_mut(self.port) else {
            return 0;
        };
        let n = dev.tx_burst(batch);
        if tag.is_some() {
            // Frames the port had no room for stay for the next call,
            // which tags them again: untag them now.
            for p in batch.iter_mut() {
                pop_tag(p);
            }
        }
        d.tx += n as u64;
        self.stats.tx += n as u64;
        n
    }
    fn flush(&mut self) {
        // The device kicks every `kn` frames itself; the rest goes with
        // the worker's next kick (a few decisions at most).
        if self.port < 32 {
            self.demux.borrow_mut().dirty |= 1 << self.port;
        }
    }
    fn stats(&self) -> DevStats {
        self.stats
    }
    fn last_error(&self) -> Option<IoError> {
        self.demux
            .borrow()
            .devs
            .get(self.port)
            .and_then(Device::last_error)
    }
}

/// One VR on a core.
struct Slot {
    name: String,
    tables: Tables,
    shared: Rc<RefCell<Shared>>,
    stats: Arc<VrCoreStats>,
    publisher: CorePublisher,
    /// Totals of the graphs and schedulers this slot outlived.
    base: [u64; 5],
}

type Sched<D> = VrScheduler<AnyElement, VrPort<D>>;

/// One core running virtual routers.
pub(super) struct VrWorker<D: Device<Error = IoError>> {
    demux: Rc<RefCell<Demux<D>>>,
    sched: Sched<D>,
    slots: Vec<Slot>,
    names: Vec<String>,
    text: GraphText,
    ports: usize,
    burst: usize,
    core: Arc<CoreStats>,
    /// Added to the demultiplexer's frames in and out in the core's
    /// counters: what the core moved before (the main graph, other VR
    /// sets), so that they only grow.
    core_base: (u64, u64),
    /// Scheduling decisions that ran a VR since the last drops store.
    busy: u64,
    /// The demultiplexer's frames received at the last idle publication.
    seen_rx: u64,
    /// Decisions, and nanoseconds charged to runs, since the last
    /// transmit kick.
    unkicked: (u32, u64),
}

/// Readings of the scheduler's clock per anchor on the thread's CPU
/// clock: a decision reads the clock at least twice, so one
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` per 128 or more decisions
/// (and one after every gap of `base::ThreadCpuClock::GAP_NS`, where the
/// thread may have been off its CPU). With batching off, anchoring every
/// 32 readings was 3.4 % of the core (docs/BENCHMARKS.md, "Issue 19:
/// virtual routers, batching off at the seed's efficiency").
const CLOCK_SYNC_EVERY: u32 = 256;

/// The VR scheduler's clock: this thread's CPU time, estimated by the
/// cycle counter between anchors on the CPU clock
/// ([`base::ThreadCpuClock`]): time another process takes from a shared
/// core is charged to no VR, and most decisions make no system call.
fn sched_clock() -> graph::Clock {
    let c = base::ThreadCpuClock::new(CLOCK_SYNC_EVERY);
    Box::new(move || c.now_ns())
}

/// A transmit kick (a `sendto` with AF_XDP and AF_PACKET) at least every
/// this many decisions that ran a VR...
const KICK_DECISIONS: u32 = 8;
/// ... or once the runs since the last one were charged this long, and at
/// every idle decision: a frame waits at most about that long in its
/// transmit ring (the device kicks every `kn` frames by itself).
const KICK_NS: u64 = 20_000;

/// Scheduling decisions between two looks at the core's commands (a
/// channel read each; also at every idle decision).
const CMD_EVERY: u64 = 64;

/// Busy decisions between two stores of the VRs' counters (relaxed
/// stores for every VR and the core; every decision was 1 % of the core
/// with batching off): readers see them at most this many decisions
/// late, and at once when the core goes idle. A divisor of
/// `core_stats::DROPS_EVERY`, so the drops are stored as often as before
/// in busy decisions.
const PUBLISH_EVERY: u64 = 16;

/// The answer to a graph replacement while the core runs VRs.
const SWAP_WITH_VRS: &str = "the dataplane runs virtual routers ([[dataplane.vr]]): their \
     graphs are the built-in one; the main graph is replaced once no VR is left";

/// The core counters' drop names in VR mode (`vlan_no_room`: frames a
/// VR sent with no buffer room for its VLAN tag).
const CORE_DROPS: [&str; 3] = ["no_vr", "vr_queue_full", "vlan_no_room"];

impl<D: Device<Error = IoError>> VrWorker<D> {
    /// A core running the VR set `vrs` (not empty) on `devs`, publishing
    /// into `core` (its totals go on from what `core` holds). On an error
    /// the devices come back with it.
    pub(super) fn new(
        ports: &[GraphPort],
        devs: Vec<D>,
        lc: LoopConfig,
        vrs: Vec<CoreVr>,
        core: Arc<CoreStats>,
    ) -> Result<Self, (Vec<D>, String)> {
        let burst = match lc.batch.validate() {
            Ok(b) => b.kp.min(pkt::MAX_BATCH),
            Err(e) => return Err((devs, format!("{e:?}"))),
        };
        let names: Vec<String> = devs.iter().map(|d| d.name().to_string()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let engine = if lc.engine == Engine::Fast {
            Engine::Fast
        } else {
            Engine::Graph
        };
        let text = GraphText {
            file: "built-in".into(),
            text: graph_config_ext(ports, &refs, engine, None, None),
        };
        let now = core.snapshot();
        core.set_names(&CORE_DROPS);
        let demux = Demux {
            devs,
            pool: Pool::new(DEMUX_BUFFERS),
            class: VrClassifier::default(),
            queues: Vec::new(),
            tmp: Batch::with_capacity(burst),
            burst,
            rx: 0,
            tx: 0,
            no_vr: 0,
            queue_full: Vec::new(),
            owner: Vec::new(),
            pop: false,
            tags: Vec::new(),
            no_room: 0,
            scanning: false,
            dirty: 0,
        };
        let mut w = VrWorker {
            demux: Rc::new(RefCell::new(demux)),
            // This thread's CPU clock: time another process takes from a
            // shared core is charged to no VR.
            sched: VrScheduler::with_clock(1, Charge::Time, sched_clock()),
            slots: Vec::new(),
            names,
            text,
            ports: ports.len(),
            burst,
            core,
            core_base: (now.rx, now.tx),
            busy: 0,
            seen_rx: 0,
            unkicked: (0, 0),
        };
        if let Err(e) = w.rebuild(vrs) {
            return Err((w.take_devices(), e));
        }
        w.publish(true);
        Ok(w)
    }

    /// Takes the devices back out (the core goes back to its main
    /// graph): the counters are published first; frames queued for the
    /// VRs are dropped with them.
    pub(super) fn take_devices(&mut self) -> Vec<D> {
        self.demux.borrow_mut().kick();
        self.publish(true);
        std::mem::take(&mut self.demux.borrow_mut().devs)
    }

    /// One scheduling decision: the demultiplexer reads the ports once,
    /// the scheduler receives only for the VRs whose queues hold frames
    /// and runs one; the transmit rings are kicked when due.
    fn decide(&mut self) -> bool {
        let d = &self.demux;
        {
            let mut m = d.borrow_mut();
            m.pass();
            m.scanning = true;
        }
        let ran = self
            .sched
            .step_with(|i| d.borrow().ready(i), || d.borrow_mut().scanning = false);
        self.kick_due(ran);
        ran
    }

    /// Kicks the ports' transmit rings after [`KICK_DECISIONS`] busy
    /// decisions, [`KICK_NS`] of runs, or an idle decision.
    fn kick_due(&mut self, ran: bool) {
        let (n, ns) = &mut self.unkicked;
        if ran {
            *n += 1;
            *ns += self.sched.last_charged();
            if *n < KICK_DECISIONS && *ns < KICK_NS {
                return;
            }
        }
        self.unkicked = (0, 0);
        self.demux.borrow_mut().kick();
    }

    /// Replaces the core's VR set by `vrs`: every graph and the scheduler
    /// are built anew; a VR without fresh handles keeps its FIB views,
    /// neighbour ring and counters. On an error nothing changes.
    fn rebuild(&mut self, vrs: Vec<CoreVr>) -> Result<(), String> {
        let mut rules = Vec::new();
        for (i, v) in vrs.iter().enumerate() {
            rules.extend(v.def.rules.iter().map(|r| (*r, i)));
        }
        let rules_of: Vec<Vec<VrRule>> = vrs.iter().map(|v| v.def.rules.clone()).collect();
        let class = VrClassifier::new(rules).map_err(|e| e.to_string())?;
        enum Src {
            Fresh(Tables, Rc<RefCell<Shared>>),
            Old(usize),
        }
        let mut srcs = Vec::new();
        for v in &vrs {
            let src = match &v.fresh {
                Some(_) => None,
                None => Some(Src::Old(
                    self.slots
                        .iter()
                        .position(|s| s.name == v.def.name)
                        .ok_or_else(|| format!("VR {:?}: no FIB on this core", v.def.name))?,
                )),
            };
            srcs.push(src);
        }
        let mut vrs = vrs;
        for (v, s) in vrs.iter_mut().zip(srcs.iter_mut()) {
            if let Some(h) = v.fresh.take() {
                let tables = Tables {
                    v4: Rc::new(RefCell::new(LiveTable(h.v4))),
                    v6: Rc::new(RefCell::new(LiveTable(h.v6))),
                };
                let shared = Rc::new(RefCell::new(Shared {
                    fib: h.share,
                    learn: h.learn,
                    dropped: 0,
                }));
                *s = Some(Src::Fresh(tables, shared));
            }
        }
        let refs: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let mut runners = Vec::new();
        for (i, s) in srcs.iter().enumerate() {
            let (tables, shared) = match s {
                Some(Src::Fresh(t, sh)) => (t, sh),
                Some(Src::Old(k)) => (&self.slots[*k].tables, &self.slots[*k].shared),
                None => return Err("internal: a VR without a source".into()),
            };
            let mut g = build_graph(&self.text, tables, &refs, self.ports)?;
            attach_share(&mut g, Some(shared), self.ports);
            let devs = self
                .names
                .iter()
                .enumerate()
                .map(|(p, n)| VrPort {
                    name: n.clone(),
                    vr: i,
                    port: p,
                    demux: Rc::clone(&self.demux),
                    stats: DevStats::default(),
                })
                .collect();
            runners.push(Runner::new(g, devs, self.burst).map_err(|e| e.to_string())?);
        }
        // Commit: the old slots' totals go into their bases.
        let qf = std::mem::take(&mut self.demux.borrow_mut().queue_full);
        for (k, s) in self.slots.iter_mut().enumerate() {
            if let (Some(st), Some(r)) = (self.sched.stats(k), self.sched.runner(k)) {
                let rs = r.stats();
                s.base[0] += rs.rx;
                s.base[1] += rs.tx;
                s.base[2] += qf.get(k).copied().unwrap_or(0);
                s.base[3] += st.charged;
                s.base[4] += st.runs;
                s.publisher.retire(&r.graph);
            }
        }
        let mut old: Vec<Option<Slot>> = std::mem::take(&mut self.slots)
            .into_iter()
            .map(Some)
            .collect();
        let g_ns = vrs.first().map_or(100_000, |v| {
            u64::from(v.def.granularity_us).saturating_mul(1000)
        });
        let mut sched: Sched<D> = VrScheduler::with_clock(g_ns, Charge::Time, sched_clock());
        for ((v, s), r) in vrs.into_iter().zip(srcs).zip(runners) {
            let mut slot = match s {
                Some(Src::Old(k)) => match old.get_mut(k).and_then(Option::take) {
                    Some(s) => s,
                    None => return Err("internal: a VR slot taken twice".into()),
                },
                Some(Src::Fresh(tables, shared)) => Slot {
                    name: v.def.name.clone(),
                    tables,
                    shared,
                    publisher: CorePublisher::new(Arc::clone(&v.stats.graph)),
                    stats: Arc::clone(&v.stats),
                    base: [0; 5],
                },
                None => return Err("internal: a VR without a source".into()),
            };
            slot.publisher.index(&r.graph);
            sched.add(
                r,
                VrConfig {
                    tickets: v.def.tickets,
                    batch: usize::from(v.def.batch.max(1)),
                    delay_ns: u64::from(v.def.delay_us).saturating_mul(1000),
                },
            );
            self.slots.push(slot);
        }
        self.sched = sched;
        let mut d = self.demux.borrow_mut();
        d.pop = class.kind() == Some(RuleKind::Vlan);
        d.tags = rules_of
            .iter()
            .map(|rs| {
                rs.iter().find_map(|r| match r {
                    VrRule::Vlan(id) => Some(*id),
                    _ => None,
                })
            })
            .collect();
        d.class = class;
        d.owner = vec![None; self.ports];
        for (i, rs) in rules_of.iter().enumerate() {
            for r in rs {
                if let VrRule::Ingress(p) = r {
                    if let Some(o) = d.owner.get_mut(usize::from(*p)) {
                        *o = Some(i);
                    }
                }
            }
        }
        d.queue_full = vec![0; self.slots.len()];
        d.queues = (0..self.slots.len())
            .map(|_| {
                (0..self.ports)
                    .map(|_| Batch::with_capacity(VR_QUEUE))
                    .collect()
            })
            .collect();
        Ok(())
    }

    /// Stores every VR's counters and the core's (relaxed stores; the
    /// drops by reason every `DROPS_EVERY` busy calls and when `all`).
    fn publish(&mut self, all: bool) {
        let d = self.demux.borrow();
        for (k, s) in self.slots.iter_mut().enumerate() {
            let (Some(r), Some(st)) = (self.sched.runner(k), self.sched.stats(k)) else {
                continue;
            };
            let rs = r.stats();
            let (rx, tx) = (s.base[0] + rs.rx, s.base[1] + rs.tx);
            if all {
                s.publisher.flush(&r.graph, rx, tx);
            } else {
                s.publisher.batch(&r.graph, rx, tx);
            }
            let qf = s.base[2] + d.queue_full.get(k).copied().unwrap_or(0);
            s.stats.queue_full.store(qf, Ordering::Relaxed);
            s.stats
                .charged_ns
                .store(s.base[3] + st.charged, Ordering::Relaxed);
            s.stats.runs.store(s.base[4] + st.runs, Ordering::Relaxed);
        }
        let qf: u64 = self
            .slots
            .iter()
            .map(|s| s.stats.queue_full.load(Ordering::Relaxed))
            .sum();
        self.core.store(
            d.rx + self.core_base.0,
            d.tx + self.core_base.1,
            &[d.no_vr, qf, d.no_room],
        );
    }

    /// The core's totals for the final report: frames received from the
    /// ports and sent to them (every VR together).
    pub(super) fn counters(&self) -> super::WorkerCounters {
        let d = self.demux.borrow();
        super::WorkerCounters {
            rx: d.rx,
            forwarded: d.tx,
            ..super::WorkerCounters::default()
        }
    }

    /// Takes a waiting command: a new VR set is built at once (answered
    /// here); an empty one is returned (the caller gives the devices back
    /// to the main graph and answers). Graph replacements are refused
    /// while VRs run.
    fn take_cmd(
        &mut self,
        cmds: &mpsc::Receiver<VrCmd>,
        swaps: Option<&mpsc::Receiver<super::Swap>>,
    ) -> Option<VrCmd> {
        if let Some(sw) = swaps {
            while let Ok(x) = sw.try_recv() {
                let _ = x.reply.send(Err(SWAP_WITH_VRS.into()));
            }
        }
        let Ok(cmd) = cmds.try_recv() else {
            return None;
        };
        if cmd.vrs.is_empty() {
            return Some(cmd);
        }
        self.publish(true);
        let r = self.rebuild(cmd.vrs);
        let _ = cmd.reply.send(r);
        self.publish(true);
        None
    }

    /// Whether frames wait in a VR's queue or graph input (a VR below its
    /// batch threshold, waiting for D_i).
    fn pending(&self) -> bool {
        self.demux.borrow().pending()
            || (0..self.slots.len()).any(|k| self.sched.runner(k).is_some_and(|r| r.staged() > 0))
    }

    /// Schedules until `stop` is set (`Ok(None)`) or a command empties
    /// the VR set (`Ok(Some(it))`, unanswered); sleeps in `poll(2)` after
    /// `idle_spins` decisions that ran no VR (at most 1 ms while frames
    /// wait for a VR's delay threshold). Commands are read every
    /// [`CMD_EVERY`] busy decisions and every idle one; `swaps`, the main
    /// graph's replacements, are refused meanwhile.
    pub(super) fn run(
        &mut self,
        lc: LoopConfig,
        stop: &AtomicBool,
        cmds: &mpsc::Receiver<VrCmd>,
        swaps: Option<&mpsc::Receiver<super::Swap>>,
    ) -> Result<Option<VrCmd>, IoError> {
        let fds: Vec<_> = self
            .demux
            .borrow()
            .devs
            .iter()
            .filter_map(|d| d.poll_fd())
            .collect();
        let mut idle = 0u32;
        let mut decisions = 0u64;
        while !stop.load(Ordering::Relaxed) {
            decisions += 1;
            if decisions % CMD_EVERY == 0 || idle > 0 {
                if let Some(c) = self.take_cmd(cmds, swaps) {
                    return Ok(Some(c));
                }
            }
            if self.decide() {
                idle = 0;
                self.busy += 1;
                if self.busy % PUBLISH_EVERY == 0 {
                    self.publish(self.busy % super::core_stats::DROPS_EVERY == 0);
                }
                continue;
            }
            idle = idle.saturating_add(1);
            // Frames read and dropped by the demultiplexer (no VR) run
            // no VR: their counters go out too.
            let rx = self.demux.borrow().rx;
            if idle == lc.idle_spins.max(1) || rx != self.seen_rx {
                self.seen_rx = rx;
                self.publish(true);
            }
            if idle >= lc.idle_spins {
                let ms = if self.pending() {
                    lc.sleep_ms.clamp(0, 1)
                } else {
                    lc.sleep_ms.max(0)
                };
                if fds.is_empty() {
                    std::thread::sleep(Duration::from_millis(ms as u64));
                } else {
                    io::sys::poll_many(&fds, ms)?;
                }
            }
        }
        self.demux.borrow_mut().kick();
        self.publish(true);
        match self.demux.borrow().devs.iter().find_map(|d| d.last_error()) {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }
}

/// One VR's FIB: its thread, its counters on every core.
struct VrFib {
    def: VrDef,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<FibReport>>,
    live: Arc<Mutex<FibReport>>,
    stats: Vec<Arc<VrCoreStats>>,
}

impl VrFib {
    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

/// Starts a VR's FIB thread fed by `feed`: the connected prefixes of
/// `specs` first, then the feed's changes, resolved as the main FIB
/// resolves them (no kernel export). Returns its handles for each core.
fn spawn_fib(
    def: &VrDef,
    specs: &[PortSpec],
    feed: mpsc::Receiver<Vec<Change>>,
    cores: usize,
) -> Result<(VrFib, Vec<VrHandles>), String> {
    let mut fib = Fib::new(specs, false);
    let mut writer = left_right(FibTables::new());
    let _ = writer.publish(&fib.take_deltas());
    let mut handles = Vec::new();
    let mut rings = Vec::new();
    for _ in 0..cores {
        let (p, c) = spsc::<Learned>(256);
        handles.push(VrHandles {
            v4: writer.reader(),
            v6: writer.reader(),
            share: writer.reader(),
            learn: p,
        });
        rings.push(c);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let live = Arc::new(Mutex::new(FibReport::default()));
    let (s, l) = (Arc::clone(&stop), Arc::clone(&live));
    let thread = std::thread::Builder::new()
        .name(format!("dp-fib-{}", def.name))
        .spawn(move || {
            super::fib_thread(&mut fib, &mut writer, feed, rings, &s, None, None, &l, None)
        })
        .map_err(|e| format!("VR {:?}: cannot spawn its FIB thread: {e}", def.name))?;
    Ok((
        VrFib {
            def: def.clone(),
            stop,
            thread: Some(thread),
            live,
            stats: (0..cores).map(|_| Arc::default()).collect(),
        },
        handles,
    ))
}

/// The control side of the VRs: their FIBs and each core's command
/// channel.
pub(super) struct VrControl {
    fibs: Vec<VrFib>,
    cmds: Vec<mpsc::Sender<VrCmd>>,
    specs: Vec<PortSpec>,
    ports: usize,
}

impl VrControl {
    /// Starts the FIB of every VR of `defs` (each fed by its entry in
    /// `feeds`, by name) and returns each core's first VR set.
    pub(super) fn start(
        defs: &[VrDef],
        feeds: Vec<(String, mpsc::Receiver<Vec<Change>>)>,
        specs: Vec<PortSpec>,
        cores: usize,
    ) -> Result<(VrControl, Vec<Vec<CoreVr>>), String> {
        check(defs, specs.len())?;
        let mut c = VrControl {
            fibs: Vec::new(),
            cmds: Vec::new(),
            ports: specs.len(),
            specs,
        };
        let mut feeds = feeds;
        let mut per_core: Vec<Vec<CoreVr>> = (0..cores).map(|_| Vec::new()).collect();
        for d in defs {
            let Some(i) = feeds.iter().position(|(n, _)| *n == d.name) else {
                c.halt();
                return Err(format!("VR {:?} has no feed", d.name));
            };
            let (_, feed) = feeds.swap_remove(i);
            let (fib, handles) = match spawn_fib(d, &c.specs, feed, cores) {
                Ok(x) => x,
                Err(e) => {
                    c.halt();
                    return Err(e);
                }
            };
            for ((set, h), st) in per_core.iter_mut().zip(handles).zip(&fib.stats) {
                set.push(CoreVr {
                    def: d.clone(),
                    stats: Arc::clone(st),
                    fresh: Some(h),
                });
            }
            c.fibs.push(fib);
        }
        Ok((c, per_core))
    }

    /// A core's command channel (in core order).
    pub(super) fn add_core(&mut self) -> mpsc::Receiver<VrCmd> {
        let (tx, rx) = mpsc::channel();
        self.cmds.push(tx);
        rx
    }

    pub(super) fn halt(&mut self) {
        for f in &mut self.fibs {
            f.halt();
        }
    }

    /// The VRs running now.
    pub(super) fn defs(&self) -> Vec<VrDef> {
        self.fibs.iter().map(|f| f.def.clone()).collect()
    }

    /// Every VR's counters, summed over the cores.
    pub(super) fn snapshot(&self) -> Vec<VrSnapshot> {
        self.fibs
            .iter()
            .map(|f| {
                let mut s = VrSnapshot {
                    name: f.def.name.clone(),
                    tickets: f.def.tickets,
                    ..VrSnapshot::default()
                };
                let mut qf = 0;
                for c in &f.stats {
                    let g = c.graph.snapshot();
                    s.rx += g.rx;
                    s.tx += g.tx;
                    for (r, n) in g.drops {
                        match s.drops.iter_mut().find(|(x, _)| x == r) {
                            Some(x) => x.1 += n,
                            None => s.drops.push((r.to_string(), n)),
                        }
                    }
                    qf += c.queue_full.load(Ordering::Relaxed);
                    s.charged_ns += c.charged_ns.load(Ordering::Relaxed);
                    s.runs += c.runs.load(Ordering::Relaxed);
                }
                s.drops.push(("queue_full".into(), qf));
                let r = *f.live.lock().unwrap_or_else(PoisonError::into_inner);
                s.routes = r.stats.routes;
                s.installed = r.stats.installed;
                s
            })
            .collect()
    }

    /// Replaces the VR set by `defs`. A VR named in `feeds` gets a new
    /// FIB fed by it (a new VR, or one whose source changed); the others
    /// keep theirs; VRs not in `defs` stop. An empty `defs` stops every
    /// VR and the cores go back to the main graph (`switch.rs`); the
    /// first VRs take the cores from it. Everything is checked before
    /// anything changes; each core answers within `wait`.
    pub(super) fn set(
        &mut self,
        defs: &[VrDef],
        feeds: Vec<(String, mpsc::Receiver<Vec<Change>>)>,
        wait: Duration,
    ) -> Result<(), String> {
        check(defs, self.ports)?;
        for (n, _) in &feeds {
            if !defs.iter().any(|d| &d.name == n) {
                return Err(format!("a feed for VR {n:?}, which is not configured"));
            }
        }
        for d in defs {
            let fed = feeds.iter().any(|(n, _)| *n == d.name);
            if !fed && !self.fibs.iter().any(|f| f.def.name == d.name) {
                return Err(format!("VR {:?} is new and has no feed", d.name));
            }
        }
        let cores = self.cmds.len();
        let mut fresh: Vec<(VrFib, Vec<VrHandles>)> = Vec::new();
        for (name, feed) in feeds {
            let Some(d) = defs.iter().find(|d| d.name == name) else {
                continue;
            };
            match spawn_fib(d, &self.specs, feed, cores) {
                Ok(x) => fresh.push(x),
                Err(e) => {
                    for (mut f, _) in fresh {
                        f.halt();
                    }
                    return Err(e);
                }
            }
        }
        let mut sets: Vec<Vec<CoreVr>> = (0..cores).map(|_| Vec::new()).collect();
        let mut handles: Vec<(String, Vec<VrHandles>)> = Vec::new();
        for (f, h) in &mut fresh {
            handles.push((f.def.name.clone(), std::mem::take(h)));
        }
        for d in defs {
            let new = fresh.iter().find(|(f, _)| f.def.name == d.name);
            let stats = match new {
                Some((f, _)) => f.stats.clone(),
                None => self
                    .fibs
                    .iter()
                    .find(|f| f.def.name == d.name)
                    .map(|f| f.stats.clone())
                    .unwrap_or_default(),
            };
            let mut hs: Vec<Option<VrHandles>> =
                match handles.iter_mut().find(|(n, _)| *n == d.name) {
                    Some((_, h)) => std::mem::take(h).into_iter().map(Some).collect(),
                    None => (0..cores).map(|_| None).collect(),
                };
            for (core, set) in sets.iter_mut().enumerate() {
                set.push(CoreVr {
                    def: d.clone(),
                    stats: stats.get(core).cloned().unwrap_or_default(),
                    fresh: hs.get_mut(core).and_then(Option::take),
                });
            }
        }
        let mut answers = Vec::new();
        let mut errs = Vec::new();
        for (core, (tx, set)) in self.cmds.iter().zip(sets).enumerate() {
            let (rtx, rrx) = mpsc::channel();
            if tx
                .send(VrCmd {
                    vrs: set,
                    reply: rtx,
                })
                .is_err()
            {
                errs.push(format!("dataplane core {core} has stopped"));
                continue;
            }
            answers.push((core, rrx));
        }
        for (core, r) in answers {
            match r.recv_timeout(wait) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errs.push(format!("core {core}: {e}")),
                Err(_) => errs.push(format!("core {core}: no answer within {wait:?}")),
            }
        }
        if !errs.is_empty() {
            // The cores are checked to build the same graphs they run:
            // this is a core that stopped, not a bad configuration.
            for (mut f, _) in fresh {
                f.halt();
            }
            return Err(errs.join("; "));
        }
        // Commit: replaced and removed FIBs stop; the rest stay.
        let mut keep = Vec::new();
        for mut f in std::mem::take(&mut self.fibs) {
            let stays = defs.iter().any(|d| d.name == f.def.name)
                && !fresh.iter().any(|(n, _)| n.def.name == f.def.name);
            if stays {
                f.def = defs
                    .iter()
                    .find(|d| d.name == f.def.name)
                    .cloned()
                    .unwrap_or(f.def);
                keep.push(f);
            } else {
                f.halt();
            }
        }
        keep.extend(fresh.into_iter().map(|(f, _)| f));
        // Configuration order.
        keep.sort_by_key(|f| defs.iter().position(|d| d.name == f.def.name));
        self.fibs = keep;
        Ok(())
    }
}

impl Drop for VrControl {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::super::{GraphWorker, WorkerLink};
    use super::*;
    use pkt::{build, Mac};
    use std::collections::VecDeque;
    use std::net::IpAddr;
    use std::time::Instant;

    /// One port's wire: frames to receive (or one frame received over and
    /// over), frames sent.
    #[derive(Clone, Default)]
    struct Wire {
        rx: Arc<Mutex<VecDeque<Vec<u8>>>>,
        cycle: Arc<Mutex<Option<Vec<u8>>>>,
        tx: Arc<Mutex<Vec<Vec<u8>>>>,
    }

    struct TestDev {
        name: String,
        w: Wire,
        st: DevStats,
    }

    impl Device for TestDev {
        type Error = IoError;
        fn name(&self) -> &str {
            &self.name
        }
        fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
            let mut n = 0;
            let cyc = self.w.cycle.lock().unwrap().clone();
            let mut q = self.w.rx.lock().unwrap();
            while n < max.min(batch.room()) {
                let Some(f) = q.pop_front().or_else(|| cyc.clone()) else {
                    break;
                };
                let Some(p) = pool.alloc_from(&f) else { break };
                let _ = batch.push(p);
                n += 1;
            }
            self.st.rx += n as u64;
            n
        }
        fn tx_burst(&mut self, batch: &mut Batch) -> usize {
            let n = batch.len();
            let mut t = self.w.tx.lock().unwrap();
            for p in batch.drain() {
                if t.len() < 4096 {
                    t.push(p.data().to_vec());
                }
            }
            self.st.tx += n as u64;
            n
        }
        fn stats(&self) -> DevStats {
            self.st
        }
    }

    const HOST: Mac = Mac([2, 0, 0, 0, 0, 0x22]);
    fn rmac(i: u8) -> Mac {
        Mac([2, 0, 0, 0, 0, 0x10 + i])
    }

    fn def(name: &str, port: u16, tickets: u32) -> VrDef {
        VrDef {
            name: name.into(),
            rules: vec![VrRule::Ingress(port)],
            tickets,
            batch: 1,
            delay_us: 0,
            granularity_us: 100,
        }
    }

    /// Three ports (198.18.i.1/24 on port i), one core in a thread of its
    /// own (the main graph on a main FIB of the connected prefixes, and
    /// the VRs: `switch.rs`), the VRs' FIBs fed by the returned senders.
    struct Rig {
        wires: Vec<Wire>,
        ctl: VrControl,
        core: Arc<CoreStats>,
        /// The main graph's element counters (empty while VRs run).
        main: Arc<Mutex<Vec<super::super::ElementCounters>>>,
        stop: Arc<AtomicBool>,
        worker: Option<JoinHandle<()>>,
        _feeds: Vec<mpsc::SyncSender<Vec<Change>>>,
        _fib: (
            lpm::publish::Writer<FibTables>,
            io::rss::Consumer<Learned>,
            mpsc::Sender<super::super::Swap>,
        ),
    }

    impl Drop for Rig {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(h) = self.worker.take() {
                let _ = h.join();
            }
        }
    }

    /// A VR's feed: (its name, the receiver), and the sender.
    type Feed = (
        (String, mpsc::Receiver<Vec<Change>>),
        mpsc::SyncSender<Vec<Change>>,
    );

    fn feed(name: &str) -> Feed {
        let (tx, rx) = mpsc::sync_channel(8);
        ((name.to_string(), rx), tx)
    }

    fn rig(defs: &[VrDef]) -> Rig {
        let addr = |i: u8| vec![(IpAddr::from([198, 18, i, 1]), 24u8)];
        let specs: Vec<PortSpec> = (0..3)
            .map(|i| PortSpec {
                name: format!("p{i}"),
                addrs: addr(i),
            })
            .collect();
        let ports: Vec<GraphPort> = (0..3)
            .map(|i| GraphPort {
                mac: rmac(i).0,
                addrs: addr(i),
            })
            .collect();
        let (fs, txs): (Vec<_>, Vec<_>) = defs.iter().map(|d| feed(&d.name)).unzip();
        let mut writer = left_right(FibTables::new());
        let _ = writer.publish(&Fib::new(&specs, false).take_deltas());
        let (learn, learned) = spsc::<Learned>(256);
        let (swap_tx, swap_rx) = mpsc::channel();
        let main = Arc::new(Mutex::new(Vec::new()));
        let (mut ctl, mut sets) = VrControl::start(defs, fs, specs, 1).expect("start");
        let wires: Vec<Wire> = (0..3).map(|_| Wire::default()).collect();
        let devs: Vec<TestDev> = wires
            .iter()
            .enumerate()
            .map(|(i, w)| TestDev {
                name: format!("p{i}"),
                w: w.clone(),
                st: DevStats::default(),
            })
            .collect();
        let core = Arc::new(CoreStats::default());
        let job = VrJob {
            vrs: sets.pop().expect("one core"),
            cmds: ctl.add_core(),
            core: Arc::clone(&core),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let lc = LoopConfig {
            sleep_ms: 1,
            ..LoopConfig::default()
        };
        let (v4, v6, share) = (writer.reader(), writer.reader(), writer.reader());
        let link = WorkerLink {
            swaps: swap_rx,
            counters: Arc::clone(&main),
            core: Arc::clone(&core),
        };
        let worker = std::thread::spawn(move || {
            let mut g = GraphWorker::with_graph(
                &ports,
                devs,
                v4,
                v6,
                Some((share, learn)),
                lc,
                None,
                None,
                None,
                &[],
            )
            .map_err(|_| "main graph")
            .expect("main graph");
            g.set_link(link);
            super::super::switch::serve(&ports, g, job, lc, &s).expect("run");
        });
        Rig {
            wires,
            ctl,
            core,
            main,
            stop,
            worker: Some(worker),
            _feeds: txs,
            _fib: (writer, learned, swap_tx),
        }
    }

    /// Waits (sleeping) until `f` holds, at most 10 s.
    fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn stat(ctl: &VrControl, vr: &str) -> VrSnapshot {
        ctl.snapshot()
            .into_iter()
            .find(|s| s.name == vr)
            .expect("a VR of that name")
    }

    fn udp(port: u8, dst: [u8; 4]) -> Vec<u8> {
        build::udp4(rmac(port), HOST, [198, 18, port, 2], dst, 64, 1, 2, b"vr")
    }

    /// Frames go to the VR of their ingress port, through its own graph:
    /// red resolves its next hop on port 1 (blue's) from the ARP reply
    /// every VR gets, and forwards; blue sees only the reply; a port no
    /// VR owns drops as `no_vr`.
    #[test]
    fn demux_by_ingress_and_per_vr_counters() {
        let r = rig(&[def("red", 0, 100), def("blue", 1, 100)]);
        for _ in 0..10 {
            r.wires[0]
                .rx
                .lock()
                .unwrap()
                .push_back(udp(0, [198, 18, 1, 2]));
        }
        let arp_out = |w: &Wire| {
            w.tx.lock()
                .unwrap()
                .iter()
                .filter(|f| f[12..14] == [8, 6])
                .count()
        };
        wait_for("red's ARP request on port 1", || arp_out(&r.wires[1]) > 0);
        // The request leaves while the batch is processed; the VR's
        // counters are published after it (on a busy machine, later).
        wait_for("red's 10", || stat(&r.ctl, "red").rx == 10);
        let reply = build::arp(
            rmac(1),
            HOST,
            2,
            HOST,
            [198, 18, 1, 2],
            rmac(1),
            [198, 18, 1, 1],
        );
        r.wires[1].rx.lock().unwrap().push_back(reply);
        let udp_out = |w: &Wire| {
            w.tx.lock()
                .unwrap()
                .iter()
                .filter(|f| f[12..14] == [8, 0] && f[0..6] == HOST.0)
                .count()
        };
        wait_for("the 10 held packets on port 1", || {
            udp_out(&r.wires[1]) == 10
        });
        r.wires[2]
            .rx
            .lock()
            .unwrap()
            .push_back(udp(2, [198, 18, 1, 2]));
        wait_for("no_vr", || r.core.snapshot().drops[0] == ("no_vr", 1));
        let red = stat(&r.ctl, "red");
        let blue = stat(&r.ctl, "blue");
        assert_eq!(red.rx, 11, "10 frames and the reply: {red:?}");
        assert!(red.tx >= 11, "an ARP request and 10 frames: {red:?}");
        assert_eq!(blue.rx, 1, "the reply only: {blue:?}");
        assert!(red.charged_ns > 0 && red.runs > 0, "{red:?}");
        // The consumed ARP reply counts as EtherRewrite's `not_for_us`.
        let lost: u64 = red
            .drops
            .iter()
            .filter(|(n, _)| n != "not_for_us")
            .map(|x| x.1)
            .sum();
        assert_eq!(lost, 0, "{red:?}");
        assert_eq!(r.core.snapshot().rx, 12);
    }

    /// Two VRs overloaded on one core get CPU in the ratio of their
    /// tickets (charged thread CPU time).
    #[test]
    fn shares_follow_tickets() {
        let r = rig(&[def("red", 0, 100), def("blue", 1, 300)]);
        // No route: every frame is looked up and dropped, endlessly.
        *r.wires[0].cycle.lock().unwrap() = Some(udp(0, [203, 0, 113, 1]));
        *r.wires[1].cycle.lock().unwrap() = Some(udp(1, [203, 0, 113, 1]));
        wait_for("200 ms charged", || {
            stat(&r.ctl, "red").charged_ns + stat(&r.ctl, "blue").charged_ns > 200_000_000
        });
        let (red, blue) = (stat(&r.ctl, "red"), stat(&r.ctl, "blue"));
        let ratio = blue.charged_ns as f64 / red.charged_ns.max(1) as f64;
        assert!(
            (2.4..3.6).contains(&ratio),
            "blue/red = {ratio}: {red:?} {blue:?}"
        );
        let no_route = |s: &VrSnapshot| {
            s.drops
                .iter()
                .find(|(n, _)| n == "no_route")
                .map_or(0, |x| x.1)
        };
        assert!(no_route(&red) > 0 && no_route(&blue) > 0);
    }

    /// A reload moves a port to another VR, keeps the FIBs of VRs that
    /// stay, adds a VR with its feed, and refuses a bad set changing
    /// nothing (removing every VR: the next test).
    #[test]
    fn reload_moves_match_and_refuses_bad_sets() {
        let mut r = rig(&[def("red", 0, 100), def("blue", 1, 100)]);
        let send = |r: &Rig, n: usize| {
            for _ in 0..n {
                r.wires[0]
                    .rx
                    .lock()
                    .unwrap()
                    .push_back(udp(0, [203, 0, 113, 1]));
            }
        };
        send(&r, 5);
        wait_for("red's 5", || stat(&r.ctl, "red").rx == 5);
        // Overlap: refused, nothing changes.
        let e = r
            .ctl
            .set(
                &[def("red", 0, 100), def("blue", 0, 100)],
                Vec::new(),
                Duration::from_secs(5),
            )
            .expect_err("overlap");
        assert!(e.contains("overlap"), "{e}");
        let e = r
            .ctl
            .set(
                &[def("red", 0, 100), def("green", 1, 100)],
                Vec::new(),
                Duration::from_secs(5),
            )
            .expect_err("no feed");
        assert!(e.contains("no feed"), "{e}");
        assert_eq!(r.ctl.defs(), vec![def("red", 0, 100), def("blue", 1, 100)]);
        // blue takes port 0, red port 2; green is new on port 1.
        let (f, _tx) = feed("green");
        r.ctl
            .set(
                &[
                    def("red", 2, 100),
                    def("blue", 0, 200),
                    def("green", 1, 100),
                ],
                vec![f],
                Duration::from_secs(5),
            )
            .expect("reload");
        send(&r, 7);
        wait_for("blue's 7", || stat(&r.ctl, "blue").rx == 7);
        assert_eq!(
            stat(&r.ctl, "red").rx,
            5,
            "red's counters kept, no new frames"
        );
        assert_eq!(stat(&r.ctl, "blue").tickets, 200);
        assert_eq!(r.ctl.snapshot().len(), 3);
    }

    /// Frames received by the main graph (its `FromDevice` elements).
    fn main_rx(r: &Rig) -> u64 {
        let c = r.main.lock().unwrap();
        c.iter()
            .filter(|e| e.class == "FromDevice")
            .map(|e| e.tx)
            .sum()
    }

    /// A reload to no VR gives the core back to the main graph (its FIB
    /// and graph kept: it forwards at once, its counters publish again,
    /// the core's totals go on), and a reload to VRs takes it again; a
    /// refused VR set leaves the main graph running.
    #[test]
    fn the_last_vr_gives_the_core_back_to_the_main_graph_and_the_first_takes_it() {
        let mut r = rig(&[def("red", 0, 100), def("blue", 1, 100)]);
        let send = |n: usize| {
            for _ in 0..n {
                r.wires[0]
                    .rx
                    .lock()
                    .unwrap()
                    .push_back(udp(0, [203, 0, 113, 1]));
            }
        };
        send(4);
        wait_for("red's 4", || stat(&r.ctl, "red").rx == 4);
        assert!(r.main.lock().unwrap().is_empty(), "main graph published");
        let core_rx = r.core.snapshot().rx;
        assert!(core_rx >= 4);
        // No VR: the main graph takes the ports.
        r.ctl
            .set(&[], Vec::new(), Duration::from_secs(5))
            .expect("remove every VR");
        assert!(r.ctl.snapshot().is_empty());
        send(6);
        wait_for("the main graph's 6", || main_rx(&r) >= 6);
        wait_for("core totals go on", || r.core.snapshot().rx >= core_rx + 6);
        // No route to 203.0.113.1 in the main FIB: dropped there.
        let drops: u64 = r
            .core
            .snapshot()
            .drops
            .iter()
            .filter(|(n, _)| *n == "no_route")
            .map(|x| x.1)
            .sum();
        assert!(drops >= 6, "{:?}", r.core.snapshot());
        // A new VR without a feed is refused before any core changes.
        assert!(r
            .ctl
            .set(&[def("red", 0, 100)], Vec::new(), Duration::from_secs(5))
            .is_err());
        send(2);
        wait_for("the main graph's 8", || main_rx(&r) >= 8);
        // VRs again: new FIBs, the core leaves the main graph.
        let (f, _tx) = feed("green");
        r.ctl
            .set(&[def("green", 0, 100)], vec![f], Duration::from_secs(5))
            .expect("add a VR");
        send(3);
        wait_for("green's 3", || stat(&r.ctl, "green").rx == 3);
        assert!(r.main.lock().unwrap().is_empty());
        assert_eq!(r.core.snapshot().drops[0].0, "no_vr");
        assert!(r.core.snapshot().rx >= core_rx + 11);
    }

    fn with_rules(name: &str, rules: Vec<VrRule>) -> VrDef {
        VrDef {
            rules,
            ..def(name, 0, 100)
        }
    }

    /// `f` under an 802.1Q tag with VLAN id `id`.
    fn tagged(mut f: Vec<u8>, id: u16) -> Vec<u8> {
        let t = id.to_be_bytes();
        f.splice(12..12, [0x81, 0x00, t[0], t[1]]);
        f
    }

    /// Sent frames on `w` that are ARP under tag `id` (`None`: untagged)
    /// with operation `op`.
    fn arps(w: &Wire, id: Option<u16>, op: u8) -> usize {
        w.tx.lock()
            .unwrap()
            .iter()
            .filter(|f| match id {
                Some(id) => {
                    f[12..14] == [0x81, 0]
                        && f[14..16] == id.to_be_bytes()
                        && f[16..18] == [8, 6]
                        && f[25] == op
                }
                None => f[12..14] == [8, 6] && f[21] == op,
            })
            .count()
    }

    /// VLAN rules: each VLAN is its own layer-2 domain. A frame tagged 10
    /// goes to red untagged (its graph runs as without VLANs), red's ARP
    /// request and forwarded frames leave tagged 10, the reply tagged 10
    /// reaches red only; blue (VLAN 20) resolves the same address itself,
    /// tagged 20. Untagged frames and unknown ids are `no_vr`.
    #[test]
    fn vlan_pops_and_pushes_tags_and_keeps_arp_per_vlan() {
        let r = rig(&[
            with_rules("red", vec![VrRule::Vlan(10)]),
            with_rules("blue", vec![VrRule::Vlan(20)]),
        ]);
        for _ in 0..10 {
            r.wires[0]
                .rx
                .lock()
                .unwrap()
                .push_back(tagged(udp(0, [198, 18, 1, 2]), 10));
        }
        wait_for("red's ARP request on port 1, tagged 10", || {
            arps(&r.wires[1], Some(10), 1) > 0
        });
        assert_eq!(arps(&r.wires[1], None, 1), 0, "an untagged ARP request");
        // The ARP request leaves while the batch is processed; the VR's
        // counters are published after it (on a busy machine, later).
        wait_for("red's 10", || stat(&r.ctl, "red").rx == 10);
        assert_eq!(stat(&r.ctl, "blue").rx, 0);
        let reply = build::arp(
            rmac(1),
            HOST,
            2,
            HOST,
            [198, 18, 1, 2],
            rmac(1),
            [198, 18, 1, 1],
        );
        r.wires[1]
            .rx
            .lock()
            .unwrap()
            .push_back(tagged(reply.clone(), 10));
        let udp_out = |w: &Wire, id: u16| {
            w.tx.lock()
                .unwrap()
                .iter()
                .filter(|f| {
                    f[0..6] == HOST.0
                        && f[12..16] == [0x81, 0, 0, id as u8]
                        && f[16..18] == [8, 0]
                        // The IPv4 header right after the tag.
                        && f[18] == 0x45
                })
                .count()
        };
        wait_for("the 10 held packets on port 1, tagged 10", || {
            udp_out(&r.wires[1], 10) == 10
        });
        assert_eq!(stat(&r.ctl, "blue").rx, 0, "blue got VLAN 10's reply");
        // Blue has not learnt VLAN 10's neighbour: it asks in VLAN 20.
        r.wires[0]
            .rx
            .lock()
            .unwrap()
            .push_back(tagged(udp(0, [198, 18, 1, 2]), 20));
        wait_for("blue's ARP request, tagged 20", || {
            arps(&r.wires[1], Some(20), 1) > 0
        });
        r.wires[1].rx.lock().unwrap().push_back(tagged(reply, 20));
        wait_for("blue's packet, tagged 20", || udp_out(&r.wires[1], 20) == 1);
        assert_eq!(udp_out(&r.wires[1], 10), 10);
        // Untagged, and an unknown VLAN: no VR.
        r.wires[0]
            .rx
            .lock()
            .unwrap()
            .push_back(udp(0, [198, 18, 1, 2]));
        r.wires[0]
            .rx
            .lock()
            .unwrap()
            .push_back(tagged(udp(0, [198, 18, 1, 2]), 30));
        wait_for("two no_vr", || r.core.snapshot().drops[0] == ("no_vr", 2));
        let (red, blue) = (stat(&r.ctl, "red"), stat(&r.ctl, "blue"));
        assert_eq!((red.rx, blue.rx), (11, 2), "{red:?} {blue:?}");
        assert_eq!(r.core.snapshot().drops[2], ("vlan_no_room", 0));
    }

    /// Prefix rules: data by destination; an ARP request for a port
    /// address (in no VR's prefix) is answered once, by the first VR;
    /// the ARP reply to red's request reaches every VR.
    #[test]
    fn prefix_splits_by_destination_and_answers_arp_once() {
        let r = rig(&[
            with_rules("red", vec![VrRule::Prefix4(0xc612_0100, 25)]),
            with_rules("blue", vec![VrRule::Prefix4(0xc612_0180, 25)]),
        ]);
        let push = |f: Vec<u8>| r.wires[0].rx.lock().unwrap().push_back(f);
        for _ in 0..4 {
            push(udp(0, [198, 18, 1, 2]));
        }
        for _ in 0..3 {
            push(udp(0, [198, 18, 1, 200]));
        }
        push(udp(0, [203, 0, 113, 1]));
        wait_for("red 4, blue 3", || {
            stat(&r.ctl, "red").rx == 4 && stat(&r.ctl, "blue").rx == 3
        });
        wait_for("no_vr", || r.core.snapshot().drops[0] == ("no_vr", 1));
        // Both VRs ask on port 1; the replies reach every VR.
        wait_for("ARP requests on port 1", || arps(&r.wires[1], None, 1) >= 2);
        for a in [2u8, 200] {
            r.wires[1].rx.lock().unwrap().push_back(build::arp(
                rmac(1),
                HOST,
                2,
                HOST,
                [198, 18, 1, a],
                rmac(1),
                [198, 18, 1, 1],
            ));
        }
        let out = |w: &Wire, a: u8| {
            w.tx.lock()
                .unwrap()
                .iter()
                .filter(|f| f[12..14] == [8, 0] && f[30..34] == [198, 18, 1, a])
                .count()
        };
        wait_for("red's 4 and blue's 3 sent", || {
            out(&r.wires[1], 2) == 4 && out(&r.wires[1], 200) == 3
        });
        // A host asks for port 0's address: one answer.
        push(build::arp(
            Mac([0xff; 6]),
            HOST,
            1,
            HOST,
            [198, 18, 0, 2],
            Mac([0; 6]),
            [198, 18, 0, 1],
        ));
        wait_for("one ARP reply on port 0", || {
            arps(&r.wires[0], None, 2) == 1
        });
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(arps(&r.wires[0], None, 2), 1, "answered twice");
        assert_eq!(
            stat(&r.ctl, "red").rx,
            4 + 2 + 1,
            "data, both replies, the request"
        );
        assert_eq!(stat(&r.ctl, "blue").rx, 3 + 2);
    }

    #[test]
    fn checks_rules() {
        assert!(check(&[def("a", 0, 1), def("a", 1, 1)], 2).is_err());
        assert!(check(&[def("a", 0, 1), def("b", 2, 1)], 2).is_err());
        let mut v = def("a", 0, 1);
        v.rules = vec![VrRule::Vlan(3)];
        assert_eq!(check(&[v.clone()], 2), Ok(()));
        v.rules = vec![VrRule::Vlan(3), VrRule::Vlan(4)];
        assert!(check(&[v.clone()], 2)
            .unwrap_err()
            .contains("more than one VLAN"));
        v.rules = vec![VrRule::Vlan(4095)];
        assert!(check(&[v.clone()], 2).unwrap_err().contains("1..=4094"));
        v.rules = vec![VrRule::Prefix4(0xc612_0000, 24)];
        assert_eq!(
            check(&[v.clone(), def("b", 1, 1)], 2).map_err(|e| e.contains("kind")),
            Err(true)
        );
        let mut g = def("b", 1, 1);
        g.granularity_us = 30;
        assert!(check(&[def("a", 0, 1), g], 2).is_err());
        assert!(neigh_answer(&build::arp(
            HOST, HOST, 2, HOST, [1; 4], HOST, [2; 4]
        )));
        assert!(!neigh_answer(&build::arp(
            HOST, HOST, 1, HOST, [1; 4], HOST, [2; 4]
        )));
        assert!(!neigh_answer(&[0x08]));
    }
}
