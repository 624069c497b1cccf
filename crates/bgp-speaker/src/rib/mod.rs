//! A RIB thread: it owns a [`bgp_rib::Rib`] and a copy of the peer table,
//! and is the only thread that touches them. Sessions feed it [`RibInput`]s
//! through one bounded channel; it answers with encoded UPDATEs on each
//! session's command channel. Control requests (CLI, metrics, reload)
//! arrive on the same channel as closures, so they see a consistent RIB
//! without locks.
//!
//! In the sequential pipeline there is one such thread with the whole RIB.
//! In the sharded pipeline ([`crate::pipeline`]) there are S, each with the
//! prefixes [`bgp_rib::shard_for`] gives its [`Part`] and its own peer
//! table, policies, Adj-RIB-Out and encoders: a shard exports and encodes
//! its prefixes for every peer by itself. What spans shards goes through
//! [`PeerStatus`](crate::msg::PeerStatus) atomics (max-prefix totals) and
//! [`FlushBarrier`](crate::msg::FlushBarrier)s (End-of-RIB, BoRR/EoRR
//! order); control requests fan out to every shard and merge. Commands to a
//! session that must be sent once (Start, Stop, Terminate, ROUTE-REFRESH
//! requests) come from the primary shard only.
//!
//! Loop: block for one message, then take up to [`MAX_BURST`] more that are
//! already queued, apply them all, and only then run export for the
//! prefixes whose best path changed, at most once per [`ROUND_MIN`] (see
//! [`run`]). That batches export work under load (one UPDATE per attribute
//! set, not per received UPDATE) while keeping latency low when idle.

mod dump;
mod export;
mod flush;
pub mod ifaddr;
pub mod peer;
mod policy;
mod statics;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use base::{AfiSafi, Asn, Prefix};
use bgp_rib::{BestPathConfig, ImportCheck, PeerConfig, PeerId, PeerRole, Rib};
use bgp_wire::consts::notify;
use bgp_wire::NotificationMessage;
use tokio::sync::mpsc::Receiver;
use tracing::{debug, info, warn};

use crate::msg::{DecodedUpdate, RibInput, RibMsg, SessionCmd, SessionUp};
use crate::stages::Stage;
pub use dump::SharedRibDump;
pub use peer::{MaxPrefix, MaxPrefixAction, PeerEntry, PeerMeta, PolicyRef, UpState};
pub use statics::StaticRoute;

/// The pseudo-peer that originates static routes.
pub const STATIC_PEER: PeerId = PeerId(0);

/// Messages taken per wake-up before export runs.
pub const MAX_BURST: usize = 256;

/// Best-path changes after which a burst stops taking messages, so that
/// an export round runs (once [`ROUND_MIN`] allows). Without it one burst
/// of large batches could apply a whole full table before its first export
/// round, and the change list, the Adj-RIB-Out queue and the encoded
/// UPDATEs of the entire table were all alive at once: the peak RSS of a
/// full-table import was about twice the table's own size.
pub const MAX_CHANGED: usize = 32 * 1024;

/// Least time between two export rounds while input keeps arriving (see
/// [`run`]). Far below any MRAI (RFC 4271 §9.2.1.1: 30 s for eBGP by
/// default elsewhere); it bounds the delay a route waits under load.
pub const ROUND_MIN: Duration = Duration::from_millis(5);

/// How long routes flagged stale by a peer's Beginning-of-RIB-Refresh wait
/// for its End-of-RIB-Refresh (RFC 7313 §4 leaves the value to us; FRR and
/// BIRD use minutes too).
pub const ENHANCED_REFRESH_STALE: Duration = Duration::from_secs(360);

/// ROUTE-REFRESH subtypes (RFC 7313 §3).
mod route_refresh {
    pub const REQUEST: u8 = 0;
    pub const BORR: u8 = 1;
    pub const EORR: u8 = 2;
}

fn route_refresh_msg(af: AfiSafi, subtype: u8) -> bgp_wire::RouteRefresh {
    bgp_wire::RouteRefresh {
        afi: af.afi,
        safi: af.safi,
        subtype,
    }
}

/// Stop handing a session more UPDATE bytes while this many are unwritten.
pub const OUT_QUEUE_LIMIT: u64 = 16 << 20;

/// A control request: runs on the RIB thread with the whole state.
pub type ControlFn = Box<dyn FnOnce(&mut RibState) + Send>;

/// Which part of the RIB a RIB thread owns: the prefixes that
/// [`bgp_rib::shard_for`]`(prefix, count)` maps to `index`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub index: usize,
    pub count: usize,
}

impl Part {
    /// The whole RIB (sequential pipeline).
    pub const WHOLE: Part = Part { index: 0, count: 1 };

    pub fn owns(&self, prefix: &Prefix) -> bool {
        self.count <= 1 || bgp_rib::shard_for(prefix, self.count) == self.index
    }
    /// The shard that sends the session commands that must go once.
    pub fn is_primary(&self) -> bool {
        self.index == 0
    }
}

/// Global settings the RIB thread needs.
#[derive(Clone, Debug)]
pub struct RibSettings {
    pub router_id: Ipv4Addr,
    pub cluster_id: Ipv4Addr,
    pub local_asn: Asn,
    pub bestpath: BestPathConfig,
}

/// Counters of the RIB thread, for `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct RibCounters {
    pub updates: u64,
    pub prefixes_announced: u64,
    pub prefixes_withdrawn: u64,
    pub loops_rejected: u64,
    pub best_changes: u64,
    pub updates_sent: u64,
    pub bytes_sent: u64,
    /// Sum of wall time spent applying UPDATE batches, ns.
    pub apply_ns: u64,
    /// Sum of wall time spent exporting, ns.
    pub export_ns: u64,
}

/// Everything the RIB thread owns.
pub struct RibState {
    pub settings: RibSettings,
    /// The prefixes this thread owns.
    pub part: Part,
    pub rib: Rib,
    /// By `PeerId`; slot 0 is the static pseudo-peer (always `None` here).
    pub peers: Vec<Option<PeerEntry>>,
    pub statics: Vec<StaticRoute>,
    pub counters: RibCounters,
    pub started: SystemTime,
    /// Per-UPDATE RIB processing time (batch time / batch size).
    pub latency: std::sync::Arc<mgmt::metrics::LatencyHistogram>,
    /// Roles for the propagation rules, rebuilt when a peer goes up/down.
    roles: Vec<Option<PeerRole>>,
    /// Periodic TABLE_DUMP_V2 snapshots (`[mrt] rib`).
    pub rib_dumper: Option<std::sync::Arc<SharedRibDump>>,
    /// Followers of the Loc-RIB's best routes (a forwarding plane).
    pub best_feed: crate::fib_feed::BestFeed,
    changed: Vec<Prefix>,
    scratch: Vec<u8>,
    shutdown: bool,
    /// Per peer id: the received count this shard last added to
    /// `PeerStatus::rib_received`.
    reported: Vec<u64>,
    /// The RIB dump round this shard last contributed to.
    pub(crate) dumped_round: u64,
}

impl RibState {
    pub fn new(settings: RibSettings, shards: usize) -> RibState {
        RibState::with_part(settings, shards, Part::WHOLE)
    }

    /// The state of one shard thread of a split RIB (`shards` is the
    /// number of [`bgp_rib::RibShard`]s inside this thread's own `Rib`).
    pub fn with_part(settings: RibSettings, shards: usize, part: Part) -> RibState {
        let mut rib = Rib::new(shards, settings.bestpath);
        rib.add_peer(
            STATIC_PEER,
            PeerConfig {
                asn: settings.local_asn,
                bgp_id: settings.router_id,
                addr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                ebgp: false,
                keep_pre_policy: false,
                export: false,
            },
        );
        RibState {
            settings,
            part,
            rib,
            peers: vec![None],
            statics: Vec::new(),
            counters: RibCounters::default(),
            started: SystemTime::now(),
            latency: Default::default(),
            roles: vec![None],
            rib_dumper: None,
            best_feed: Default::default(),
            changed: Vec::new(),
            scratch: Vec::new(),
            shutdown: false,
            reported: Vec::new(),
            dumped_round: 0,
        }
    }

    /// Adds a neighbour under `id` (ids are never reused: a neighbour reset
    /// by a reload gets a new one, so late messages from the old session
    /// cannot touch the new one).
    pub fn insert_peer(&mut self, id: PeerId, entry: PeerEntry) {
        let i = id.0 as usize;
        if self.peers.len() <= i {
            self.peers.resize_with(i + 1, || None);
        }
        if let Some(slot) = self.peers.get_mut(i) {
            *slot = Some(entry);
        }
        self.rebuild_roles();
    }

    /// Removes a neighbour: terminates its session and flushes its routes.
    pub fn remove_peer(&mut self, id: PeerId, notification: NotificationMessage) {
        let Some(Some(entry)) = self.peers.get_mut(id.0 as usize).map(Option::take) else {
            return;
        };
        if self.part.is_primary() {
            let _ = entry.cmd.send(SessionCmd::Terminate { notification });
        }
        if entry.up.is_some() {
            let _ = self.rib.peer_down(id, &mut self.changed);
        }
        // Take this shard's share out of the peer's total.
        if let Some(r) = self.reported.get_mut(id.0 as usize) {
            let _ =
                entry
                    .status
                    .rib_received
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                        Some(v.saturating_sub(*r))
                    });
            *r = 0;
        }
        self.rebuild_roles();
    }

    pub fn peer(&self, id: PeerId) -> Option<&PeerEntry> {
        self.peers.get(id.0 as usize)?.as_ref()
    }
    pub fn peer_mut(&mut self, id: PeerId) -> Option<&mut PeerEntry> {
        self.peers.get_mut(id.0 as usize)?.as_mut()
    }
    /// Peers with their ids, in id order.
    pub fn peer_iter(&self) -> impl Iterator<Item = (PeerId, &PeerEntry)> + '_ {
        self.peers
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((PeerId(i as u16), p.as_ref()?)))
    }
    /// Finds a neighbour by name or address.
    pub fn find_peer(&self, key: &str) -> Option<PeerId> {
        let addr: Option<IpAddr> = key.parse().ok();
        self.peer_iter()
            .find(|(_, p)| p.meta.name == key || Some(p.meta.addr) == addr)
            .map(|(id, _)| id)
    }

    /// Asks the loop to exit after this wake-up.
    pub fn request_shutdown(&mut self) {
        self.shutdown = true;
    }

    /// Whether [`Self::request_shutdown`] was called.
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown
    }

    fn rebuild_roles(&mut self) {
        self.roles = self
            .peers
            .iter()
            .map(|p| {
                let p = p.as_ref()?;
                let up = p.up.as_ref()?;
                Some(PeerRole {
                    ebgp: p.meta.ebgp,
                    rr_client: p.meta.rr_client,
                    rs_client: p.meta.rs_client,
                    role: p.meta.role,
                    bgp_id: up.negotiated.peer_bgp_id,
                })
            })
            .collect();
    }

    pub(crate) fn handle(&mut self, msg: RibMsg) {
        match msg {
            RibMsg::Input(i) => self.handle_input(i),
            RibMsg::Tick => self.on_tick(),
            RibMsg::Control(f) => f(self),
        }
    }

    fn on_tick(&mut self) {
        self.maybe_dump_rib();
        let now = std::time::Instant::now();
        for i in 0..self.peers.len() {
            let Some(Some(e)) = self.peers.get_mut(i) else {
                continue;
            };
            if e.stale_until.is_some_and(|t| t <= now) {
                e.stale_until = None;
                info!(peer = %e.meta.name, "graceful restart timer expired; flushing stale routes");
                let _ = self.rib.sweep_stale(PeerId(i as u16), &mut self.changed);
            }
            if let Some(up) = e.up.as_mut() {
                let rib = &mut self.rib;
                let changed = &mut self.changed;
                let name = &e.meta.name;
                up.refreshing.retain(|&(afi, deadline)| {
                    if deadline > now {
                        return true;
                    }
                    warn!(peer = %name, ?afi, "no End-of-RIB-Refresh in time; purging stale routes");
                    let _ = rib.sweep_stale_afi(PeerId(i as u16), afi, changed);
                    false
                });
            }
        }
    }

    fn handle_input(&mut self, input: RibInput) {
        match input {
            RibInput::Up { peer, up } => self.on_up(peer, *up),
            RibInput::Updates { peer, updates } => self.on_updates(peer, updates),
            RibInput::RouteRefresh {
                peer,
                family,
                subtype,
                barrier,
            } => {
                self.on_route_refresh(peer, family, subtype, barrier);
                self.sync_received(peer);
            }
            RibInput::Down {
                peer,
                reason,
                graceful,
            } => {
                if let Some(e) = self.peer_mut(peer) {
                    e.last_down = Some((SystemTime::now(), format!("{reason:?}")));
                }
                self.on_down(peer, graceful);
                self.sync_received(peer);
            }
        }
    }

    /// Adds the change of this shard's received count for `id` to the
    /// peer's total over all shards (max-prefix, RFC 4486).
    fn sync_received(&mut self, id: PeerId) {
        let now = self.rib.peer_counts(id).map_or(0, |c| c.received);
        let i = id.0 as usize;
        if self.reported.len() <= i {
            self.reported.resize(i + 1, 0);
        }
        let Some(r) = self.reported.get_mut(i) else {
            return;
        };
        if *r == now {
            return;
        }
        let Some(Some(e)) = self.peers.get(i) else {
            return;
        };
        let old = *r;
        *r = now;
        let _ = e
            .status
            .rib_received
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_add(now).saturating_sub(old))
            });
    }

    fn on_up(&mut self, id: PeerId, up: SessionUp) {
        let Some(entry) = self.peers.get_mut(id.0 as usize).and_then(Option::as_mut) else {
            return;
        };
        let n = &up.negotiated;
        info!(peer = %entry.meta.name, remote = %up.remote_addr, "session established");
        let encoder = export::encoder_for(&entry.meta, &up);
        let add_path_send = export::add_path_send(&entry.meta, &up);
        let cfg = PeerConfig {
            asn: n.peer_asn,
            bgp_id: n.peer_bgp_id,
            addr: up.remote_addr.ip(),
            ebgp: entry.meta.ebgp,
            keep_pre_policy: entry.meta.keep_pre_policy,
            export: true,
        };
        // Stale routes from a graceful restart survive only if the new
        // session negotiated GR again (RFC 4724 §4.2); they are swept by
        // End-of-RIB or the restart timer.
        let sweep_now = entry.stale_until.is_some() && n.graceful_restart.is_none();
        if sweep_now {
            entry.stale_until = None;
        }
        entry.up = Some(UpState {
            eor_owed: n.families.clone(),
            eor_received: Vec::new(),
            refresh_owed: Vec::new(),
            refreshing: Vec::new(),
            negotiated: up.negotiated,
            local_addr: up.local_addr,
            remote_addr: up.remote_addr,
            encoder,
            eor_barrier: up.eor_barrier,
            since: up.since,
            last_flush: std::time::Instant::now(),
        });
        self.rib.add_peer(id, cfg);
        let _ = self.rib.set_add_path_send(id, add_path_send);
        if sweep_now {
            let _ = self.rib.sweep_stale(id, &mut self.changed);
        }
        self.rebuild_roles();
        self.export_full(id);
    }

    fn on_down(&mut self, id: PeerId, graceful: bool) {
        let Some(entry) = self.peer_mut(id) else {
            return;
        };
        let Some(up) = entry.up.take() else {
            return;
        };
        let gr = up.negotiated.graceful_restart.as_ref().filter(|_| graceful);
        if let Some(gr) = gr {
            // RFC 4724 §4.2: helper mode keeps the routes, marked stale,
            // for the peer's Restart Time.
            let restart = Duration::from_secs(u64::from(gr.restart_time.max(1)));
            entry.stale_until = Some(std::time::Instant::now() + restart);
            info!(peer = %entry.meta.name, restart_s = restart.as_secs(), "session down; keeping its routes as stale (graceful restart)");
            let _ = self.rib.mark_stale(id);
        } else {
            info!(peer = %entry.meta.name, "session down; flushing its routes");
            entry.stale_until = None;
            let _ = self.rib.peer_down(id, &mut self.changed);
        }
        self.rebuild_roles();
    }

    fn on_updates(&mut self, id: PeerId, updates: Vec<DecodedUpdate>) {
        let t0 = std::time::Instant::now();
        let Some(entry) = self.peers.get(id.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        if entry.up.is_none() {
            return;
        }
        let from = self.roles.get(id.0 as usize).copied().flatten();
        let mut importer = policy::Importer::new(entry, &self.settings);
        let n_updates = updates.len().max(1) as u64;
        let mut policy_ns = 0u64;
        for mut u in updates {
            self.counters.updates += 1;
            if let Some(af) = u.end_of_rib {
                debug!(peer = %entry.meta.name, ?af, "End-of-RIB received");
                if entry.stale_until.is_some() {
                    let _ = self.rib.sweep_stale_afi(id, af.afi, &mut self.changed);
                }
                continue;
            }
            if let (Some(attrs), Some(from)) = (u.attrs.as_mut(), from.as_ref()) {
                let tp = std::time::Instant::now();
                let check = policy::import_check(&self.settings, entry, from, attrs);
                // Only an OTC to add (RFC 9234 §5) needs a private copy of
                // attributes other shards may share.
                let allowed = match check {
                    ImportCheck::AddOtc(_) => check.apply(std::sync::Arc::make_mut(attrs)),
                    _ => check.is_accept(),
                };
                policy_ns += crate::stages::elapsed_ns(tp);
                if !allowed {
                    // RFC 4271 §9.1.2 / RFC 4456 §8: a looped route is not
                    // eligible; drop what this peer had for these prefixes.
                    self.counters.loops_rejected += u.announce.len() as u64;
                    u.withdraw.append(&mut u.announce);
                }
            }
            self.counters.prefixes_announced += u.announce.len() as u64;
            self.counters.prefixes_withdrawn += u.withdraw.len() as u64;
            if let Err(e) = self.rib.apply_update(
                id,
                &u.announce,
                u.attrs.as_deref(),
                &u.withdraw,
                &mut importer,
                &mut self.changed,
            ) {
                warn!(peer = %entry.meta.name, error = %e, "UPDATE not applied");
            }
        }
        let dt = t0.elapsed().as_nanos() as u64;
        self.counters.apply_ns += dt;
        self.latency.record_ns_n(dt / n_updates, n_updates);
        let stages = &crate::stages::STAGES;
        stages.record_ns_n(Stage::Policy, policy_ns / n_updates, n_updates);
        stages.record_ns_n(
            Stage::RibUpdate,
            dt.saturating_sub(policy_ns) / n_updates,
            n_updates,
        );
        self.sync_received(id);
        self.check_max_prefix(id);
    }

    /// Acts on the peer's received count summed over every shard; the
    /// shard that first sees the limit crossed acts, once per session.
    fn check_max_prefix(&mut self, id: PeerId) {
        let Some(entry) = self.peer_mut(id) else {
            return;
        };
        let Some(mp) = entry.meta.max_prefix else {
            return;
        };
        let received = entry.status.rib_received.load(Ordering::Relaxed);
        let tripped = &entry.status.max_prefix_tripped;
        if received > mp.limit && !tripped.swap(true, Ordering::Relaxed) {
            warn!(peer = %entry.meta.name, received, limit = mp.limit, action = ?mp.action, "max-prefix exceeded");
            let family = entry
                .up
                .as_ref()
                .and_then(|u| u.negotiated.families.first().copied())
                .unwrap_or(AfiSafi::IPV4_UNICAST);
            let mut data = Vec::with_capacity(7);
            data.extend_from_slice(&family.afi.to_u16().to_be_bytes());
            data.push(family.safi.to_u8());
            data.extend_from_slice(&(mp.limit.min(u32::MAX as u64) as u32).to_be_bytes());
            // RFC 4486 §4: Cease, subcode 1, data AFI/SAFI/upper bound.
            let notification =
                NotificationMessage::new(notify::CEASE, notify::MAXIMUM_PREFIXES_REACHED, data);
            match mp.action {
                MaxPrefixAction::Warn => {}
                MaxPrefixAction::Restart(d) => {
                    let _ = entry.cmd.send(SessionCmd::Stop {
                        notification,
                        restart_after: Some(d),
                    });
                }
                MaxPrefixAction::Shutdown => {
                    entry.disabled = true;
                    let _ = entry.cmd.send(SessionCmd::Stop {
                        notification,
                        restart_after: None,
                    });
                }
            }
        } else if mp.warn_percent > 0
            && received * 100 >= mp.limit * u64::from(mp.warn_percent)
            && !tripped.load(Ordering::Relaxed)
            && !entry.status.max_prefix_warned.swap(true, Ordering::Relaxed)
        {
            warn!(peer = %entry.meta.name, received, limit = mp.limit, "max-prefix warning threshold reached");
        }
    }

    fn on_route_refresh(
        &mut self,
        id: PeerId,
        family: AfiSafi,
        subtype: u8,
        barrier: Option<std::sync::Arc<crate::msg::FlushBarrier>>,
    ) {
        let Some(entry) = self.peers.get_mut(id.0 as usize).and_then(Option::as_mut) else {
            return;
        };
        let Some(up) = entry.up.as_mut() else {
            return;
        };
        let enhanced = up.negotiated.enhanced_route_refresh;
        match subtype {
            route_refresh::REQUEST => {
                debug!(peer = %entry.meta.name, ?family, "route refresh requested");
                if enhanced && !up.refresh_owed.iter().any(|(f, _)| *f == family) {
                    up.refresh_owed.push((family, barrier));
                }
                self.rib.resend_all(id);
                self.export_full(id);
            }
            // RFC 7313 §4: the peer re-advertises everything of the family
            // between BoRR and EoRR; what it does not re-advertise is gone.
            // Without the capability the subtypes are ignored (§5).
            route_refresh::BORR if enhanced => {
                debug!(peer = %entry.meta.name, ?family, "Beginning-of-RIB-Refresh");
                let deadline = std::time::Instant::now() + ENHANCED_REFRESH_STALE;
                up.refreshing.retain(|(a, _)| *a != family.afi);
                up.refreshing.push((family.afi, deadline));
                let _ = self.rib.mark_stale_afi(id, family.afi);
            }
            route_refresh::EORR if enhanced => {
                let Some(i) = up.refreshing.iter().position(|(a, _)| *a == family.afi) else {
                    // §4: an EoRR without a BoRR is ignored.
                    return;
                };
                up.refreshing.swap_remove(i);
                let n = self
                    .rib
                    .sweep_stale_afi(id, family.afi, &mut self.changed)
                    .unwrap_or(0);
                debug!(peer = %entry.meta.name, ?family, purged = n, "End-of-RIB-Refresh");
            }
            _ => {
                debug!(peer = %entry.meta.name, subtype, "ROUTE-REFRESH subtype ignored");
            }
        }
    }

    /// Re-applies import policy to `id`'s routes. With `prefer_wire` (the
    /// CLI's `neighbor X refresh`) a ROUTE-REFRESH is sent when the peer
    /// supports it (RFC 2918); otherwise (a policy change) the stored
    /// pre-policy Adj-RIB-In is re-imported, falling back to ROUTE-REFRESH
    /// when it does not hold every route (soft reconfiguration switched on
    /// by a reload: the store starts with the next session).
    pub fn refresh_in(&mut self, id: PeerId, prefer_wire: bool) {
        let Some(entry) = self.peers.get(id.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let Some(up) = entry.up.as_ref() else {
            return;
        };
        let stored = entry.meta.keep_pre_policy
            && self.rib.shards().iter().all(|s| s.pre_policy_complete(id));
        if stored && !(prefer_wire && up.negotiated.route_refresh) {
            let mut importer = policy::Importer::new(entry, &self.settings);
            for s in self.rib.shards_mut() {
                let _ = s.reimport(id, &mut importer, &mut self.changed);
            }
        } else if up.negotiated.route_refresh && self.part.is_primary() {
            for &family in &up.negotiated.families {
                let _ = entry.cmd.send(SessionCmd::SendRouteRefresh { family });
            }
        }
    }

    /// Recomputes everything `id` should have (session up, export policy
    /// change); only differences are queued.
    pub fn export_full(&mut self, id: PeerId) {
        let t0 = std::time::Instant::now();
        let roles = std::mem::take(&mut self.roles);
        let mut ex = policy::exporter(&self.peers, roles, &self.settings);
        for s in self.rib.shards_mut() {
            let _ = s.export_full(id, &mut ex);
        }
        self.roles = ex.roles;
        self.counters.export_ns += t0.elapsed().as_nanos() as u64;
    }

    /// Exports the changes collected since the last call and hands the
    /// packed UPDATEs to the sessions that can take them.
    pub(crate) fn propagate(&mut self) {
        // ADD-PATH peers also hear of non-best path changes, which the RIB
        // tracks itself.
        if !self.changed.is_empty() || self.rib.path_changes_pending() {
            let t0 = std::time::Instant::now();
            self.changed.sort_unstable();
            self.changed.dedup();
            self.counters.best_changes += self.changed.len() as u64;
            let n_changed = self.changed.len() as u64;
            let t_best = crate::stages::elapsed_ns(t0);
            let roles = std::mem::take(&mut self.roles);
            let mut ex = policy::exporter(&self.peers, roles, &self.settings);
            let changed = std::mem::take(&mut self.changed);
            for s in self.rib.shards_mut() {
                s.export_changes(&changed, &mut ex);
            }
            self.roles = ex.roles;
            let t_export = crate::stages::elapsed_ns(t0).saturating_sub(t_best);
            let tf = std::time::Instant::now();
            self.best_feed.publish(&self.rib, &changed);
            let t_best = t_best + crate::stages::elapsed_ns(tf);
            self.changed = changed;
            self.changed.clear();
            self.counters.export_ns += t0.elapsed().as_nanos() as u64;
            let stages = &crate::stages::STAGES;
            let n = n_changed.max(1);
            stages.record_ns_n(Stage::BestPath, t_best / n, n);
            stages.record_ns_n(Stage::Export, t_export / n, n);
        }
        self.flush();
    }

    /// Runs the export round now: everything applied so far is exported,
    /// encoded and handed to the sessions (ignoring MRAI only in that a
    /// peer with MRAI 0 is flushed). For in-process tests and benchmarks,
    /// as a control job.
    pub fn settle(&mut self) {
        self.propagate();
    }

    /// Replaces the static routes (originated from [`STATIC_PEER`]).
    pub fn set_statics(&mut self, routes: Vec<StaticRoute>) {
        statics::replace(self, routes);
    }

    /// Total seconds since the RIB thread started.
    pub fn uptime(&self) -> Duration {
        self.started.elapsed().unwrap_or_default()
    }
}

/// The RIB thread's loop; returns when every sender is gone or shutdown
/// was requested.
///
/// Export rounds are spaced at least [`ROUND_MIN`] apart: input arriving
/// within that time of the last round is applied as it comes and exported
/// together when the interval is over. Idle, the first message after a
/// pause is exported at once. Under load this coalesces the best-path
/// changes of many batches into one round (a prefix announced by ten
/// peers is exported once, not ten times), which matters most for shard
/// threads: each sees a fraction of every batch, and without the spacing
/// ran one small round per batch, exporting and encoding ~8x more UPDATEs
/// at 8 shards than the sequential thread for the same table.
pub fn run(mut rx: Receiver<RibMsg>, mut st: RibState) {
    // A timer for the bounded wait; the channel itself is tokio's.
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        warn!("RIB thread: no timer runtime; exporting after every burst");
        return run_unspaced(rx, st);
    };
    let mut last_round = std::time::Instant::now()
        .checked_sub(ROUND_MIN)
        .unwrap_or_else(std::time::Instant::now);
    let mut dirty = false;
    loop {
        let msg = if dirty {
            let wait = ROUND_MIN.saturating_sub(last_round.elapsed());
            if wait.is_zero() {
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
            match rx.blocking_recv() {
                Some(m) => Some(m),
                None => break,
            }
        };
        match msg {
            Some(m) => {
                st.handle(m);
                for _ in 0..MAX_BURST {
                    if st.changed.len() >= MAX_CHANGED {
                        break;
                    }
                    match rx.try_recv() {
                        Ok(m) => st.handle(m),
                        Err(_) => break,
                    }
                }
                dirty = true;
                if last_round.elapsed() >= ROUND_MIN {
                    st.propagate();
                    last_round = std::time::Instant::now();
                    dirty = false;
                }
            }
            None => {
                st.propagate();
                last_round = std::time::Instant::now();
                dirty = false;
            }
        }
        if st.shutdown {
            break;
        }
    }
}

/// [`run`] without round spacing: an export round after every burst.
fn run_unspaced(mut rx: Receiver<RibMsg>, mut st: RibState) {
    while let Some(msg) = rx.blocking_recv() {
        st.handle(msg);
        for _ in 0..MAX_BURST {
            if st.changed.len() >= MAX_CHANGED {
                break;
            }
            match rx.try_recv() {
                Ok(m) => st.handle(m),
                Err(_) => break,
            }
        }
        st.propagate();
        if st.shutdown {
            break;
        }
    }
}
