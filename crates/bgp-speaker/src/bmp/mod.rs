//! The BMP edge (RFC 7854, RFC 9069 Loc-RIB, RFC 8671 Adj-RIB-Out):
//! tesserad as a monitored router, exporting to the collectors of
//! `[[bmp.collector]]`.
//!
//! ```text
//!  sessions --Peer Up/Down, pre-policy UPDATEs as received--+
//!  RIB threads --post-policy, Loc-RIB, Adj-RIB-Out changes--+--> BmpHub::emit
//!        (encoded once, shared)                               | one bounded Queue per collector
//!                                                             v (never waits; overflow = resync)
//!  [collector task] connect (back-off 1 s doubling to reconnect_max) -> Initiation
//!     -> Peer Up of every established peer (+ the Loc-RIB peer) -> table dump per
//!     monitored view, RIB threads walked by control jobs, End-of-RIB per family
//!     -> the live queue; Statistics Reports every stats_interval
//! ```
//!
//! The messages themselves come from the pure `bmp` crate; here are only
//! the queues, the sockets and the RIB walks. A collector's queue holds
//! nothing while it is not connected: the dump on connection is the
//! resynchronisation. A queue that fills up (a collector slower than the
//! router) is dropped whole and counted, and its collector disconnected
//! and reconnected (`docs/bmp.md`).

mod queue;
mod task;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use ::bmp::encode::{self, DownReason, LocalEnd};
use ::bmp::{peer_flags, PeerHeader, PeerType, Timestamp};
use base::AfiSafi;
use bgp_core::SessionUp;
use tokio::sync::Notify;

pub use queue::{Msg, Pushed, Queue, Take};

/// Collector connection states (`show bmp`).
pub mod state {
    /// Waiting to (re)connect.
    pub const IDLE: u8 = 0;
    /// Connecting.
    pub const CONNECTING: u8 = 1;
    /// Sending the initial table dump.
    pub const DUMPING: u8 = 2;
    /// Up: live updates.
    pub const UP: u8 = 3;

    /// The name `show bmp` prints.
    pub fn name(s: u8) -> &'static str {
        match s {
            IDLE => "Idle",
            CONNECTING => "Connect",
            DUMPING => "Dump",
            _ => "Up",
        }
    }
}

/// Per established peer address: (routes in its post-policy Adj-RIB-In,
/// best routes from it in the Loc-RIB).
pub type Counts = BTreeMap<IpAddr, (u64, u64)>;

/// How the collector tasks reach the RIB threads (wired by the daemon:
/// control jobs on every RIB thread, answers merged). Both run blocking,
/// off the runtime's threads.
pub struct RibAccess {
    /// The table dump of the views asked for (pre-policy, post-policy,
    /// Loc-RIB): chunks of encoded Route Monitoring messages.
    #[allow(clippy::type_complexity)]
    pub dump: Box<dyn Fn(&BmpHub, Views) -> Result<Vec<Msg>, String> + Send + Sync>,
    /// The counts of the Statistics Reports.
    #[allow(clippy::type_complexity)]
    pub counts: Box<dyn Fn() -> Result<Counts, String> + Send + Sync>,
}

/// The views a table dump covers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Views {
    /// Pre-policy Adj-RIB-In.
    pub pre: bool,
    /// Post-policy Adj-RIB-In.
    pub post: bool,
    /// Loc-RIB.
    pub loc: bool,
    /// Pre-policy Adj-RIB-Out (RFC 8671).
    pub out_pre: bool,
    /// Post-policy Adj-RIB-Out (RFC 8671).
    pub out_post: bool,
}

/// Which stream a message belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Peer Up / Down: every collector.
    Peer,
    /// Route Monitoring, pre-policy Adj-RIB-In.
    Pre,
    /// Route Monitoring, post-policy Adj-RIB-In.
    Post,
    /// Route Monitoring, Loc-RIB.
    Loc,
    /// Route Monitoring, pre-policy Adj-RIB-Out (RFC 8671: O flag).
    OutPre,
    /// Route Monitoring, post-policy Adj-RIB-Out (O and L flags).
    OutPost,
}

/// One collector: its configuration, queue and counters.
pub struct Collector {
    pub(crate) cfg: config::BmpCollector,
    pub(crate) q: Mutex<Queue>,
    pub(crate) wake: Notify,
    /// The queue overflowed: the task drops the connection, even in the
    /// middle of a write to a collector that stopped reading.
    pub(crate) overflow: Notify,
    pub(crate) state: AtomicU8,
    pub(crate) since: AtomicU64,
    pub(crate) msgs_sent: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) last_error: Mutex<String>,
}

impl Collector {
    fn wants(&self, k: Kind) -> bool {
        let m = self.cfg.monitoring;
        match k {
            Kind::Peer => true,
            Kind::Pre => m.pre_policy,
            Kind::Post => m.post_policy,
            Kind::Loc => m.loc_rib,
            Kind::OutPre => m.adj_rib_out_pre,
            Kind::OutPost => m.adj_rib_out_post,
        }
    }

    fn push(&self, m: &Msg) {
        match self
            .q
            .lock()
            .map_or(Pushed::Ignored, |mut q| q.push(m.clone()))
        {
            Pushed::Wake => self.wake.notify_one(),
            Pushed::Overflow => {
                self.wake.notify_one();
                self.overflow.notify_one();
            }
            Pushed::Ignored | Pushed::Queued => {}
        }
    }

    pub(crate) fn set_state(&self, s: u8) {
        self.state.store(s, Ordering::Relaxed);
        self.since.store(unix_secs(), Ordering::Relaxed);
    }
}

/// An established peer, as the collectors were told of it.
#[derive(Clone, Debug)]
pub(crate) struct PeerRec {
    /// Its per-peer header (timestamp: when it came up; A flag as
    /// negotiated).
    pub header: PeerHeader,
    /// The Peer Up message.
    pub up: Msg,
    /// Negotiated unicast families (End-of-RIB after a dump).
    pub families: Vec<AfiSafi>,
    /// Families on which the peer sends us path identifiers.
    pub add_path_rx: Vec<AfiSafi>,
}

pub(crate) struct Inner {
    pub router_id: Ipv4Addr,
    pub local_asn: u32,
    pub sys_name: String,
    pub sys_descr: String,
    pub collectors: Vec<Arc<Collector>>,
    pub peers: Mutex<BTreeMap<IpAddr, PeerRec>>,
    /// Some collector wants this view.
    pub pre: bool,
    pub post: bool,
    pub loc: bool,
    pub out_pre: bool,
    pub out_post: bool,
    /// Set at shutdown: the tasks end once their queues are written.
    pub closing: std::sync::atomic::AtomicBool,
    /// Set when the daemon starts shutting down: the RIB threads are
    /// going away, so no more statistics (the Peer Downs and the
    /// Termination still go out).
    pub stopping: std::sync::atomic::AtomicBool,
    /// The RIB threads, for table dumps and statistics.
    pub ribs: Mutex<Option<Arc<RibAccess>>>,
}

/// Cheap-to-clone handle that sessions and RIB threads report through.
#[derive(Clone)]
pub struct BmpHub(pub(crate) Arc<Inner>);

impl std::fmt::Debug for BmpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BmpHub({} collectors)", self.0.collectors.len())
    }
}

pub(crate) fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(crate) fn now_ts() -> Timestamp {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp {
        secs: u32::try_from(d.as_secs()).unwrap_or(u32::MAX),
        micros: d.subsec_micros(),
    }
}

/// Where `ip` is an IPv4-mapped IPv6 address, the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    crate::sess::listener::canonical(ip)
}

impl BmpHub {
    /// The hub for `cfg`; its collector tasks start with [`Self::start`].
    pub fn new(cfg: &config::Bmp, router_id: Ipv4Addr, local_asn: u32) -> BmpHub {
        let collectors: Vec<Arc<Collector>> = cfg
            .collectors
            .iter()
            .map(|c| {
                Arc::new(Collector {
                    cfg: c.clone(),
                    q: Mutex::new(Queue::new(c.queue)),
                    wake: Notify::new(),
                    overflow: Notify::new(),
                    state: AtomicU8::new(state::IDLE),
                    since: AtomicU64::new(unix_secs()),
                    msgs_sent: AtomicU64::new(0),
                    bytes_sent: AtomicU64::new(0),
                    connects: AtomicU64::new(0),
                    last_error: Mutex::new(String::new()),
                })
            })
            .collect();
        let any =
            |f: fn(&config::BmpMonitoring) -> bool| collectors.iter().any(|c| f(&c.cfg.monitoring));
        BmpHub(Arc::new(Inner {
            router_id,
            local_asn,
            sys_name: cfg
                .sys_name
                .clone()
                .unwrap_or_else(|| format!("tesserad {router_id}")),
            sys_descr: cfg
                .sys_descr
                .clone()
                .unwrap_or_else(|| format!("tesserad {}", env!("CARGO_PKG_VERSION"))),
            pre: any(|m| m.pre_policy),
            post: any(|m| m.post_policy),
            loc: any(|m| m.loc_rib),
            out_pre: any(|m| m.adj_rib_out_pre),
            out_post: any(|m| m.adj_rib_out_post),
            collectors,
            peers: Mutex::new(BTreeMap::new()),
            closing: Default::default(),
            stopping: Default::default(),
            ribs: Mutex::new(None),
        }))
    }

    /// Starts one task per collector on `rt`; `ribs` reaches the RIB
    /// threads (table dumps, statistics).
    pub fn start(&self, rt: &tokio::runtime::Handle, ribs: RibAccess) {
        if let Ok(mut r) = self.0.ribs.lock() {
            *r = Some(Arc::new(ribs));
        }
        for c in &self.0.collectors {
            rt.spawn(task::run(self.clone(), c.clone()));
        }
    }

    /// Whether some collector monitors the post-policy Adj-RIB-In.
    pub fn post_policy(&self) -> bool {
        self.0.post
    }

    /// Whether some collector monitors the Loc-RIB.
    pub fn loc_rib(&self) -> bool {
        self.0.loc
    }

    /// Whether some collector monitors the pre-policy Adj-RIB-In.
    pub fn pre_policy(&self) -> bool {
        self.0.pre
    }

    /// Whether some collector monitors the pre-policy Adj-RIB-Out.
    pub fn adj_rib_out_pre(&self) -> bool {
        self.0.out_pre
    }

    /// Whether some collector monitors the post-policy Adj-RIB-Out.
    pub fn adj_rib_out_post(&self) -> bool {
        self.0.out_post
    }

    /// UPDATEs as handed to `peer`'s session (whole BGP messages, one
    /// after the other): post-policy Adj-RIB-Out Route Monitoring (RFC
    /// 8671 §5), one message per UPDATE. The A flag stays as negotiated:
    /// these are the bytes on the wire.
    pub fn sent_updates(&self, peer: IpAddr, mut raw: &[u8]) {
        if !self.0.out_post {
            return;
        }
        let Some(mut h) =
            (self.0.peers.lock().ok()).and_then(|g| g.get(&canonical(peer)).map(|r| r.header))
        else {
            return;
        };
        h.timestamp = now_ts();
        h.flags |= peer_flags::O | peer_flags::L;
        let mut b = Vec::with_capacity(raw.len() + 64);
        // RFC 4271 §4.1: 16-octet marker, 2-octet length, 1-octet type.
        while raw.len() >= 19 {
            let len = usize::from(u16::from_be_bytes([raw[16], raw[17]]));
            let Some(msg) = raw.get(..len).filter(|_| len >= 19) else {
                break;
            };
            if msg[18] == 2 {
                encode::route_monitoring(&h, msg, &mut b);
            }
            raw = &raw[len..];
        }
        if !b.is_empty() {
            self.emit(Kind::OutPost, &Arc::from(b));
        }
    }

    pub(crate) fn emit(&self, k: Kind, m: &Msg) {
        for c in &self.0.collectors {
            if c.wants(k) {
                c.push(m);
            }
        }
    }

    /// The per-peer header of an established peer for a message of `k`
    /// carrying RIB contents (4-octet ASNs: no A flag), stamped `ts`.
    pub(crate) fn rib_header(&self, peer: IpAddr, k: Kind, ts: Timestamp) -> Option<PeerRec> {
        let g = self.0.peers.lock().ok()?;
        let mut r = g.get(&canonical(peer))?.clone();
        r.header.timestamp = ts;
        r.header.flags = match k {
            Kind::Post => peer_flags::L,
            Kind::OutPre => peer_flags::O,
            Kind::OutPost => peer_flags::O | peer_flags::L,
            _ => 0,
        };
        Some(r)
    }

    /// The Loc-RIB instance peer's header (RFC 9069 §4.1).
    pub(crate) fn loc_header(&self, ts: Timestamp) -> PeerHeader {
        PeerHeader {
            peer_type: PeerType::LocRib,
            flags: 0,
            distinguisher: 0,
            address: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            asn: self.0.local_asn,
            bgp_id: self.0.router_id,
            timestamp: ts,
        }
    }

    /// A session reached Established: Peer Up to every collector.
    pub fn peer_up(&self, up: &SessionUp, sent_open: &[u8], received_open: &[u8]) {
        let n = &up.negotiated;
        let peer = canonical(up.remote_addr.ip());
        let header = PeerHeader {
            peer_type: PeerType::Global,
            flags: if n.four_octet_asn { 0 } else { peer_flags::A },
            distinguisher: 0,
            address: peer,
            asn: n.peer_asn.0,
            bgp_id: n.peer_bgp_id,
            timestamp: now_ts(),
        };
        let local = LocalEnd {
            address: canonical(up.local_addr.ip()),
            local_port: up.local_addr.port(),
            remote_port: up.remote_addr.port(),
        };
        let mut b = Vec::with_capacity(128 + sent_open.len() + received_open.len());
        encode::peer_up(&header, &local, sent_open, received_open, &[], &mut b);
        let rec = PeerRec {
            header,
            up: Arc::from(b),
            families: n
                .families
                .iter()
                .copied()
                .filter(|f| f.safi == base::Safi::Unicast)
                .collect(),
            add_path_rx: n
                .add_path
                .iter()
                .filter(|a| a.rx)
                .map(|a| a.afi_safi)
                .collect(),
        };
        // Under the lock: a collector connecting now either sees the peer
        // in its snapshot or gets this message, never both or neither.
        if let Ok(mut g) = self.0.peers.lock() {
            self.emit(Kind::Peer, &rec.up);
            g.insert(peer, rec);
        }
    }

    /// An established session ended: Peer Down to every collector.
    pub fn peer_down(&self, peer: IpAddr, reason: DownReason<'_>) {
        let peer = canonical(peer);
        if let Ok(mut g) = self.0.peers.lock() {
            let Some(mut rec) = g.remove(&peer) else {
                return;
            };
            rec.header.timestamp = now_ts();
            let mut b = Vec::with_capacity(96);
            encode::peer_down(&rec.header, reason, &mut b);
            self.emit(Kind::Peer, &Arc::from(b));
        }
    }

    /// An UPDATE as received from `peer` (whole message): pre-policy Route
    /// Monitoring.
    pub fn received_update(&self, peer: IpAddr, raw: &[u8]) {
        if !self.0.pre {
            return;
        }
        let Some(mut h) = self
            .0
            .peers
            .lock()
            .ok()
            .and_then(|g| g.get(&canonical(peer)).map(|r| r.header))
        else {
            return;
        };
        h.timestamp = now_ts();
        let mut b = Vec::with_capacity(raw.len() + 48);
        encode::route_monitoring(&h, raw, &mut b);
        self.emit(Kind::Pre, &Arc::from(b));
    }

    /// The daemon is about to stop its RIB threads: no more calls to them.
    pub fn stopping(&self) {
        self.0.stopping.store(true, Ordering::Relaxed);
    }

    /// At shutdown: Termination to every connected collector, then the
    /// tasks close their connections.
    pub fn shutdown(&self) {
        let mut b = Vec::new();
        encode::termination(
            encode::term_reason::ADMIN_CLOSE,
            Some("tesserad shutting down"),
            &mut b,
        );
        let m: Msg = Arc::from(b);
        self.0.closing.store(true, Ordering::Relaxed);
        for c in &self.0.collectors {
            c.push(&m);
            c.wake.notify_one();
        }
    }

    /// `show bmp`.
    pub fn info(&self) -> Vec<mgmt::proto::BmpCollectorInfo> {
        self.0
            .collectors
            .iter()
            .map(|c| {
                let (queued, dropped, overflows) =
                    c.q.lock()
                        .map_or((0, 0, 0), |q| (q.len() as u64, q.dropped, q.overflows));
                let m = c.cfg.monitoring;
                let mut mon = Vec::new();
                for (on, name) in [
                    (m.pre_policy, "pre-policy"),
                    (m.post_policy, "post-policy"),
                    (m.loc_rib, "loc-rib"),
                    (m.adj_rib_out_pre, "adj-rib-out-pre"),
                    (m.adj_rib_out_post, "adj-rib-out-post"),
                ] {
                    if on {
                        mon.push(name.to_string());
                    }
                }
                mgmt::proto::BmpCollectorInfo {
                    address: c.cfg.addr.to_string(),
                    state: state::name(c.state.load(Ordering::Relaxed)).to_string(),
                    since: c.since.load(Ordering::Relaxed),
                    monitoring: mon,
                    messages_sent: c.msgs_sent.load(Ordering::Relaxed),
                    bytes_sent: c.bytes_sent.load(Ordering::Relaxed),
                    queued,
                    queue_limit: c.cfg.queue as u64,
                    dropped,
                    overflows,
                    connects: c.connects.load(Ordering::Relaxed),
                    last_error: c.last_error.lock().map(|e| e.clone()).unwrap_or_default(),
                }
            })
            .collect()
    }
}
