//! [`RibCore`]: the RIB controller. It owns a [`bgp_rib::Rib`] (or one
//! part of it) and the peer table, and decides what happens on each input:
//! import with loop/OTC checks and policy, max-prefix (RFC 4486),
//! ROUTE-REFRESH and BoRR/EoRR (RFC 2918, RFC 7313), graceful-restart
//! helper timers (RFC 4724 §4.2), End-of-RIB (RFC 4724 §2), statics,
//! export rounds and flushes paced by MRAI (RFC 4271 §9.2.1.1) and by the
//! session's queue (back-pressure).
//!
//! Families: unicast routes (IPv4 and IPv6) live in [`RibCore::rib`],
//! multicast (SAFI 2, RFC 4760 §6) ones in a second, separate
//! [`RibCore::mcast`] with the same shards and peers. A multicast route
//! never meets a unicast one of the same prefix: it is selected in its
//! own table, exported only to peers that negotiated a multicast family
//! (the others are in that table without export), encoded with SAFI 2,
//! and kept out of the best-route feed ([`Outbox::best`], the FIB's),
//! which is unicast only.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::{Afi, AfiSafi, Instant, Prefix, Safi};
use bgp_fsm::DownReason;
use bgp_rib::{ImportCheck, PeerConfig, PeerId, PeerRole, Rib};
use bgp_wire::capability::GrFamily;
use bgp_wire::consts::notify;
use bgp_wire::{NextHop, NotificationMessage};

use crate::meter::{Meter, NoMeter};
use crate::msg::{DecodedUpdate, FlushBarrier, NexthopUpdate, RibInput, SessionCmd, SessionUp};
use crate::outbox::{BestChange, Note, Outbox, Stage};
use crate::peer::{MaxPrefixAction, PeerEntry, StaleFamily, UpState};
use crate::settings::{Part, RibSettings, STATIC_PEER};
use crate::statics::StaticRoute;
use crate::{export, policy, statics};

/// How long routes flagged stale by a peer's Beginning-of-RIB-Refresh wait
/// for its End-of-RIB-Refresh (RFC 7313 §4 leaves the value to us; FRR and
/// BIRD use minutes too).
pub const ENHANCED_REFRESH_STALE: Duration = Duration::from_secs(360);

/// How long a restarted peer's stale routes of a family wait for its
/// End-of-RIB once the session is back (RFC 4724 §4.2's optional stale
/// timer; FRR's `stale-path-time` default).
pub const GR_STALE_PATH_TIME: Duration = Duration::from_secs(360);

/// Encoded UPDATE bytes a session may have unwritten: a flush encodes
/// no more than the room left below this, and leaves the rest of the
/// Adj-RIB-Out's changes queued as prefixes, to be encoded when the
/// socket has drained (pull, as BIRD does; docs/adr/0004). Per RIB part:
/// each part (shard thread) fills the room on its own. A few socket
/// buffers: enough to keep a fast connection busy between two flushes,
/// small enough that a slow reader costs little (it was 16 MiB, the
/// largest per-peer term in issue 17's measurements). 256 KiB was tried
/// (issue 17 (c30)): 8 % less peak RSS for 37 % more CPU time, from four
/// times the refills.
pub const OUT_QUEUE_LIMIT: u64 = 1 << 20;

/// Unwritten bytes below which a session's writer asks the RIB for more
/// ([`crate::msg::PeerStatus::unqueue`] returns true on the crossing).
pub const OUT_QUEUE_LOW: u64 = OUT_QUEUE_LIMIT / 4;

/// With more busy sessions than this (bytes unwritten or changes pending),
/// each RIB part fills only its share of a session's room (the room over
/// the number of parts), so that the parts together hold at most
/// [`OUT_QUEUE_LIMIT`] per session instead of one limit each (issue 17,
/// scenario (c30): 31 slow readers at up to 2 x 1 MiB each were the spike
/// of its peak RSS). Fewer sessions keep the whole room per part: a fast
/// reader among a few needs the fewer refills more (the share alone
/// doubled (a)'s and (c10)'s convergence times, ADR 0004).
pub const CROWDED_SESSIONS: usize = 16;

/// Best-path changes at which an export round of new prefixes runs
/// without waiting for the pacer ([`RibCore::round_due`]); changes of
/// known prefixes wait for the pacer, which coalesces them.
///
/// * A RIB thread or part that lags behind its input (ten sessions
///   feeding it, scenario (c10)) otherwise runs its bursts to
///   `MAX_CHANGED` (32k changes). Rounds of 768 cost less per prefix:
///   in (c10), -26 % CPU-s and -25 % time for the default, -20 % and
///   -25 % for sequential; in process, 32k-change rounds cost 1.2x
///   what 768-change rounds cost per prefix (`examples/round_size.rs`;
///   docs/BENCHMARKS.md "Export rounds of new prefixes at 768 changes on
///   every core"). The likely reason, not confirmed (no hardware
///   counters): the export finds the Loc-RIB entries the import of a
///   small round touched still in the cache.
/// * Only nearly pure rounds of new prefixes (7/8) outside a crowd: with
///   half, ten feeds of the same prefixes (scenario (b)) sent 16 % more
///   UPDATEs for 10 % more CPU-s.
/// * Crowded cores (many exporting sessions) were the first to get the
///   rule, for update groups: large rounds span several sessions' routes,
///   so each member of a group drains a batch of its own (its own routes
///   left out), few batches are equal, and every member's encoding is
///   queued at once. Rounds of about one drain step less a generator's
///   routes let most members share one encoding (scenario (c30): sessions
///   per encoded buffer 1.6 -> 3.7, peak RSS 126 -> 97 MiB, CPU-s -17 %).
pub const NEW_PREFIX_ROUND: usize = 768;

/// Prefixes taken from an Adj-RIB-Out part at a time while a flush fills
/// the room left in the session's queue.
pub(crate) const DRAIN_STEP: usize = 1024;

/// ROUTE-REFRESH subtypes (RFC 7313 §3).
pub mod route_refresh {
    /// Ask the peer to re-send its routes (RFC 2918).
    pub const REQUEST: u8 = 0;
    /// Beginning of a re-advertisement (RFC 7313 §3).
    pub const BORR: u8 = 1;
    /// End of a re-advertisement (RFC 7313 §3).
    pub const EORR: u8 = 2;
}

pub(crate) fn route_refresh_msg(af: AfiSafi, subtype: u8) -> bgp_wire::RouteRefresh {
    bgp_wire::RouteRefresh {
        afi: af.afi,
        safi: af.safi,
        subtype,
    }
}

/// How many bytes a session has not written yet: the core stops handing
/// it UPDATEs above [`OUT_QUEUE_LIMIT`].
pub trait OutQueue {
    /// Bytes handed to the session and not yet written.
    fn queued_bytes(&self) -> u64;
}

impl OutQueue for crate::msg::PeerStatus {
    fn queued_bytes(&self) -> u64 {
        self.out_queued_bytes.load(Ordering::Relaxed)
    }
}

/// Counters of one core, for `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct RibCounters {
    /// UPDATEs applied (End-of-RIB markers included).
    pub updates: u64,
    /// Prefixes announced by peers (each NLRI of each UPDATE).
    pub prefixes_announced: u64,
    /// Prefixes withdrawn by peers (treat-as-withdraw and loop drops included).
    pub prefixes_withdrawn: u64,
    /// Announced prefixes dropped as loops (AS_PATH, ORIGINATOR_ID, CLUSTER_LIST) or OTC leaks.
    pub loops_rejected: u64,
    /// Best-path changes exported (one per prefix per export round).
    pub best_changes: u64,
    /// UPDATE messages encoded for sessions.
    pub updates_sent: u64,
    /// Bytes of UPDATEs handed to sessions.
    pub bytes_sent: u64,
    /// Buffers of UPDATEs encoded by a flush (one per drained batch and
    /// encoding; issue 17).
    pub encodings: u64,
    /// Buffers of UPDATEs handed to sessions: more than
    /// [`Self::encodings`] when update-group members share an encoding.
    pub encoding_sends: u64,
    /// Sum of time spent applying UPDATE batches, ns (by the [`Meter`]).
    pub apply_ns: u64,
    /// Sum of time spent exporting, ns (by the [`Meter`]).
    pub export_ns: u64,
    /// Prefixes re-evaluated after RPKI VRP changes.
    pub rov_reevaluated: u64,
    /// Routes re-evaluated after ASPA changes.
    pub aspa_reevaluated: u64,
}

/// The RIB controller (see the module docs). Inputs arrive through
/// [`RibCore::handle`], time passes through [`RibCore::tick`], and
/// [`RibCore::propagate`] runs an export round; each writes what must
/// happen outside into an [`Outbox`].
pub struct RibCore {
    /// Router-wide settings.
    pub settings: RibSettings,
    /// The prefixes this core owns.
    pub part: Part,
    /// This core's part of the unicast RIB: Adj-RIBs-In, Loc-RIB,
    /// Adj-RIBs-Out.
    pub rib: Rib,
    /// The same for multicast (SAFI 2) routes, apart from the unicast
    /// ones (see the module docs).
    pub mcast: Rib,
    /// By `PeerId`; slot 0 is the static pseudo-peer (always `None` here).
    pub peers: Vec<Option<PeerEntry>>,
    /// Static routes originated by [`STATIC_PEER`] (only the owned prefixes).
    pub statics: Vec<StaticRoute>,
    /// Counters for `/metrics`.
    pub counters: RibCounters,
    /// When the RIB started (wall clock, for uptimes and RIB dumps).
    pub started: SystemTime,
    /// Fill [`Outbox::best`] on each export round (a forwarding plane
    /// follows the best routes).
    pub want_best: bool,
    pub(crate) meter: Box<dyn Meter>,
    /// Roles for the propagation rules, rebuilt when a peer goes up/down.
    pub(crate) roles: Vec<Option<PeerRole>>,
    pub(crate) changed: Vec<Prefix>,
    /// [`arrival_order`]'s buffers, kept between export rounds.
    pub(crate) order: ArrivalScratch,
    /// Best-path changes of [`Self::mcast`] (never in the best feed).
    pub(crate) mcast_changed: Vec<Prefix>,
    pub(crate) scratch: Vec<u8>,
    /// Members of one update group whose sessions encode alike
    /// ([`bgp_rib::UpdateEncoder::encodes_like`]) and drain the same batch
    /// share one encoding (default on; off only to compare, in tests and
    /// benchmarks, with a per-peer encoding).
    pub share_encodings: bool,
    /// The next [`UpState::enc_class`] to hand out.
    pub(crate) next_enc_class: u64,
    /// A flush encodes more for a session only while the session's
    /// unwritten bytes are below this (default [`OUT_QUEUE_LOW`], where the
    /// session's writer wakes the RIB): between two refills the changes of
    /// many export rounds wait as prefixes, so a prefix that changed
    /// several times is encoded once, with its latest state (coalescing,
    /// issue 17, as BIRD encodes only when the socket is writable). An
    /// idle session (nothing unwritten) gets each change at once.
    /// [`OUT_QUEUE_LIMIT`] gives the earlier behaviour (top up every
    /// round); for tests and benchmarks, not a configuration key.
    pub refill_below: u64,
    pub(crate) shutdown: bool,
    /// Sessions with bytes unwritten or changes pending at the last flush.
    pub(crate) busy_sessions: usize,
    /// Prefixes in both tables when the last export round began: what they
    /// grew by since tells how many of the pending changes are new
    /// prefixes ([`Self::round_due`]).
    pub(crate) round_prefixes: usize,
    /// Per peer id: the received count this part last added to
    /// `PeerStatus::rib_received`.
    pub(crate) reported: Vec<u64>,
    /// Selection deferral after our own graceful restart (RFC 4724 §4.1):
    /// its length, and its deadline once the first time is seen.
    pub(crate) defer: Option<(Duration, Option<Instant>)>,
    /// RPKI origin validation (RFC 6811): the VRP table in use; None when
    /// RPKI is not configured (every route is NotFound).
    pub rov: Option<Arc<rov::VrpTable>>,
    /// With [`Self::rov`]: every prefix announced to this core since, so
    /// that a VRP change re-evaluates the routes it covers and no others
    /// ([`Self::vrp_update`]). Withdrawn prefixes are forgotten at the
    /// next VRP change that covers them.
    pub(crate) rov_index: rov::PrefixIndex,
    /// ASPA AS_PATH verification: the ASPAs in use (from the same RTR
    /// caches); None when RPKI is not configured (nothing is verified).
    pub aspa: Option<Arc<rov::AspaTable>>,
    /// Configured aggregates and their contributors (`aggregate.rs`).
    pub(crate) aggregates: Vec<crate::agg::AggState>,
    /// Best routes among some neighbours' paths (`views.rs`).
    pub(crate) views: crate::views::Views,
}

impl RibCore {
    /// A core owning `part` of the RIB, with `shards` [`bgp_rib::RibShard`]s
    /// inside its own `Rib`.
    pub fn new(settings: RibSettings, shards: usize, part: Part, started: SystemTime) -> RibCore {
        let mut rib = Rib::new(shards, settings.bestpath);
        let mut mcast = Rib::new(shards, settings.bestpath);
        for r in [&mut rib, &mut mcast] {
            r.add_peer(
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
        }
        RibCore {
            settings,
            part,
            rib,
            mcast,
            peers: vec![None],
            statics: Vec::new(),
            counters: RibCounters::default(),
            started,
            want_best: false,
            meter: Box::new(NoMeter),
            roles: vec![None],
            changed: Vec::new(),
            order: ArrivalScratch::default(),
            mcast_changed: Vec::new(),
            scratch: Vec::new(),
            share_encodings: true,
            next_enc_class: 0,
            refill_below: OUT_QUEUE_LOW,
            shutdown: false,
            busy_sessions: 0,
            round_prefixes: 0,
            reported: Vec::new(),
            defer: None,
            rov: None,
            rov_index: rov::PrefixIndex::default(),
            aspa: None,
            aggregates: Vec::new(),
            views: Default::default(),
        }
    }

    /// Turns RPKI origin validation on, with an empty VRP table (every
    /// route NotFound until the first cache delivers).
    pub fn enable_rov(&mut self) {
        if self.rov.is_none() {
            self.rov = Some(Arc::new(rov::VrpTable::default()));
        }
        if self.aspa.is_none() {
            self.aspa = Some(Arc::new(rov::AspaTable::default()));
        }
    }

    /// The ASPAs changed: `table` is the new set, `changed` the customer
    /// ASes whose records differ. The pre-policy routes whose AS_PATH holds
    /// one of them run through import policy again (peers whose import
    /// policy matches on `aspa`), then best path and export; with an
    /// export policy matching on `aspa` the Loc-RIB prefixes whose paths
    /// hold one are exported again.
    ///
    /// This walks the Adj-RIBs-In of those peers (no index of routes by
    /// the ASes in their paths): ASPA changes are rare (a cache's data
    /// changes every few minutes at most, and few records at a time),
    /// while such an index would cost every UPDATE one insertion per AS
    /// of its path. Returns how many routes were re-evaluated.
    pub fn aspa_update(&mut self, table: Arc<rov::AspaTable>, changed: &[u32]) -> usize {
        self.aspa = Some(table);
        if changed.is_empty() {
            return 0;
        }
        let mut sorted = changed.to_vec();
        sorted.sort_unstable();
        let changed = &sorted[..];
        let hit = |set: &bgp_rib::AttrSet, path: &mut Vec<u32>| {
            bgp_policy::aspa_path_of_set(set, path);
            path.iter().any(|a| changed.binary_search(a).is_ok())
        };
        let uses_aspa = |p: &crate::peer::PolicyRef| matches!(p, crate::peer::PolicyRef::Named(_, p) if p.uses_aspa());
        let ids: Vec<PeerId> = self
            .peer_iter()
            .filter(|(_, e)| {
                e.up.is_some() && uses_aspa(&e.meta.import) && policy::aspa_mode(e).is_some()
            })
            .map(|(id, _)| id)
            .collect();
        let reexport = self.peer_iter().any(|(_, e)| uses_aspa(&e.meta.export));
        let mut count = 0;
        let mut path = Vec::new();
        for id in ids {
            let Some(entry) = self.peers.get(id.0 as usize).and_then(Option::as_ref) else {
                continue;
            };
            let mut importer = policy::Importer::new(entry, &self.settings, self.rov.as_deref())
                .with_aspa(self.aspa.as_deref());
            for (rib, out) in [
                (&mut self.rib, &mut self.changed),
                (&mut self.mcast, &mut self.mcast_changed),
            ] {
                for s in rib.shards_mut() {
                    let mut todo: Vec<Prefix> = Vec::new();
                    let complete = s.for_each_pre_policy(id, |p, _, set| {
                        if hit(set, &mut path) {
                            todo.push(*p);
                        }
                    });
                    if !complete {
                        // No complete pre-policy store: everything again.
                        let _ = s.reimport(id, &mut importer, out);
                        continue;
                    }
                    todo.sort_unstable();
                    todo.dedup();
                    count += todo.len();
                    for p in todo {
                        let _ = s.reimport_prefix(id, p, &mut importer, out);
                    }
                }
            }
        }
        if reexport {
            for (rib, out) in [
                (&self.rib, &mut self.changed),
                (&self.mcast, &mut self.mcast_changed),
            ] {
                for r in rib.iter() {
                    if r.iter().any(|(_, set)| hit(set, &mut path)) {
                        out.push(r.prefix);
                        count += 1;
                    }
                }
            }
        }
        self.counters.aspa_reevaluated += count as u64;
        count
    }

    /// The ASPA state of a stored route from `from` (None when it is not
    /// verified: no RPKI, iBGP, or no `role` towards that neighbour).
    pub fn aspa_state(&self, from: PeerId, attrs: &bgp_rib::AttrSet) -> Option<rov::AspaState> {
        let t = self.aspa.as_deref()?;
        let e = self.peers.get(from.0 as usize)?.as_ref()?;
        policy::aspa_of_set(t, e, attrs)
    }

    /// The RPKI VRP set changed: `table` is the new one, `changed` the VRP
    /// prefixes whose VRPs differ from the previous table. The routes under
    /// them (found in the prefix index, no table walk) run through import
    /// policy again from each peer's pre-policy Adj-RIB-In (peers whose
    /// import policy matches on `rpki`), then best path and export; with an
    /// export policy matching on `rpki` their prefixes are exported again
    /// even when import changed nothing. Returns how many prefixes were
    /// re-evaluated.
    pub fn vrp_update(&mut self, table: Arc<rov::VrpTable>, changed: &[Prefix]) -> usize {
        self.rov = Some(table);
        let mut affected: Vec<Prefix> = Vec::new();
        for c in changed {
            affected.extend(self.rov_index.covered_by(c));
        }
        affected.sort_unstable();
        affected.dedup();
        if affected.is_empty() {
            return 0;
        }
        let uses = |p: &crate::peer::PolicyRef| matches!(p, crate::peer::PolicyRef::Named(_, p) if p.uses_rpki());
        // Only peers whose import policy looks at the state can import
        // differently; only export policies that do need a new export.
        let ids: Vec<PeerId> = self
            .peer_iter()
            .filter(|(_, e)| e.up.is_some() && uses(&e.meta.import))
            .map(|(id, _)| id)
            .collect();
        let reexport = self.peer_iter().any(|(_, e)| uses(&e.meta.export));
        for id in ids {
            let Some(entry) = self.peers.get(id.0 as usize).and_then(Option::as_ref) else {
                continue;
            };
            let mut importer = policy::Importer::new(entry, &self.settings, self.rov.as_deref())
                .with_aspa(self.aspa.as_deref());
            for p in &affected {
                let i = self.rib.shard_of(p);
                if let Some(s) = self.rib.shards_mut().get_mut(i) {
                    let _ = s.reimport_prefix(id, *p, &mut importer, &mut self.changed);
                }
                let i = self.mcast.shard_of(p);
                if let Some(s) = self.mcast.shards_mut().get_mut(i) {
                    let _ = s.reimport_prefix(id, *p, &mut importer, &mut self.mcast_changed);
                }
            }
        }
        for p in &affected {
            let mut held = false;
            for (rib, changed) in [
                (&self.rib, &mut self.changed),
                (&self.mcast, &mut self.mcast_changed),
            ] {
                let s = rib.shards().get(rib.shard_of(p));
                if s.is_some_and(|s| s.lookup(p).is_some()) {
                    if reexport {
                        changed.push(*p);
                    }
                    held = true;
                } else if s.is_some_and(|s| s.has_pre_policy(p)) {
                    held = true;
                }
            }
            if !held {
                self.rov_index.forget(p);
            }
        }
        self.counters.rov_reevaluated += affected.len() as u64;
        affected.len()
    }

    /// The unicast Loc-RIB prefixes whose best path is not exported to
    /// `to`, and why: the export decision itself (`RibShard::held_back`)
    /// with the same exporter [`Self::propagate`] builds (propagation
    /// rules around `to`'s export policy). A best path that came from
    /// `to` is not listed (never echoed back). In prefix order.
    pub fn held_back(&self, to: PeerId) -> Vec<(Prefix, bgp_rib::HeldBack)> {
        let mut ex = policy::exporter(
            &self.peers,
            self.roles.clone(),
            &self.settings,
            self.rov.as_deref(),
            self.aspa.as_deref(),
            self.summarised(),
        );
        let shards = self.rib.shards();
        let mut out: Vec<(Prefix, bgp_rib::HeldBack)> = self
            .rib
            .iter()
            .filter_map(|r| {
                let s = shards.get(self.rib.shard_of(&r.prefix))?;
                Some((r.prefix, s.held_back(to, &r.prefix, &mut ex)?))
            })
            .collect();
        out.sort_by_key(|a| a.0);
        out
    }

    /// The RFC 6811 state of a route with these attributes (NotFound
    /// without RPKI).
    pub fn rov_state(&self, prefix: &Prefix, attrs: &bgp_rib::AttrSet) -> rov::RovState {
        match &self.rov {
            Some(t) => t.validate(
                prefix,
                bgp_policy::origin_of_set(attrs, self.settings.local_asn),
            ),
            None => rov::RovState::NotFound,
        }
    }

    /// We restarted gracefully (RFC 4724 §4.1): hold back export, the
    /// best-route feed and End-of-RIB until every enabled neighbour is up
    /// and those that negotiated graceful restart have sent End-of-RIB
    /// for each family, or `limit` has passed since the first event.
    /// Routes received meanwhile are stored and selected as usual.
    pub fn defer_selection(&mut self, limit: Duration) {
        self.defer = Some((limit, None));
    }

    /// Whether our selection deferral (see [`Self::defer_selection`]) has
    /// not ended yet.
    pub fn selection_deferred(&self) -> bool {
        self.defer.is_some()
    }

    /// Whether selection is still deferred at `now`; notes the end.
    fn deferring(&mut self, now: Instant, out: &mut Outbox) -> bool {
        let Some((limit, until)) = self.defer.as_mut() else {
            return false;
        };
        let until = *until.get_or_insert(now + *limit);
        let all_eor = self
            .peers
            .iter()
            .flatten()
            .filter(|e| !e.disabled)
            .all(|e| {
                e.up.as_ref().is_some_and(|u| {
                    u.negotiated.graceful_restart.is_none()
                        || u.negotiated
                            .families
                            .iter()
                            .all(|f| u.eor_received.contains(f))
                })
            });
        if !all_eor && now < until {
            return true;
        }
        self.defer = None;
        out.note(STATIC_PEER, Note::DeferralOver { by_timer: !all_eor });
        false
    }

    /// Measure stage times with `meter` (see [`Meter`]).
    pub fn set_meter(&mut self, meter: Box<dyn Meter>) {
        self.meter = meter;
    }

    pub(crate) fn ns(&self) -> u64 {
        self.meter.now_ns()
    }

    /// New route selection options (a reload): selection runs again over
    /// every prefix of this part; the next [`RibCore::propagate`] exports
    /// the prefixes whose best changed.
    pub fn set_bestpath(&mut self, cfg: bgp_rib::BestPathConfig) {
        self.settings.bestpath = cfg;
        self.rib.set_config(cfg, &mut self.changed);
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
        self.sync_peer_damping(id);
    }

    /// Removes a neighbour: terminates its session (primary part only) and
    /// flushes its routes. Returns the entry.
    pub fn remove_peer(
        &mut self,
        id: PeerId,
        notification: NotificationMessage,
        out: &mut Outbox,
    ) -> Option<PeerEntry> {
        let entry = self.peers.get_mut(id.0 as usize).and_then(Option::take)?;
        if self.part.is_primary() {
            out.cmd(id, SessionCmd::Terminate { notification });
        }
        if entry.up.is_some() {
            let _ = self.rib.peer_down(id, &mut self.changed);
            let _ = self.mcast.peer_down(id, &mut self.mcast_changed);
        }
        // Take this part's share out of the peer's total.
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
        Some(entry)
    }

    /// The neighbour with id `id`.
    pub fn peer(&self, id: PeerId) -> Option<&PeerEntry> {
        self.peers.get(id.0 as usize)?.as_ref()
    }
    /// The neighbour with id `id`, to change it.
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

    /// Asks the runtime's loop to exit after this wake-up.
    pub fn request_shutdown(&mut self) {
        self.shutdown = true;
    }

    /// Whether [`Self::request_shutdown`] was called.
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown
    }

    /// Best-path changes collected since the last export round (the
    /// runtime bounds a burst by it).
    pub fn pending_changes(&self) -> usize {
        self.changed.len() + self.mcast_changed.len()
    }

    /// Whether the export round should run now, whatever its pacing says:
    /// [`NEW_PREFIX_ROUND`] best-path changes wait and nearly all of them
    /// are new prefixes: the tables grew by at least 7/8 as many since the
    /// last round began, or by half as many in a crowded core (more than
    /// [`CROWDED_SESSIONS`] busy sessions at its last flush). Changes of
    /// known prefixes are left to the pacer: waiting coalesces them (a
    /// prefix announced by ten feeders is exported once), which capped
    /// rounds did not (scenario (g), a route server with 100 clients:
    /// +40 % CPU-s; see [`NEW_PREFIX_ROUND`] for scenario (b)).
    pub fn round_due(&self) -> bool {
        let pending = self.pending_changes();
        if pending < NEW_PREFIX_ROUND {
            return false;
        }
        let new = self.prefix_total().saturating_sub(self.round_prefixes);
        if self.busy_sessions > CROWDED_SESSIONS {
            new * 2 >= pending
        } else {
            new * 8 >= pending * 7
        }
    }

    /// Prefixes in the unicast and multicast tables of this core.
    fn prefix_total(&self) -> usize {
        self.rib.prefix_count() + self.mcast.prefix_count()
    }

    /// The table of `safi` (multicast, or unicast for anything else) and
    /// its pending best-path changes.
    fn table(&mut self, safi: Safi) -> (&mut Rib, &mut Vec<Prefix>) {
        match safi {
            Safi::Multicast => (&mut self.mcast, &mut self.mcast_changed),
            _ => (&mut self.rib, &mut self.changed),
        }
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
                    confed: p.meta.confed,
                    rr_client: p.meta.rr_client,
                    rs_client: p.meta.rs_client,
                    role: p.meta.role,
                    bgp_id: up.negotiated.peer_bgp_id,
                })
            })
            .collect();
    }

    /// Time passes: graceful-restart stale timers and enhanced-refresh
    /// deadlines that are due at `now` fire.
    pub fn tick(&mut self, now: Instant, out: &mut Outbox) {
        // Ends our own selection deferral when its time is up.
        let _ = self.deferring(now, out);
        for i in 0..self.peers.len() {
            let id = PeerId(i as u16);
            let Some(Some(e)) = self.peers.get_mut(i) else {
                continue;
            };
            let (rib, mcast) = (&mut self.rib, &mut self.mcast);
            let (changed, mcast_changed) = (&mut self.changed, &mut self.mcast_changed);
            let down = e.up.is_none();
            e.gr_stale.retain_mut(|f| {
                if f.until > now {
                    return true;
                }
                let afi = f.afi;
                // RFC 9494: the restart timer ran out with the
                // session still down, and the peer listed the family for
                // LLGR: the long-lived phase starts.
                if let (false, Some(llst), true) = (f.llgr, f.long_lived, down) {
                    f.llgr = true;
                    f.until = now + llst;
                    out.note(
                        id,
                        Note::LongLivedStale {
                            afi,
                            stale_s: llst.as_secs(),
                        },
                    );
                    let _ = rib.enter_llgr(id, afi, changed);
                    let _ = mcast.sweep_stale_afi(id, afi, mcast_changed);
                    return true;
                }
                if f.llgr {
                    out.note(id, Note::LongLivedExpired { afi });
                } else {
                    out.note(id, Note::RestartTimerExpired { afi });
                }
                let _ = rib.sweep_stale_afi(id, afi, changed);
                // Multicast routes of the AFI follow its unicast timers
                // (no long-lived phase for them).
                let _ = mcast.sweep_stale_afi(id, afi, mcast_changed);
                false
            });
            if let Some(up) = e.up.as_mut() {
                let (rib, mcast) = (&mut self.rib, &mut self.mcast);
                let (changed, mcast_changed) = (&mut self.changed, &mut self.mcast_changed);
                up.refreshing.retain(|&(family, deadline)| {
                    if deadline > now {
                        return true;
                    }
                    out.note(id, Note::NoEorr { afi: family.afi });
                    let _ = match family.safi {
                        Safi::Multicast => mcast.sweep_stale_afi(id, family.afi, mcast_changed),
                        _ => rib.sweep_stale_afi(id, family.afi, changed),
                    };
                    false
                });
            }
        }
        // Damped routes whose reuse time has come.
        self.rib.damping_due(now, &mut self.changed);
        self.drain_nexthop_watch(out);
    }

    /// The earliest deadline [`Self::tick`] waits for, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.peers
            .iter()
            .flatten()
            .flat_map(|e| {
                let refresh =
                    e.up.iter()
                        .flat_map(|u| u.refreshing.iter().map(|&(_, t)| t));
                e.gr_stale.iter().map(|f| f.until).chain(refresh)
            })
            .chain(self.defer.and_then(|(_, until)| until))
            .chain(self.rib.damping_next_deadline())
            .min()
    }

    /// Switches next-hop tracking on (at start, before any route): paths
    /// become eligible once their next hop is reported reachable through
    /// [`Self::nexthop_update`] (RFC 4271 §9.1.2.1), and the reported cost
    /// is their interior cost (§9.1.2.2 e). The next hops to resolve come
    /// out in [`Outbox::nexthops`].
    pub fn enable_nexthop_tracking(&mut self) {
        self.rib.enable_nexthop_tracking();
    }

    /// Whether next-hop tracking is on.
    pub fn nexthop_tracking(&self) -> bool {
        self.rib.shards().iter().any(|s| s.nexthop_tracking())
    }

    /// The state of a next hop changed (or was resolved for the first
    /// time): selection runs again for the prefixes with a path through
    /// it; what changed goes out with the next [`Self::propagate`].
    pub fn nexthop_update(&mut self, update: NexthopUpdate, out: &mut Outbox) {
        let st = bgp_rib::NhState {
            reachable: update.reachable,
            igp_cost: update.igp_cost,
        };
        self.rib
            .nexthop_update(update.nexthop, st, &mut self.changed);
        self.drain_nexthop_watch(out);
    }

    /// Moves the next hops the RIB started or stopped using to
    /// [`Outbox::nexthops`] ([`Self::handle`] and [`Self::tick`] do it
    /// themselves; a runtime calls it after the other entry points).
    pub fn drain_nexthop_watch(&mut self, out: &mut Outbox) {
        self.rib.drain_nexthop_watch(&mut out.nexthops);
    }

    /// The tracked next hops of this part: (next hop, state, prefixes).
    pub fn nexthops(&self) -> impl Iterator<Item = bgp_rib::NexthopInfo> + '_ {
        self.rib.shards().iter().flat_map(|s| s.nexthops())
    }

    /// Applies one input from a session.
    pub fn handle(&mut self, now: Instant, input: RibInput, out: &mut Outbox) {
        match input {
            RibInput::Up { peer, up } => self.on_up(now, peer, *up, out),
            RibInput::Updates { peer, updates } => {
                // Flaps are counted at this time (route-flap damping).
                self.rib.damping_time(now);
                self.on_updates(peer, updates, out)
            }
            RibInput::RouteRefresh {
                peer,
                family,
                subtype,
                barrier,
            } => {
                self.on_route_refresh(now, peer, family, subtype, barrier, out);
                self.sync_received(peer);
            }
            RibInput::Down {
                peer,
                reason,
                graceful,
                at,
            } => {
                self.on_down(now, peer, reason, graceful, at, out);
                self.sync_received(peer);
            }
        }
        self.drain_nexthop_watch(out);
    }

    /// Adds the change of this part's received count for `id` to the
    /// peer's total over all parts (max-prefix, RFC 4486).
    fn sync_received(&mut self, id: PeerId) {
        let now = [&self.rib, &self.mcast]
            .iter()
            .map(|r| r.peer_counts(id).map_or(0, |c| c.received))
            .sum::<u64>();
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

    /// Gives `id`'s session the encoding class of an Established session
    /// whose encoder encodes alike, or a new one.
    fn assign_enc_class(&mut self, id: PeerId) {
        let i = id.0 as usize;
        let Some(Some(me)) = self.peers.get(i) else {
            return;
        };
        let Some(mine) = me.up.as_ref() else {
            return;
        };
        let found = self.peers.iter().enumerate().find_map(|(j, e)| {
            let u = e.as_ref()?.up.as_ref()?;
            (j != i && u.enc_class != u64::MAX && u.encoder.encodes_like(&mine.encoder))
                .then_some(u.enc_class)
        });
        let class = match found {
            Some(c) => c,
            None => {
                let c = self.next_enc_class;
                self.next_enc_class += 1;
                c
            }
        };
        if let Some(Some(e)) = self.peers.get_mut(i) {
            if let Some(u) = e.up.as_mut() {
                u.enc_class = class;
            }
        }
    }

    fn on_up(&mut self, now: Instant, id: PeerId, up: SessionUp, out: &mut Outbox) {
        let Some(entry) = self.peers.get_mut(id.0 as usize).and_then(Option::as_mut) else {
            return;
        };
        let n = &up.negotiated;
        out.note(
            id,
            Note::SessionEstablished {
                remote: up.remote_addr,
            },
        );
        let encoder = export::encoder_for(&entry.meta, &up);
        let sends_mcast = encoder.sends_safi(Safi::Multicast);
        let add_path_send = export::add_path_send(&entry.meta, &up);
        let cfg = PeerConfig {
            asn: n.peer_asn,
            bgp_id: n.peer_bgp_id,
            addr: up.remote_addr.ip(),
            // RFC 5065 §5.3: confederation members are internal for
            // selection (the eBGP-over-iBGP step).
            ebgp: entry.meta.external(),
            keep_pre_policy: entry.meta.keep_pre_policy,
            export: true,
        };
        // Stale routes from a graceful restart survive only for the
        // families the new session's GR capability (LLGR capability, for
        // those in the long-lived phase, RFC 9494) lists with the
        // Forwarding State bit set (RFC 4724 §4.2); the others are flushed
        // now. The survivors wait for their End-of-RIB, at most the
        // stale-path time (the rest of the Long-lived Stale Time).
        let mut sweep_now = Vec::new();
        let why = if n.graceful_restart.is_some() {
            "forwarding state not preserved"
        } else {
            "new session without graceful restart"
        };
        let preserved = |afi: Afi, f: &GrFamily| -> bool {
            f.afi_safi == AfiSafi::new(afi, Safi::Unicast) && f.flags & 0x80 != 0
        };
        entry.gr_stale.retain_mut(|f| {
            let kept = if f.llgr {
                n.llgr.iter().flatten().any(|l| {
                    let g = GrFamily {
                        afi_safi: l.afi_safi,
                        flags: l.flags,
                    };
                    preserved(f.afi, &g)
                })
            } else {
                n.graceful_restart
                    .as_ref()
                    .is_some_and(|gr| gr.families.iter().any(|g| preserved(f.afi, g)))
            };
            if !kept {
                sweep_now.push(f.afi);
            } else if !f.llgr {
                f.until = now + GR_STALE_PATH_TIME;
            }
            kept
        });
        entry.up = Some(UpState {
            eor_owed: n.families.clone(),
            eor_received: Vec::new(),
            refresh_owed: Vec::new(),
            refresh_heads_sent: 0,
            backlog: false,
            refreshing: Vec::new(),
            negotiated: up.negotiated,
            local_addr: up.local_addr,
            remote_addr: up.remote_addr,
            link: up.link,
            session: up.session,
            encoder,
            enc_class: u64::MAX,
            eor_barrier: up.eor_barrier,
            since: up.since,
            last_flush: now,
        });
        self.assign_enc_class(id);
        // Multicast routes go only to peers that negotiated a multicast
        // family (RFC 4760 §6).
        let mcast_cfg = PeerConfig {
            export: sends_mcast,
            ..cfg.clone()
        };
        self.rib.add_peer(id, cfg);
        self.mcast.add_peer(id, mcast_cfg);
        let _ = self.rib.set_add_path_send(id, add_path_send);
        for afi in sweep_now {
            out.note(id, Note::StaleFlushed { afi, why });
            let _ = self.rib.sweep_stale_afi(id, afi, &mut self.changed);
            let _ = self.mcast.sweep_stale_afi(id, afi, &mut self.mcast_changed);
        }
        self.rebuild_roles();
        self.export_full(id);
    }

    fn on_down(
        &mut self,
        now: Instant,
        id: PeerId,
        reason: DownReason,
        graceful: bool,
        at: SystemTime,
        out: &mut Outbox,
    ) {
        let Some(entry) = self.peer_mut(id) else {
            return;
        };
        entry.last_down = Some((at, format!("{reason:?}")));
        let Some(up) = entry.up.take() else {
            return;
        };
        // RFC 4724 §4.2: helper mode keeps the routes of the families the
        // peer listed in its graceful restart capability, marked stale, for
        // its Restart Time; RFC 9494: those it listed in its LLGR
        // capability then stay for their Long-lived Stale Time (at once
        // when the Restart Time is 0 or the family is only in LLGR); the
        // other families are flushed at once.
        let gr = up.negotiated.graceful_restart.as_ref().filter(|_| graceful);
        let restart = Duration::from_secs(u64::from(gr.map_or(0, |g| g.restart_time)));
        let gr_fams: Vec<Afi> = gr
            .filter(|gr| gr.restart_time > 0)
            .map(|gr| {
                gr.families
                    .iter()
                    .filter(|f| f.afi_safi.safi == Safi::Unicast)
                    .map(|f| f.afi_safi.afi)
                    .collect()
            })
            .unwrap_or_default();
        let llst = |afi: Afi| -> Option<Duration> {
            let l = up.negotiated.llgr.as_ref().filter(|_| gr.is_some())?;
            l.iter()
                .find(|f| f.afi_safi == AfiSafi::new(afi, Safi::Unicast) && f.stale_time > 0)
                .map(|f| Duration::from_secs(u64::from(f.stale_time)))
        };
        let mut keep: Vec<Afi> = up
            .negotiated
            .families
            .iter()
            .filter(|f| f.safi == Safi::Unicast)
            .map(|f| f.afi)
            .filter(|&a| gr_fams.contains(&a) || llst(a).is_some())
            .collect();
        keep.sort();
        keep.dedup();
        if let (Some(_), false) = (gr, keep.is_empty()) {
            // A family still stale from an earlier restart and not listed
            // now is flushed with the others.
            entry.gr_stale = keep
                .iter()
                .map(|&afi| {
                    let long_lived = llst(afi);
                    let llgr = !gr_fams.contains(&afi);
                    StaleFamily {
                        afi,
                        until: now
                            + if llgr {
                                long_lived.unwrap_or_default()
                            } else {
                                restart
                            },
                        long_lived,
                        llgr,
                    }
                })
                .collect();
            if !gr_fams.is_empty() {
                out.note(
                    id,
                    Note::DownKeptStale {
                        restart_s: restart.as_secs(),
                    },
                );
            }
            for f in &up.negotiated.families {
                if f.safi == Safi::Unicast && !keep.contains(&f.afi) {
                    out.note(
                        id,
                        Note::StaleFlushed {
                            afi: f.afi,
                            why: "not in the peer's graceful restart capability",
                        },
                    );
                }
            }
            let long_lived: Vec<(Afi, Duration)> = entry
                .gr_stale
                .iter()
                .filter(|f| f.llgr)
                .map(|f| (f.afi, f.long_lived.unwrap_or_default()))
                .collect();
            let _ = self.rib.mark_stale_families(id, &keep, &mut self.changed);
            // Multicast routes are kept stale for the AFIs kept above whose
            // multicast family the peer also listed; the others go now.
            let mc_keep: Vec<Afi> = keep
                .iter()
                .copied()
                .filter(|&afi| {
                    gr.is_some_and(|g| {
                        g.families
                            .iter()
                            .any(|f| f.afi_safi == AfiSafi::new(afi, Safi::Multicast))
                    })
                })
                .collect();
            let _ = self
                .mcast
                .mark_stale_families(id, &mc_keep, &mut self.mcast_changed);
            for (afi, llst) in long_lived {
                let stale_s = llst.as_secs();
                out.note(id, Note::LongLivedStale { afi, stale_s });
                let _ = self.rib.enter_llgr(id, afi, &mut self.changed);
            }
        } else {
            out.note(id, Note::DownFlushed);
            entry.gr_stale.clear();
            let _ = self.rib.peer_down(id, &mut self.changed);
            let _ = self.mcast.peer_down(id, &mut self.mcast_changed);
        }
        self.rebuild_roles();
    }

    fn on_updates(&mut self, id: PeerId, updates: Vec<DecodedUpdate>, out: &mut Outbox) {
        let t0 = self.ns();
        let Some(entry) = self.peers.get(id.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        if entry.up.is_none() {
            return;
        }
        let from = self.roles.get(id.0 as usize).copied().flatten();
        let mut importer = policy::Importer::new(entry, &self.settings, self.rov.as_deref())
            .with_aspa(self.aspa.as_deref())
            .timed(&*self.meter);
        let n_updates = updates.len().max(1) as u64;
        let mut policy_ns = 0u64;
        let mut eor_swept = Vec::new();
        let mut eor_families = Vec::new();
        for mut u in updates {
            self.counters.updates += 1;
            if let Some(family) = u.end_of_rib {
                out.note(id, Note::EndOfRib { family });
                eor_families.push(family);
                if family.safi == Safi::Multicast {
                    // A complete multicast table: its stale routes go.
                    let _ = self
                        .mcast
                        .sweep_stale_afi(id, family.afi, &mut self.mcast_changed);
                } else if entry.gr_stale.iter().any(|f| f.afi == family.afi) {
                    let purged = self
                        .rib
                        .sweep_stale_afi(id, family.afi, &mut self.changed)
                        .unwrap_or(0);
                    out.note(id, Note::StaleSwept { family, purged });
                    eor_swept.push(family.afi);
                }
                continue;
            }
            let m = &mut u.multicast;
            let parts = [
                (
                    &mut u.attrs,
                    &mut u.announce,
                    &mut u.withdraw,
                    Safi::Unicast,
                ),
                (
                    &mut m.attrs,
                    &mut m.announce,
                    &mut m.withdraw,
                    Safi::Multicast,
                ),
            ];
            for (attrs, announce, withdraw, safi) in parts {
                if announce.is_empty() && withdraw.is_empty() {
                    continue;
                }
                if let (Some(attrs), Some(from)) = (attrs.as_mut(), from.as_ref()) {
                    let tp = self.meter.now_ns();
                    let check = policy::import_check(&self.settings, entry, from, attrs);
                    // Only an OTC to add (RFC 9234 §5) needs a private copy
                    // of attributes other parts may share.
                    let allowed = match check {
                        ImportCheck::AddOtc(_) => check.apply(Arc::make_mut(attrs)),
                        _ => check.is_accept(),
                    };
                    policy_ns += self.meter.now_ns().saturating_sub(tp);
                    if !allowed {
                        // RFC 4271 §9.1.2 / RFC 4456 §8: a looped route is
                        // not eligible; drop what this peer had for these
                        // prefixes.
                        self.counters.loops_rejected += announce.len() as u64;
                        withdraw.append(announce);
                    }
                }
                if self.rov.is_some() {
                    for n in announce.iter() {
                        self.rov_index.hold(&n.prefix);
                    }
                }
                self.counters.prefixes_announced += announce.len() as u64;
                self.counters.prefixes_withdrawn += withdraw.len() as u64;
                let (rib, changed) = match safi {
                    Safi::Multicast => (&mut self.mcast, &mut self.mcast_changed),
                    _ => (&mut self.rib, &mut self.changed),
                };
                if let Err(e) = rib.apply_update(
                    id,
                    announce,
                    attrs.as_deref(),
                    withdraw,
                    &mut importer,
                    changed,
                ) {
                    out.note(
                        id,
                        Note::UpdateNotApplied {
                            error: e.to_string(),
                        },
                    );
                }
            }
        }
        let (evals, named_ns) = (importer.evals, importer.ns);
        let dt = self.ns().saturating_sub(t0);
        self.counters.apply_ns += dt;
        out.sample(Stage::Batch, dt, n_updates);
        // The policy stage: the ingress checks of each UPDATE, and each
        // named import policy run over one prefix (inside the RIB update,
        // whose time excludes it).
        out.sample(Stage::Policy, policy_ns, n_updates);
        if evals > 0 {
            out.sample(Stage::Policy, named_ns, evals);
        }
        let rib_ns = dt.saturating_sub(policy_ns).saturating_sub(named_ns);
        out.sample(Stage::RibUpdate, rib_ns, n_updates);
        if let (false, Some(e)) = (eor_swept.is_empty(), self.peer_mut(id)) {
            e.gr_stale.retain(|f| !eor_swept.contains(&f.afi));
        }
        if let Some(up) = self.peer_mut(id).and_then(|e| e.up.as_mut()) {
            for f in eor_families {
                if !up.eor_received.contains(&f) {
                    up.eor_received.push(f);
                }
            }
        }
        self.sync_received(id);
        self.check_max_prefix(id, out);
    }

    /// Acts on the peer's received count summed over every part; the
    /// part that first sees the limit crossed acts, once per session.
    fn check_max_prefix(&mut self, id: PeerId, out: &mut Outbox) {
        let Some(entry) = self.peer_mut(id) else {
            return;
        };
        let Some(mp) = entry.meta.max_prefix else {
            return;
        };
        let received = entry.status.rib_received.load(Ordering::Relaxed);
        let tripped = &entry.status.max_prefix_tripped;
        if received > mp.limit && !tripped.swap(true, Ordering::Relaxed) {
            out.note(
                id,
                Note::MaxPrefixExceeded {
                    received,
                    limit: mp.limit,
                    action: mp.action,
                },
            );
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
                    out.cmd(
                        id,
                        SessionCmd::Stop {
                            notification,
                            restart_after: Some(d),
                        },
                    );
                }
                MaxPrefixAction::Shutdown => {
                    entry.disabled = true;
                    out.cmd(
                        id,
                        SessionCmd::Stop {
                            notification,
                            restart_after: None,
                        },
                    );
                }
            }
        } else if mp.warn_percent > 0
            && received * 100 >= mp.limit * u64::from(mp.warn_percent)
            && !tripped.load(Ordering::Relaxed)
            && !entry.status.max_prefix_warned.swap(true, Ordering::Relaxed)
        {
            out.note(
                id,
                Note::MaxPrefixWarning {
                    received,
                    limit: mp.limit,
                },
            );
        }
    }

    fn on_route_refresh(
        &mut self,
        now: Instant,
        id: PeerId,
        family: AfiSafi,
        subtype: u8,
        barrier: Option<Arc<FlushBarrier>>,
        out: &mut Outbox,
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
                out.note(id, Note::RefreshRequested { family });
                if enhanced && !up.refresh_owed.iter().any(|(f, _)| *f == family) {
                    up.refresh_owed.push((family, barrier));
                }
                // The routes of the family's table (RFC 2918 §4).
                match family.safi {
                    Safi::Multicast => self.mcast.resend_all(id),
                    _ => self.rib.resend_all(id),
                }
                self.export_full(id);
            }
            // RFC 7313 §4: the peer re-advertises everything of the family
            // between BoRR and EoRR; what it does not re-advertise is gone.
            // Without the capability the subtypes are ignored (§5).
            route_refresh::BORR if enhanced => {
                out.note(id, Note::BeginRefresh { family });
                let deadline = now + ENHANCED_REFRESH_STALE;
                up.refreshing.retain(|(f, _)| *f != family);
                up.refreshing.push((family, deadline));
                let _ = self.table(family.safi).0.mark_stale_afi(id, family.afi);
            }
            route_refresh::EORR if enhanced => {
                let Some(i) = up.refreshing.iter().position(|(f, _)| *f == family) else {
                    // §4: an EoRR without a BoRR is ignored.
                    return;
                };
                up.refreshing.swap_remove(i);
                let (rib, changed) = self.table(family.safi);
                let purged = rib.sweep_stale_afi(id, family.afi, changed).unwrap_or(0);
                out.note(id, Note::EndRefresh { family, purged });
            }
            _ => out.note(id, Note::RefreshSubtypeIgnored { subtype }),
        }
    }

    /// Re-applies import policy to `id`'s routes. With `prefer_wire` (the
    /// CLI's `neighbor X refresh`) a ROUTE-REFRESH is sent when the peer
    /// supports it (RFC 2918); otherwise (a policy change) the stored
    /// pre-policy Adj-RIB-In is re-imported, falling back to ROUTE-REFRESH
    /// when it does not hold every route (soft reconfiguration switched on
    /// by a reload: the store starts with the next session).
    pub fn refresh_in(&mut self, id: PeerId, prefer_wire: bool, out: &mut Outbox) {
        let Some(entry) = self.peers.get(id.0 as usize).and_then(Option::as_ref) else {
            return;
        };
        let Some(up) = entry.up.as_ref() else {
            return;
        };
        let stored = entry.meta.keep_pre_policy
            && (self.rib.shards().iter())
                .chain(self.mcast.shards())
                .all(|s| s.pre_policy_complete(id));
        if stored && !(prefer_wire && up.negotiated.route_refresh) {
            let mut importer = policy::Importer::new(entry, &self.settings, self.rov.as_deref())
                .with_aspa(self.aspa.as_deref());
            for s in self.rib.shards_mut() {
                let _ = s.reimport(id, &mut importer, &mut self.changed);
            }
            for s in self.mcast.shards_mut() {
                let _ = s.reimport(id, &mut importer, &mut self.mcast_changed);
            }
        } else if up.negotiated.route_refresh && self.part.is_primary() {
            for &family in &up.negotiated.families {
                out.cmd(id, SessionCmd::SendRouteRefresh { family });
            }
        }
    }

    /// Recomputes everything `id` should have (session up, export policy
    /// change); only differences are queued.
    pub fn export_full(&mut self, id: PeerId) {
        let t0 = self.ns();
        let roles = std::mem::take(&mut self.roles);
        let summarised = self.summarised();
        let mut ex = policy::exporter(
            &self.peers,
            roles,
            &self.settings,
            self.rov.as_deref(),
            self.aspa.as_deref(),
            summarised,
        );
        for s in self
            .rib
            .shards_mut()
            .iter_mut()
            .chain(self.mcast.shards_mut())
        {
            let _ = s.export_full(id, &mut ex);
        }
        self.roles = ex.roles;
        self.counters.export_ns += self.ns().saturating_sub(t0);
    }

    /// Exports the changes collected since the last call and hands the
    /// packed UPDATEs of every session that may have them at `now` (MRAI,
    /// back-pressure) to `out`.
    pub fn propagate(&mut self, now: Instant, out: &mut Outbox) {
        if self.deferring(now, out) {
            return;
        }
        self.round_prefixes = self.prefix_total();
        // Aggregates follow their contributors' changes.
        self.update_aggregates();
        // ADD-PATH peers also hear of non-best path changes, which the RIB
        // tracks itself.
        if !self.changed.is_empty() || self.rib.path_changes_pending() {
            let t0 = self.ns();
            // Export in arrival order (issue 17, (c10)): the prefixes of
            // one received UPDATE stay together in the peers' pending
            // queues, so a drain step packs them into one UPDATE again.
            let arrival = arrival_order(&mut self.changed, &mut self.order);
            self.counters.best_changes += self.changed.len() as u64;
            let n_changed = self.changed.len() as u64;
            let t_best = self.ns().saturating_sub(t0);
            let roles = std::mem::take(&mut self.roles);
            let summarised = self.summarised();
            let mut ex = policy::exporter(
                &self.peers,
                roles,
                &self.settings,
                self.rov.as_deref(),
                self.aspa.as_deref(),
                summarised,
            );
            let changed = std::mem::take(&mut self.changed);
            // Multipath sets follow non-best path changes, which export
            // consumes: note them first.
            let mut mp_extra: Vec<Prefix> = Vec::new();
            if self.want_best {
                for s in self.rib.shards() {
                    if s.config().multipath.enabled() {
                        mp_extra.extend_from_slice(s.pending_path_changes());
                    }
                }
            }
            // Views read the non-best path changes that export consumes.
            if !self.views.is_empty() {
                self.views.update(&self.rib, &self.peers, &changed, out);
            }
            for s in self.rib.shards_mut() {
                s.export_changes(&arrival, &mut ex);
            }
            self.order.buf = arrival;
            self.roles = ex.roles;
            let t_export = self.ns().saturating_sub(t0).saturating_sub(t_best);
            let tf = self.ns();
            if self.want_best {
                if mp_extra.is_empty() {
                    out.best
                        .extend(changed.iter().map(|p| best_change(&self.rib, p)));
                } else {
                    // Multipath: a change of a non-best path may change
                    // the forwarded set too.
                    mp_extra.extend_from_slice(&changed);
                    mp_extra.sort_unstable();
                    mp_extra.dedup();
                    out.best
                        .extend(mp_extra.iter().map(|p| best_change(&self.rib, p)));
                }
            }
            let t_best = t_best + self.ns().saturating_sub(tf);
            self.changed = changed;
            self.changed.clear();
            self.counters.export_ns += self.ns().saturating_sub(t0);
            out.sample(Stage::BestPath, t_best, n_changed);
            out.sample(Stage::Export, t_export, n_changed);
        }
        // Multicast: exported the same way, never in the best feed.
        if !self.mcast_changed.is_empty() || self.mcast.path_changes_pending() {
            let t0 = self.ns();
            let mut changed = std::mem::take(&mut self.mcast_changed);
            changed.sort_unstable();
            changed.dedup();
            self.counters.best_changes += changed.len() as u64;
            let roles = std::mem::take(&mut self.roles);
            let summarised = self.summarised();
            let mut ex = policy::exporter(
                &self.peers,
                roles,
                &self.settings,
                self.rov.as_deref(),
                self.aspa.as_deref(),
                summarised,
            );
            for s in self.mcast.shards_mut() {
                s.export_changes(&changed, &mut ex);
            }
            self.roles = ex.roles;
            changed.clear();
            self.mcast_changed = changed;
            self.counters.export_ns += self.ns().saturating_sub(t0);
        }
        self.flush(now, out);
    }

    /// Whether the last flush held changes back from a session for want of
    /// room in its queue (pull export, docs/adr/0004): a runtime whose
    /// sessions take everything at once (a simulator) runs
    /// [`Self::propagate`] again.
    pub fn export_backlog(&self) -> bool {
        self.peers
            .iter()
            .flatten()
            .any(|e| e.up.as_ref().is_some_and(|u| u.backlog))
    }

    /// The whole Loc-RIB of this part as best-route changes (a new
    /// follower's snapshot).
    pub fn best_snapshot(&self) -> impl Iterator<Item = BestChange> + '_ {
        self.rib.iter().filter_map(|r| {
            r.best()?;
            Some(best_change(&self.rib, &r.prefix))
        })
    }

    /// Replaces the static routes (originated from [`STATIC_PEER`]).
    pub fn set_statics(&mut self, routes: Vec<StaticRoute>) {
        let part = self.part;
        statics::replace(
            &mut self.rib,
            &mut self.statics,
            &mut self.changed,
            part,
            routes,
        );
    }

    /// Originates `add` and withdraws `withdraw` from [`STATIC_PEER`]
    /// beside the configured statics (which are left alone): the gRPC
    /// API's AddPath and DeletePath. Only the prefixes this part owns are
    /// applied; returns how many.
    pub fn originate(&mut self, add: &[StaticRoute], withdraw: &[Prefix]) -> usize {
        let part = self.part;
        statics::originate(
            &mut self.rib,
            &self.statics,
            &mut self.changed,
            part,
            add,
            withdraw,
        )
    }
}

fn ip_of(nh: NextHop) -> IpAddr {
    match nh {
        NextHop::V4(a) => IpAddr::V4(a),
        NextHop::V6(a) | NextHop::V6LinkLocal(a, _) => IpAddr::V6(a),
    }
}

/// The best next hop of `prefix` in `rib` now (the IPv6 global address
/// when a link-local one is also present).
pub fn best_next_hop(rib: &Rib, prefix: &Prefix) -> Option<IpAddr> {
    let r = rib.lookup(prefix)?;
    let (_, attrs) = r.best()?;
    attrs.next_hop().map(ip_of)
}

/// The best route of `prefix` in `rib` now as the forwarding plane takes
/// it: the best next hop and, with multipath on, the other distinct next
/// hops of its multipath set (`bgp_rib::multipath`).
pub fn best_change(rib: &Rib, prefix: &Prefix) -> BestChange {
    let mut c = BestChange::single(*prefix, best_next_hop(rib, prefix));
    let mp = rib.shards().first().map(|s| s.config().multipath);
    if c.next_hop.is_none() || !mp.is_some_and(|m| m.enabled()) {
        return c;
    }
    let Some(r) = rib.lookup(prefix) else {
        return c;
    };
    for i in rib.multipath(prefix).into_iter().skip(1) {
        let Some(nh) = r
            .paths
            .get(i)
            .and_then(|p| rib.shards().get(rib.shard_of(prefix))?.attrs(p.attrs))
            .and_then(|a| a.next_hop())
            .map(ip_of)
        else {
            continue;
        };
        if c.next_hop != Some(nh) && !c.ecmp.contains(&nh) {
            c.ecmp.push(nh);
        }
    }
    c
}

/// [`arrival_order`]'s buffers, kept between export rounds so that a
/// round allocates nothing once they have grown.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct ArrivalScratch {
    /// The arrival order handed out (the caller gives it back here).
    pub buf: Vec<Prefix>,
    /// IPv4 changes: prefix and index packed into one word.
    keys: Vec<u64>,
    /// IPv6 changes (and every change of a round too large for a word's
    /// index): (prefix, index) pairs.
    pairs: Vec<(Prefix, u32)>,
    /// The sorted prefixes before they become `changed`.
    sorted: Vec<Prefix>,
    /// Which changes are their prefix's last.
    keep: Vec<bool>,
}

/// Bits of an [`ArrivalScratch::keys`] word that hold the change's index:
/// below them the prefix length, above them the IPv4 address, so that the
/// words sort as (prefix, index) pairs do. A round of 2^24 changes or
/// more sorts pairs only (the daemon's RIB threads stop taking input for
/// a round at 32k changes).
const KEY_INDEX_BITS: u32 = 24;

/// Sorts and dedups `changed` (as the rest of an export round reads it)
/// and returns the same prefixes in the order of their last change, in
/// `scratch.buf`'s allocation (issue 17, scenario (c10)).
///
/// Why: peers' pending queues drain oldest first, a step at a time, and
/// a step packs prefixes with the same attribute set into one UPDATE. In
/// prefix order the prefixes of one received UPDATE (one attribute set,
/// often spread over the address space) landed in different steps and
/// went out one per UPDATE: 1.07 prefixes per UPDATE to the generators
/// in (c10) with `--export all`, against the 2.3 they sent and BIRD
/// passed on. The last change is the one that set the best path the
/// export sends.
///
/// Each change is sorted once (by prefix, for the dedup); the arrival
/// order is then the changes that are their prefix's last, read in place
/// (`keep` marks them), where a second sort by index cost about 2 % of
/// scenario (a)'s CPU time (issue 17). IPv4 changes are sorted as one `u64` each
/// (address, length, index) instead of a 24-byte (prefix, index) pair
/// compared field by field: that sort was 5 % of (a)'s CPU time
/// (docs/BENCHMARKS.md, "the export round's sort"). IPv6 changes are
/// sorted as pairs, apart; every IPv4 prefix orders before every IPv6 one.
#[doc(hidden)]
pub fn arrival_order(changed: &mut Vec<Prefix>, scratch: &mut ArrivalScratch) -> Vec<Prefix> {
    arrival_order_words(changed, scratch, true)
}

/// [`arrival_order`] sorting (prefix, index) pairs for every change, as
/// it did before IPv4 changes became words: the baseline of
/// `benches/arrival.rs` and a path the tests check.
#[doc(hidden)]
pub fn arrival_order_pairs(changed: &mut Vec<Prefix>, scratch: &mut ArrivalScratch) -> Vec<Prefix> {
    arrival_order_words(changed, scratch, false)
}

/// [`arrival_order`]; with `words`, IPv4 changes of a round of fewer
/// than 2^[`KEY_INDEX_BITS`] changes are sorted as words, the rest as
/// pairs.
fn arrival_order_words(
    changed: &mut Vec<Prefix>,
    scratch: &mut ArrivalScratch,
    words: bool,
) -> Vec<Prefix> {
    let ArrivalScratch {
        buf,
        keys,
        pairs,
        sorted,
        keep,
    } = scratch;
    keys.clear();
    pairs.clear();
    let words = words && changed.len() < 1 << KEY_INDEX_BITS;
    for (i, p) in changed.iter().enumerate() {
        match p {
            Prefix::V4(p) if words => keys.push(
                u64::from(p.addr_bits()) << 32 | u64::from(p.len()) << KEY_INDEX_BITS | i as u64,
            ),
            _ => pairs.push((*p, i as u32)),
        }
    }
    let index = |k: u64| (k & ((1 << KEY_INDEX_BITS) - 1)) as usize;
    keys.sort_unstable();
    // Per prefix the last word of its run: the highest index.
    let mut w = 0;
    for r in 0..keys.len() {
        let k = keys[r];
        if keys
            .get(r + 1)
            .is_some_and(|n| n >> KEY_INDEX_BITS == k >> KEY_INDEX_BITS)
        {
            continue;
        }
        keys[w] = k;
        w += 1;
    }
    keys.truncate(w);
    pairs.sort_unstable();
    // Per prefix one pair, with its last (highest) index.
    pairs.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 = later.1;
        }
        same
    });
    keep.clear();
    keep.resize(changed.len(), false);
    let last = keys
        .iter()
        .map(|&k| index(k))
        .chain(pairs.iter().map(|e| e.1 as usize));
    for i in last {
        if let Some(k) = keep.get_mut(i) {
            *k = true;
        }
    }
    // The words hold IPv4 prefixes only, and those sort first.
    sorted.clear();
    sorted.extend(keys.iter().filter_map(|&k| changed.get(index(k)).copied()));
    sorted.extend(pairs.iter().map(|e| e.0));
    let mut out = std::mem::take(buf);
    out.clear();
    out.extend(
        changed
            .iter()
            .zip(keep.iter())
            .filter(|(_, k)| **k)
            .map(|(p, _)| *p),
    );
    std::mem::swap(changed, sorted);
    out
}

#[cfg(test)]
mod arrival_tests {
    use super::{arrival_order, arrival_order_pairs, ArrivalScratch};
    use base::Prefix;

    /// The order as it was computed before (a second sort by index):
    /// the reference the one-sort version must equal.
    fn by_two_sorts(changed: &[Prefix]) -> (Vec<Prefix>, Vec<Prefix>) {
        let mut idx: Vec<(Prefix, u32)> = changed
            .iter()
            .enumerate()
            .map(|(i, p)| (*p, i as u32))
            .collect();
        idx.sort_unstable();
        idx.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        let sorted = idx.iter().map(|e| e.0).collect();
        idx.sort_unstable_by_key(|e| e.1);
        (sorted, idx.iter().map(|e| e.0).collect())
    }

    #[test]
    fn arrival_order_is_the_order_of_each_prefix_last_change() {
        let p = |s: &str| s.parse::<Prefix>().unwrap();
        let mut changed = vec![
            p("10.0.2.0/24"),
            p("10.0.1.0/24"),
            p("2001:db8::/32"),
            p("10.0.2.0/24"),
            p("10.0.3.0/24"),
            p("10.0.1.0/24"),
        ];
        let mut scratch = ArrivalScratch::default();
        let out = arrival_order(&mut changed, &mut scratch);
        assert_eq!(
            out,
            vec![
                p("2001:db8::/32"),
                p("10.0.2.0/24"),
                p("10.0.3.0/24"),
                p("10.0.1.0/24")
            ]
        );
        assert_eq!(
            changed,
            vec![
                p("10.0.1.0/24"),
                p("10.0.2.0/24"),
                p("10.0.3.0/24"),
                p("2001:db8::/32")
            ]
        );
        // Pseudo-random rounds with repeats, the buffers reused: equal to
        // the two-sort reference every time.
        let mut x = 0x2545_f491_u64;
        for round in 0..50 {
            let n = (round * 37) % 700;
            let mut changed: Vec<Prefix> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let a = 0x0a00_0000 | (((x >> 8) as u32 % 97) << 8);
                    // Lengths that share an address (10.0.0.0/8, /16, /24),
                    // host bits set on some, and in every third round some
                    // IPv6 prefixes: IPv4 words and IPv6 pairs in one
                    // round, each against the reference.
                    match x % 11 {
                        0 if round % 3 == 0 => Prefix::V6(
                            base::Prefix6::new(0x2001_0db8 << 96 | u128::from(x % 5) << 64, 64)
                                .unwrap(),
                        ),
                        1 => Prefix::V4(base::Prefix4::new(a & 0xff00_0000, 8).unwrap()),
                        2 => Prefix::V4(base::Prefix4::new(a & 0xffff_0000, 16).unwrap()),
                        3 => Prefix::V4(base::Prefix4::new(a | 1, 24).unwrap()),
                        4 => Prefix::V4(base::Prefix4::new(a | (x as u32 & 3), 32).unwrap()),
                        _ => Prefix::V4(base::Prefix4::new(a, 24).unwrap()),
                    }
                })
                .collect();
            let (sorted, arrival) = by_two_sorts(&changed);
            // Pairs only (a round too large for the words) as well.
            let mut pairs_only = changed.clone();
            let mut scratch2 = ArrivalScratch::default();
            let out = arrival_order_pairs(&mut pairs_only, &mut scratch2);
            assert_eq!(out, arrival, "round {round}, pairs only");
            assert_eq!(pairs_only, sorted, "round {round}, pairs only");
            scratch.buf = arrival_order(&mut changed, &mut scratch);
            assert_eq!(scratch.buf, arrival, "round {round}");
            assert_eq!(changed, sorted, "round {round}");
        }
    }
}
