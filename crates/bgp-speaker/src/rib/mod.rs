//! A RIB thread's state: one [`bgp_core::RibCore`] (the pure RIB
//! controller: the RIB part, the peer table, max-prefix, refresh, GR,
//! End-of-RIB, MRAI) plus what only a runtime has: each session's command
//! channel, the clock, the RIB dump writer, the best-route followers and
//! the metrics. [`RibState`] derefs to its core, so control requests (CLI,
//! metrics, reload) read the RIB and peer table directly.
//!
//! After every call into the core, [`RibState`] carries out the core's
//! [`Outbox`]: encoded UPDATEs and markers go straight onto the session's
//! writer queue (passing the cross-shard barrier under the session's lock,
//! [`bgp_core::PeerStatus::hand_over`]), commands to the session's command
//! channel, best-route changes to the followers, notes to the log, and
//! stage times to the histograms.
//!
//! In the sequential pipeline there is one such thread with the whole RIB.
//! In the sharded pipeline ([`crate::pipeline`]) there are S, each with the
//! prefixes [`bgp_rib::shard_for`] gives its [`Part`] and its own peer
//! table, policies, Adj-RIB-Out and encoders. Commands to a session that
//! must be sent once (Start, Stop, Terminate, ROUTE-REFRESH requests) come
//! from the primary shard only.
//!
//! Loop: block for one message, then take up to [`MAX_BURST`] more that are
//! already queued, apply them all, and only then run export for the
//! prefixes whose best path changed, when [`bgp_core::RoundPacer`] allows
//! (see [`run`]): after a round, the next waits [`bgp_core::ROUND_COST_FACTOR`]
//! times the round's CPU time, at least [`bgp_core::ROUND_FLOOR`] and at
//! most [`ROUND_MIN`]. That batches export work under load (one UPDATE per
//! attribute set, not per received UPDATE) while a trickle of input waits
//! at most a millisecond.

mod bmp;
mod dump;
pub mod ifaddr;
pub mod published;
pub mod views;

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use bgp_core::{Level, Outbox, Output, RoundPacer};
use bgp_rib::PeerId;
use bgp_wire::NotificationMessage;
use tokio::sync::mpsc::{Receiver, UnboundedSender};
use tracing::{debug, info, warn};

use crate::msg::SessionCmd;
use crate::stages::Stage;
pub use bgp_core::{
    MaxPrefix, MaxPrefixAction, Part, PeerEntry, PeerMeta, PolicyRef, RibCore, RibCounters,
    RibSettings, StaticRoute, UpState, ENHANCED_REFRESH_STALE, OUT_QUEUE_LIMIT, STATIC_PEER,
};
pub use dump::SharedRibDump;

/// Messages taken per wake-up before export runs.
pub const MAX_BURST: usize = 256;

/// Best-path changes after which a burst stops taking messages, so that
/// an export round runs (once the pacer allows). Without it one burst
/// of large batches could apply a whole full table before its first export
/// round, and the change list, the Adj-RIB-Out queue and the encoded
/// UPDATEs of the entire table were all alive at once: the peak RSS of a
/// full-table import was about twice the table's own size.
pub const MAX_CHANGED: usize = 32 * 1024;

pub use bgp_core::ROUND_MIN;

/// Below this a wait for the next export round sleeps the thread instead
/// of arming a tokio timer, whose wheel has millisecond granularity and
/// would round the rest of a [`bgp_core::ROUND_FLOOR`] spacing (a few
/// hundred microseconds) up to a whole millisecond. Input that arrives
/// meanwhile waits in the channel and is applied before the round.
const TIMER_GRAIN: Duration = Duration::from_millis(1);

/// The environment variable of the test hook [`RibState::hold_for_test`].
pub const HOLD_ENV: &str = "TESSERAD_TEST_HOLD_RIB";

/// The longest the test hook holds a RIB thread.
pub const HOLD_MAX: Duration = Duration::from_secs(60);

/// A control request: runs on the RIB thread with the whole state.
pub type ControlFn = Box<dyn FnOnce(&mut RibState) + Send>;

/// Everything the RIB thread receives, on one bounded channel so that it
/// can block on a single receiver.
pub enum RibMsg {
    Input(bgp_core::RibInput),
    /// Periodic wake-up (MRAI, back-pressure retries, timers).
    Tick,
    /// A control request (CLI, metrics, reload), run on the RIB thread.
    Control(ControlFn),
    /// A tracked next hop changed (from the next-hop watcher, `nht.rs`).
    Nexthop(bgp_core::NexthopUpdate),
    /// The RPKI VRP table in use changed (from `rpki.rs`): the new table
    /// and the VRP prefixes whose VRPs changed.
    Vrps(
        std::sync::Arc<rov::VrpTable>,
        std::sync::Arc<Vec<base::Prefix>>,
    ),
    /// The ASPAs in use changed (from `rpki.rs`): the new set and the
    /// customer ASes whose records changed.
    Aspas(std::sync::Arc<rov::AspaTable>, std::sync::Arc<Vec<u32>>),
}

impl std::fmt::Debug for RibMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RibMsg::Input(i) => f.debug_tuple("Input").field(i).finish(),
            RibMsg::Tick => f.write_str("Tick"),
            RibMsg::Control(_) => f.write_str("Control(..)"),
            RibMsg::Nexthop(u) => f.debug_tuple("Nexthop").field(u).finish(),
            RibMsg::Vrps(t, c) => write!(f, "Vrps({} VRPs, {} changed)", t.len(), c.len()),
            RibMsg::Aspas(t, c) => write!(f, "Aspas({} ASPAs, {} changed)", t.len(), c.len()),
        }
    }
}

/// [`bgp_core::fan_out`] as RIB thread messages.
pub fn fan_out(input: bgp_core::RibInput, n: usize) -> Vec<(usize, RibMsg)> {
    bgp_core::fan_out(input, n)
        .into_iter()
        .map(|(i, m)| (i, RibMsg::Input(m)))
        .collect()
}

/// The command channel of a session task.
pub type CmdSender = UnboundedSender<SessionCmd>;

/// How a RIB thread reaches one session: its command channel, and the
/// writer queue it publishes while Established.
#[derive(Clone, Debug)]
pub struct SessionLink {
    pub cmd: CmdSender,
    pub writer: std::sync::Arc<crate::msg::WriterSlot>,
}

/// A neighbour as a RIB thread receives it: the core's entry and the
/// session's link.
pub struct PeerHandle {
    pub entry: PeerEntry,
    pub link: SessionLink,
}

impl PeerHandle {
    /// A copy for another shard thread, before the session is up (see
    /// [`PeerEntry::copy_idle`]).
    pub fn copy_idle(&self) -> PeerHandle {
        PeerHandle {
            entry: self.entry.copy_idle(),
            link: self.link.clone(),
        }
    }
}

/// The process's monotonic time as the core's [`base::Instant`].
pub fn now() -> base::Instant {
    static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(std::time::Instant::now);
    base::Instant::from_nanos(u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// The stage clock given to the core (measurements only).
struct WallMeter;

impl bgp_core::Meter for WallMeter {
    fn now_ns(&self) -> u64 {
        now().as_nanos()
    }
}

/// Everything a RIB thread owns (see the module docs).
pub struct RibState {
    pub core: RibCore,
    /// By `PeerId`: how to reach the session.
    links: Vec<Option<SessionLink>>,
    out: Outbox,
    /// Per-UPDATE RIB processing time (batch time / batch size).
    pub latency: std::sync::Arc<mgmt::metrics::LatencyHistogram>,
    /// Periodic TABLE_DUMP_V2 snapshots (`[mrt] rib`).
    pub rib_dumper: Option<std::sync::Arc<SharedRibDump>>,
    /// Followers of the Loc-RIB's best routes (a forwarding plane).
    best_feed: crate::fib_feed::BestFeed,
    /// Followers of views (`crate::view_feed`).
    pub(crate) view_feed: views::ViewFeed,
    /// The RIB dump round this shard last contributed to.
    pub(crate) dumped_round: u64,
    /// Next-hop resolution, with `router.next_hop_tracking`.
    nht: Option<std::sync::Arc<crate::nht::Tracker>>,
    /// BMP export (`[bmp]`): post-policy and Loc-RIB changes.
    bmp: Option<crate::bmp::BmpHub>,
    /// Where this thread publishes its counts for readers that do not
    /// wait for it (`published.rs`).
    published: std::sync::Arc<published::PublishSlot>,
    /// When the last snapshot was taken, and how many so far.
    last_publish: Option<std::time::Instant>,
    publish_seq: u64,
    /// A change since the last snapshot that the throttle held back.
    unpublished: bool,
    /// Test hook (`TESSERAD_TEST_HOLD_RIB`, see [`RibState::hold_for_test`]).
    hold: Option<std::path::PathBuf>,
}

impl std::ops::Deref for RibState {
    type Target = RibCore;
    fn deref(&self) -> &RibCore {
        &self.core
    }
}

impl std::ops::DerefMut for RibState {
    fn deref_mut(&mut self) -> &mut RibCore {
        &mut self.core
    }
}

impl RibState {
    /// The state of one shard thread of a split RIB (`shards` is the
    /// number of [`bgp_rib::RibShard`]s inside this thread's own `Rib`).
    pub fn with_part(settings: RibSettings, shards: usize, part: Part) -> RibState {
        let mut core = RibCore::new(settings, shards, part, SystemTime::now());
        core.set_meter(Box::new(WallMeter));
        RibState {
            core,
            links: vec![None],
            out: Outbox::default(),
            latency: Default::default(),
            rib_dumper: None,
            best_feed: Default::default(),
            view_feed: Default::default(),
            bmp: None,
            dumped_round: 0,
            nht: None,
            published: Default::default(),
            last_publish: None,
            publish_seq: 0,
            unpublished: false,
            hold: std::env::var_os(HOLD_ENV)
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from),
        }
    }

    /// This thread's published counts (`published.rs`).
    pub fn published_slot(&self) -> std::sync::Arc<published::PublishSlot> {
        self.published.clone()
    }

    /// Takes a snapshot of what the readers that do not wait for this
    /// thread show (`/metrics`, `show protocols`, `show route count`, BMP
    /// statistics) and publishes it.
    pub fn publish(&mut self) {
        self.publish_seq += 1;
        let p = published::snapshot(self, self.publish_seq);
        self.published.set(p);
        self.last_publish = Some(std::time::Instant::now());
        self.unpublished = false;
    }

    /// [`Self::publish`] when [`published::PUBLISH_EVERY`] has passed
    /// since the last snapshot (after UPDATE batches and export rounds).
    fn maybe_publish(&mut self) {
        if self
            .last_publish
            .is_none_or(|t| t.elapsed() >= published::PUBLISH_EVERY)
        {
            self.publish();
        } else {
            self.unpublished = true;
        }
    }

    /// [`Self::publish`] if a change was held back by the throttle (the
    /// thread is about to wait for input: its counts are then current).
    pub(crate) fn publish_pending(&mut self) {
        if self.unpublished {
            self.publish();
        }
    }

    /// Test hook: with `TESSERAD_TEST_HOLD_RIB=PATH` in the environment,
    /// a batch of UPDATEs that arrives while the file PATH exists holds
    /// this thread in that batch (before applying it) until the file is
    /// removed, at most [`HOLD_MAX`]; the thread creates `PATH.held`
    /// while it holds. Lets an end-to-end test prove that readers answer
    /// while a RIB thread is busy, without timing thresholds
    /// (`crates/tesserad/tests/scrape_busy_rib.rs`). Unset: one branch on
    /// a `None` per batch.
    fn hold_for_test(&self) {
        let Some(path) = &self.hold else {
            return;
        };
        if !path.exists() {
            return;
        }
        let mut marker = path.clone().into_os_string();
        marker.push(".held");
        let _ = std::fs::write(&marker, b"held\n");
        let start = std::time::Instant::now();
        while path.exists() && start.elapsed() < HOLD_MAX {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_file(&marker);
    }

    /// Switches next-hop tracking on (before any route): next hops are
    /// resolved through `tracker` (see [`crate::nht`]).
    pub fn track_nexthops(&mut self, tracker: std::sync::Arc<crate::nht::Tracker>) {
        self.core.enable_nexthop_tracking();
        self.nht = Some(tracker);
    }

    /// Adds a neighbour under `id` (see [`RibCore::insert_peer`]).
    pub fn insert_peer(&mut self, id: PeerId, h: PeerHandle) {
        let i = usize::from(id.0);
        if self.links.len() <= i {
            self.links.resize_with(i + 1, || None);
        }
        if let Some(slot) = self.links.get_mut(i) {
            *slot = Some(h.link);
        }
        self.core.insert_peer(id, h.entry);
    }

    /// Removes a neighbour: terminates its session and flushes its routes.
    pub fn remove_peer(&mut self, id: PeerId, notification: NotificationMessage) {
        self.core.remove_peer(id, notification, &mut self.out);
        self.deliver();
        if let Some(slot) = self.links.get_mut(usize::from(id.0)) {
            *slot = None;
        }
    }

    /// Sends `cmd` to `id`'s session now (control requests; the caller
    /// decides whether this shard is the one that sends).
    pub fn send_cmd(&self, id: PeerId, cmd: SessionCmd) {
        if let Some(Some(l)) = self.links.get(usize::from(id.0)) {
            let _ = l.cmd.send(cmd);
        }
    }

    /// See [`RibCore::refresh_in`].
    pub fn refresh_in(&mut self, id: PeerId, prefer_wire: bool) {
        self.core.refresh_in(id, prefer_wire, &mut self.out);
        self.deliver();
    }

    /// After a graceful restart: see [`crate::fib_feed::BestFeed::await_sync`].
    pub fn await_best_sync(&mut self, gate: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        self.best_feed.await_sync(gate);
    }

    /// Stops following the best routes (at shutdown: the sessions closing
    /// then are no routing change for a forwarding plane to follow; what
    /// it keeps at exit is its own business, e.g. `kernel_persist`).
    pub fn close_best_feed(&mut self) {
        self.best_feed = Default::default();
        self.core.want_best = self.bmp_wants_best();
    }

    /// Follows the best routes of this shard: the whole Loc-RIB now, then
    /// every change.
    pub fn subscribe_best(&mut self, tx: crate::fib_feed::BestSender) {
        self.best_feed.subscribe(self.core.best_snapshot(), tx);
        self.core.want_best = !self.best_feed.is_empty() || self.bmp_wants_best();
    }

    /// Reports post-policy Adj-RIB-In and Loc-RIB changes to BMP.
    pub fn set_bmp(&mut self, hub: crate::bmp::BmpHub) {
        if hub.loc_rib() || hub.adj_rib_out_pre() {
            self.core.want_best = true;
        }
        self.bmp = Some(hub);
    }

    fn bmp_wants_best(&self) -> bool {
        self.bmp
            .as_ref()
            .is_some_and(|h| h.loc_rib() || h.adj_rib_out_pre())
    }

    pub(crate) fn handle(&mut self, msg: RibMsg) {
        // Route changes (a batch of UPDATEs, next-hop and RPKI changes,
        // which can come in bursts) publish when PUBLISH_EVERY has
        // passed; session events and ticks at once; a control job only
        // where its caller asks (`pipeline::call_all` and `Control::call`
        // publish before they answer; a table walk of the gRPC API need
        // not).
        let batch = matches!(
            msg,
            RibMsg::Input(bgp_core::RibInput::Updates { .. })
                | RibMsg::Nexthop(_)
                | RibMsg::Vrps(..)
                | RibMsg::Aspas(..)
        );
        if matches!(msg, RibMsg::Input(bgp_core::RibInput::Updates { .. })) {
            self.hold_for_test();
        }
        let control = matches!(msg, RibMsg::Control(_));
        match msg {
            RibMsg::Input(i) => {
                let post = self
                    .bmp
                    .as_ref()
                    .filter(|h| h.post_policy())
                    .and_then(|_| bmp::touched(&i));
                let came_up = match &i {
                    bgp_core::RibInput::Up { peer, .. } => Some(*peer),
                    _ => None,
                };
                self.core.handle(now(), i, &mut self.out);
                if let (Some((peer, keys)), Some(h)) = (post, self.bmp.as_ref()) {
                    self.bmp_post(h, peer, &keys);
                }
                if let (Some(peer), Some(h)) = (came_up, self.bmp.as_ref()) {
                    if h.adj_rib_out_pre() {
                        self.bmp_out_pre_peer(h, peer);
                    }
                }
            }
            RibMsg::Tick => {
                self.maybe_dump_rib();
                self.core.tick(now(), &mut self.out);
            }
            RibMsg::Control(f) => f(self),
            RibMsg::Nexthop(u) => self.core.nexthop_update(u, &mut self.out),
            RibMsg::Vrps(t, c) => {
                self.core.vrp_update(t, &c);
            }
            RibMsg::Aspas(t, c) => {
                self.core.aspa_update(t, &c);
            }
        }
        self.deliver();
        if batch {
            self.maybe_publish();
        } else if !control {
            self.publish();
        }
    }

    /// Exports the changes collected since the last call and hands the
    /// packed UPDATEs to the sessions that can take them.
    pub(crate) fn propagate(&mut self) {
        self.core.propagate(now(), &mut self.out);
        self.deliver();
        self.maybe_publish();
    }

    /// Runs the export round now: everything applied so far is exported,
    /// encoded and handed to the sessions (ignoring MRAI only in that a
    /// peer with MRAI 0 is flushed). For in-process tests and benchmarks,
    /// as a control job.
    pub fn settle(&mut self) {
        self.propagate();
    }

    /// Total seconds since the RIB thread started.
    pub fn uptime(&self) -> Duration {
        self.core.started.elapsed().unwrap_or_default()
    }

    /// Resolves the next hops the core started using (at once, so that
    /// the next export round already sees their state) and lets go of the
    /// ones it stopped using.
    fn resolve_nexthops(&mut self) {
        self.core.drain_nexthop_watch(&mut self.out);
        if self.out.nexthops.is_empty() {
            return;
        }
        let watches = std::mem::take(&mut self.out.nexthops);
        if let Some(t) = self.nht.clone() {
            for w in &watches {
                if w.track {
                    let u = t.track(w.nexthop);
                    self.core.nexthop_update(u, &mut self.out);
                } else {
                    t.untrack(w.nexthop);
                }
            }
        }
        self.out.nexthops = watches;
        self.out.nexthops.clear();
    }

    /// Carries out what the core left in the outbox.
    fn deliver(&mut self) {
        self.resolve_nexthops();
        let mut out = std::mem::take(&mut self.out);
        for o in out.out.drain(..) {
            let peer = o.peer();
            let Some(Some(link)) = self.links.get(usize::from(peer.0)) else {
                continue;
            };
            match o {
                Output::Cmd { cmd, .. } => {
                    let _ = link.cmd.send(cmd);
                }
                Output::Send { bytes, markers, .. } => {
                    let Some(e) = self.core.peer(peer) else {
                        continue;
                    };
                    if let (Some(h), Some(u)) = (self.bmp.as_ref(), e.up.as_ref()) {
                        // RFC 8671: post-policy Adj-RIB-Out, as sent.
                        if h.adj_rib_out_post() {
                            for b in &bytes {
                                h.sent_updates(u.remote_addr.ip(), b);
                            }
                        }
                    }
                    let session = e.up.as_ref().map_or(0, |u| u.session);
                    let status = &e.status;
                    status.hand_over(bytes, markers, |buf| {
                        // Straight onto the connection's writer queue; a
                        // session gone since this was encoded drops it.
                        if let Err(buf) = link.writer.send(session, buf) {
                            status.unqueue(buf.len() as u64);
                        }
                    });
                }
            }
        }
        if !out.best.is_empty() {
            if let Some(h) = self.bmp.as_ref().filter(|h| h.loc_rib()) {
                self.bmp_loc(h, &out.best);
            }
            if let Some(h) = self.bmp.as_ref().filter(|h| h.adj_rib_out_pre()) {
                self.bmp_out_pre(h, &out.best);
            }
            if self.best_feed.is_empty() {
                out.best.clear();
            } else {
                self.best_feed.publish(&mut out.best);
            }
            self.core.want_best = !self.best_feed.is_empty() || self.bmp_wants_best();
        }
        if !out.views.is_empty() {
            self.publish_views(&mut out.views);
        }
        // The deferral ended and what it held back went out just above (a
        // deferral ended by the timer leaves its changes to the next
        // export round).
        if self.best_feed.awaiting_sync()
            && !self.core.selection_deferred()
            && self.core.pending_changes() == 0
        {
            self.best_feed.synced();
        }
        for (peer, note) in out.notes.drain(..) {
            let name = self
                .core
                .peer(peer)
                .map_or_else(|| format!("#{}", peer.0), |e| e.meta.name.clone());
            match note.level() {
                Level::Debug => debug!(peer = %name, "{note}"),
                Level::Info => info!(peer = %name, "{note}"),
                Level::Warn => warn!(peer = %name, "{note}"),
            }
        }
        let stages = &crate::stages::STAGES;
        for s in out.samples.drain(..) {
            let stage = match s.stage {
                bgp_core::Stage::Batch => {
                    self.latency.record_ns_n(s.ns_each, s.n);
                    continue;
                }
                bgp_core::Stage::Policy => Stage::Policy,
                bgp_core::Stage::RibUpdate => Stage::RibUpdate,
                bgp_core::Stage::BestPath => Stage::BestPath,
                bgp_core::Stage::Export => Stage::Export,
            };
            stages.record_ns_n(stage, s.ns_each, s.n);
        }
        out.clear();
        self.out = out;
    }
}

/// What the shard threads of one pipeline share about their input: how
/// many are applying a burst right now. A session's batch is split over
/// every shard, so while one shard still has input queued the others'
/// input is most likely still arriving too: a shard whose own channel ran
/// dry then is not idle, the pipeline is not, and an export round at once
/// would coalesce fewer best-path changes than the single RIB thread
/// does (which exports when the whole input runs dry). See [`run`].
#[derive(Debug, Default)]
pub struct Inflow {
    busy: std::sync::atomic::AtomicUsize,
}

impl Inflow {
    /// A shard starts applying a burst.
    fn enter(&self) {
        self.busy.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// A shard's burst ended; whether another shard is still in one.
    fn leave(&self) -> bool {
        self.busy.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) > 1
    }
}

/// The RIB thread's loop; returns when every sender is gone or shutdown
/// was requested.
///
/// Export rounds are paced by [`bgp_core::RoundPacer`]: after a round,
/// the next may run once [`bgp_core::ROUND_COST_FACTOR`] times that
/// round's CPU time has passed, at least [`bgp_core::ROUND_FLOOR`] and at
/// most [`ROUND_MIN`]. Input arriving within that time is applied as it
/// comes and exported together when the spacing is over; input arriving
/// after it is exported at once. Under
/// load (expensive rounds: thousands of changes, encoding for many peers)
/// this coalesces the best-path changes of many batches into one round
/// every [`ROUND_MIN`] (a prefix announced by ten peers is exported once,
/// not ten times), which matters most for shard threads: each sees a
/// fraction of every batch, and without the spacing ran one small round
/// per batch, exporting and encoding ~8x more UPDATEs at 8 shards than the
/// sequential thread for the same table. A trickle (cheap rounds of a few
/// changes: steady churn) waits at most [`bgp_core::ROUND_FLOOR`] for its
/// round, not up to [`ROUND_MIN`] (issue 17, scenario (h)).
///
/// Shards (`inflow` shared by the shard threads of one pipeline): a burst
/// that ends while another shard is still applying one does not count as
/// idle: its round waits up to [`ROUND_MIN`] for more input, as under
/// load, and runs at once only when no shard has input left (or the wait
/// is over; [`RoundPacer::burst_ended`]). One shard alone is paced as
/// above.
pub fn run(mut rx: Receiver<RibMsg>, mut st: RibState, inflow: std::sync::Arc<Inflow>) {
    // A timer for the bounded wait; the channel itself is tokio's.
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        warn!("RIB thread: no timer runtime; exporting after every burst");
        return run_unspaced(rx, st);
    };
    let mut pacer = RoundPacer::new();
    let mut dirty = false;
    loop {
        let msg = if dirty {
            // A round of mostly new prefixes is due at a size, not a time
            // (`RibCore::round_due`).
            let wait = if st.core.round_due() {
                Duration::ZERO
            } else {
                pacer.wait(now())
            };
            if wait.is_zero() {
                None
            } else if wait < TIMER_GRAIN {
                std::thread::sleep(wait);
                None
            } else {
                match rt.block_on(async { tokio::time::timeout(wait, rx.recv()).await }) {
                    Ok(Some(m)) => Some(m),
                    Ok(None) => {
                        st.propagate();
                        break;
                    }
                    Err(_) => None,
                }
            }
        } else {
            match next_or_idle(&mut rx, &mut st) {
                Some(m) => Some(m),
                None => break,
            }
        };
        match msg {
            Some(m) => {
                inflow.enter();
                st.handle(m);
                burst(&mut rx, &mut st);
                let others_busy = inflow.leave();
                dirty = true;
                if pacer.burst_ended(now(), others_busy) || st.core.round_due() {
                    paced_round(&mut st, &mut pacer);
                    dirty = false;
                }
            }
            None => {
                // The spacing is over: what queued meanwhile goes into
                // this round too.
                burst(&mut rx, &mut st);
                paced_round(&mut st, &mut pacer);
                dirty = false;
            }
        }
        if st.core.shutdown_requested() {
            break;
        }
    }
}

/// The next message, blocking; before blocking on an empty channel the
/// thread publishes what the throttle of [`RibState::maybe_publish`] held
/// back, so an idle thread's published counts are current. `None`: every
/// sender is gone.
fn next_or_idle(rx: &mut Receiver<RibMsg>, st: &mut RibState) -> Option<RibMsg> {
    match rx.try_recv() {
        Ok(m) => Some(m),
        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => None,
        Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
            st.publish_pending();
            rx.blocking_recv()
        }
    }
}

/// Applies up to [`MAX_BURST`] messages that are already queued (fewer
/// once [`MAX_CHANGED`] best-path changes wait for export).
fn burst(rx: &mut Receiver<RibMsg>, st: &mut RibState) {
    for _ in 0..MAX_BURST {
        if st.core.pending_changes() >= MAX_CHANGED || st.core.round_due() {
            break;
        }
        match rx.try_recv() {
            Ok(m) => st.handle(m),
            Err(_) => break,
        }
    }
}

/// One export round, its cost (this thread's CPU time; wall time where
/// that clock is missing) told to the pacer.
fn paced_round(st: &mut RibState, pacer: &mut RoundPacer) {
    let wall = std::time::Instant::now();
    // This thread's CPU time: a round preempted by other processes does
    // not count as expensive.
    let cpu = base::thread_cpu_time();
    st.propagate();
    let cost = match (cpu, base::thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    };
    pacer.round_done(now(), cost);
}

/// [`run`] without round spacing: an export round after every burst.
fn run_unspaced(mut rx: Receiver<RibMsg>, mut st: RibState) {
    while let Some(msg) = next_or_idle(&mut rx, &mut st) {
        st.handle(msg);
        burst(&mut rx, &mut st);
        st.propagate();
        if st.core.shutdown_requested() {
            break;
        }
    }
}
