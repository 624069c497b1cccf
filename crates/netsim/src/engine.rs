//! The event loop: ASes ([`RibCore`]s), sessions, the event queue and the
//! scenario actions. See the crate docs for the model.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::{AfiSafi, Asn, Instant, Prefix};
use bgp_core::decode::{decode_update, Decoded};
use bgp_core::{
    DecodedUpdate, LinkAddrs, Outbox, Output, Part as RibPart, PeerEntry, PeerMeta, PeerStatus,
    PolicyRef, RibCore, RibInput, RibSettings, SessionUp, StaticRoute,
};
use bgp_fsm::{DownReason, Negotiated};
use bgp_rib::{AttrSet, AttrsBuilder, BestPathConfig, NextHopMode, PathSelection, PeerId};
use bgp_wire::{AsPath, AttrValue, NextHop, Origin, ParseCtx, PathAttr, PathAttribute};
use sim::Rng;
use topo::{Graph, NodeId, Role};

use crate::policy::Policies;
use crate::scenario::{Action, Scenario};

/// BGP message header length (RFC 4271 §4.1).
const HEADER: usize = 19;
/// BGP message type UPDATE.
const UPDATE: u8 = 2;

/// How the simulation runs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// MinRouteAdvertisementIntervalTimer per eBGP session (RFC 4271
    /// §9.2.1.1 suggests 30 s). Zero switches MRAI off.
    pub mrai: Duration,
    /// Multiply each MRAI interval by a fresh random factor in 0.75..1.0
    /// (RFC 4271 §9.2.1.1 jitter, §10).
    pub mrai_jitter: bool,
    /// Processing cost of one received UPDATE message.
    pub per_update: Duration,
    /// Processing cost of each prefix (announced or withdrawn) in it.
    pub per_prefix: Duration,
    /// Seed of the jitter and of random scenario events.
    pub seed: u64,
    /// Compare MED between routes from different neighbour ASes
    /// (`always_compare_med`); off by default, as in RFC 4271.
    pub always_compare_med: bool,
    /// Worker threads: the ASes are split over this many parts (AS `x`
    /// in part `x % threads`), run in parallel in windows as long as the
    /// shortest link latency (conservative synchronisation). 1: one
    /// sequential event loop. A topology with a zero-latency link runs
    /// sequentially.
    pub threads: usize,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            mrai: Duration::from_secs(30),
            mrai_jitter: true,
            per_update: Duration::from_micros(50),
            per_prefix: Duration::from_micros(5),
            seed: 0,
            always_compare_med: false,
            threads: 1,
        }
    }
}

/// Sees every BGP message a traced AS receives (`at`, from neighbour
/// `from`, at simulated time `t_ns`; `msg` is the whole message, header
/// included).
pub trait Observer {
    /// One received message.
    fn received(&mut self, t_ns: u64, at: NodeId, from: NodeId, msg: &[u8]);
    /// The session of traced AS `at` with `from` reached Established
    /// (`up`) or left it.
    fn session(&mut self, _t_ns: u64, _at: NodeId, _from: NodeId, _up: bool) {}
}

impl Observer for () {
    fn received(&mut self, _: u64, _: NodeId, _: NodeId, _: &[u8]) {}
}

impl<A: Observer, B: Observer> Observer for (A, B) {
    fn received(&mut self, t_ns: u64, at: NodeId, from: NodeId, msg: &[u8]) {
        self.0.received(t_ns, at, from, msg);
        self.1.received(t_ns, at, from, msg);
    }
    fn session(&mut self, t_ns: u64, at: NodeId, from: NodeId, up: bool) {
        self.0.session(t_ns, at, from, up);
        self.1.session(t_ns, at, from, up);
    }
}

/// The IPv4 address (and BGP Identifier) of a node's router: 10.0.0.0
/// plus the node index plus one.
pub fn node_addr(n: NodeId) -> Ipv4Addr {
    Ipv4Addr::from(0x0A00_0000u32.wrapping_add(n).wrapping_add(1))
}

/// The IPv6 address of a node's router (next hop of IPv6 routes).
pub fn node_addr6(n: NodeId) -> Ipv6Addr {
    Ipv6Addr::from(0x2001_0db8_0000_0000_0000_0000_0000_0000u128 + u128::from(n) + 1)
}

/// A route as a test or report reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteInfo {
    /// The prefix.
    pub prefix: Prefix,
    /// The neighbour it came from; `None` for a route the AS originates.
    pub from: Option<NodeId>,
    /// The AS_PATH as stored (the neighbour's AS first).
    pub as_path: Vec<u32>,
    /// LOCAL_PREF set by import policy.
    pub local_pref: Option<u32>,
    /// MULTI_EXIT_DISC, if any.
    pub med: Option<u32>,
}

/// Counters of one scenario event (index 0: the initial announcement).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventStats {
    /// What happened.
    pub name: String,
    /// When, in simulated nanoseconds.
    pub at_ns: u64,
    /// UPDATE messages sent by all ASes until the next event started.
    pub updates: u64,
    /// Prefixes (announced plus withdrawn) in those UPDATEs.
    pub prefixes: u64,
    /// The last time an UPDATE was applied in that window (convergence:
    /// `last_ns - at_ns`).
    pub last_ns: u64,
}

impl EventStats {
    /// Time from the event to the last UPDATE it caused (attributed to the
    /// most recent event).
    pub fn convergence(&self) -> Duration {
        Duration::from_nanos(self.last_ns.saturating_sub(self.at_ns))
    }
}

struct Sess {
    peer: NodeId,
    /// Our index in the peer's session list.
    back: u16,
    role: Role,
    lat_ns: u64,
    up: bool,
    /// Bumped at every down/up: messages of an older session are dropped.
    epoch: u32,
    ctx: ParseCtx,
    /// The MRAI wake-up already scheduled for this session (0: none).
    wake: u64,
    med: Option<u32>,
}

struct AsNode {
    core: RibCore,
    /// MRAI jitter draws (one stream per AS, so that the draws do not
    /// depend on how ASes are split over threads).
    rng: Rng,
    sess: Vec<Sess>,
    busy_until: u64,
    prop_scheduled: bool,
    originated: Vec<Prefix>,
    leak: bool,
}

enum Kind {
    Deliver {
        to: NodeId,
        sess: u16,
        epoch: u32,
        bytes: Vec<u8>,
    },
    Apply {
        to: NodeId,
        sess: u16,
        epoch: u32,
        updates: Vec<DecodedUpdate>,
    },
    Propagate(NodeId),
    Wake(NodeId),
    Act(usize),
}

struct Ev {
    t: u64,
    seq: u64,
    kind: Kind,
}

impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    // Reversed: BinaryHeap pops the earliest (time, sequence) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

struct Planned {
    action: Action,
    stat: usize,
}

/// What the threads share read-only.
struct Env<'a> {
    cfg: &'a SimConfig,
    traced: &'a [bool],
}

/// Counters of the current scenario event, gathered per part.
#[derive(Default)]
struct Acc {
    updates: u64,
    prefixes: u64,
    last: u64,
}

/// One part of the network: the ASes placed in it ([`partition`]), their
/// events, and what they produced for the others and for the observer.
struct Part {
    index: usize,
    /// (part, slot in its `nodes`) of every AS.
    place: Arc<Vec<(u32, u32)>>,
    nodes: Vec<AsNode>,
    queue: BinaryHeap<Ev>,
    seq: u64,
    now: u64,
    out: Outbox,
    events: u64,
    messages: u64,
    /// Work done: UPDATEs plus prefixes applied (the proxy of
    /// [`Sim::balance`]).
    work: u64,
    acc: Acc,
    /// Received messages of traced ASes: (time, at, from, message).
    trace: Vec<(u64, NodeId, NodeId, Vec<u8>)>,
    /// Deliveries to other parts' ASes.
    outgoing: Vec<(u64, Kind)>,
}

/// A simulated network (see the crate docs).
pub struct Sim {
    cfg: SimConfig,
    asns: Vec<u32>,
    traced: Vec<bool>,
    parts: Vec<Part>,
    /// Scenario actions (`Kind::Act`), run between windows.
    acts: BinaryHeap<Ev>,
    act_seq: u64,
    acts_done: u64,
    /// Shortest latency of a link between parts, ns: the window of
    /// parallel runs.
    lookahead: u64,
    /// (part, slot) of every AS.
    place: Arc<Vec<(u32, u32)>>,
    /// Windows run, and those run on several threads.
    windows: (u64, u64),
    /// Work summed over parts and windows, and the sum of each window's
    /// largest part ([`Sim::balance`]).
    balance: (u64, u64),
    now: u64,
    rng: Rng,
    policies: Policies,
    planned: Vec<Planned>,
    stats: Vec<EventStats>,
    cur: usize,
    started: bool,
    /// Prefixes originated per node at the start.
    initial: Vec<Vec<Prefix>>,
    stubs: Vec<NodeId>,
    /// Session changes at traced ASes not yet shown to the observer.
    sessions_seen: Vec<(u64, NodeId, NodeId, bool)>,
}

fn negotiated(peer_asn: u32, peer: NodeId) -> Negotiated {
    Negotiated {
        peer_asn: Asn(peer_asn),
        peer_bgp_id: node_addr(peer),
        hold_time: 90,
        keepalive_interval: 30,
        four_octet_asn: true,
        families: vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
        add_path: Vec::new(),
        extended_message: false,
        route_refresh: true,
        enhanced_route_refresh: false,
        graceful_restart: None,
        llgr: None,
        local_role: None,
        peer_role: None,
        fqdn: None,
        ext_next_hop_rx: Vec::new(),
        ext_next_hop_tx: Vec::new(),
    }
}

/// Walks the whole BGP messages in `bytes`.
fn messages(bytes: &[u8]) -> impl Iterator<Item = &[u8]> + '_ {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        let len = usize::from(u16::from_be_bytes([*rest.get(16)?, *rest.get(17)?]));
        if len < HEADER || len > rest.len() {
            return None;
        }
        let (m, r) = rest.split_at(len);
        rest = r;
        Some(m)
    })
}

/// The AS_PATH of a stored attribute set, flattened.
pub fn as_path_of(attrs: &AttrSet) -> Vec<u32> {
    let mut v = Vec::new();
    if let Some(a) = attrs.find(2) {
        if let Ok(PathAttribute::AsPath(p)) = a.typed(AttrSet::ctx()) {
            for s in p.segments() {
                v.extend(s.asns().map(|x| x.0));
            }
        }
    }
    v
}

impl Sim {
    /// A network of `graph`'s ASes, each with one session per link; nothing
    /// happens until [`Sim::start`].
    pub fn new(graph: &Graph, cfg: SimConfig) -> Sim {
        let adj = graph.adjacency();
        let asns: Vec<u32> = graph.nodes.iter().map(|n| n.asn).collect();
        let mut index: HashMap<(NodeId, NodeId), u16> = HashMap::new();
        for (x, list) in adj.iter().enumerate() {
            for (i, a) in list.iter().enumerate() {
                index.insert((x as NodeId, a.node), i as u16);
            }
        }
        let policies = Policies::new();
        let bestpath = BestPathConfig {
            always_compare_med: cfg.always_compare_med,
            ..BestPathConfig::default()
        };
        let mut nodes = Vec::with_capacity(graph.nodes.len());
        for (x, list) in adj.iter().enumerate() {
            let x = x as NodeId;
            let asn = asns[x as usize];
            let settings = RibSettings {
                router_id: node_addr(x),
                cluster_id: node_addr(x),
                local_asn: Asn(asn),
                bestpath,
            };
            let mut core = RibCore::new(settings, 1, RibPart::WHOLE, SystemTime::UNIX_EPOCH);
            let mut sess = Vec::with_capacity(list.len());
            for (i, a) in list.iter().enumerate() {
                let meta = PeerMeta {
                    name: format!("AS{}", asns[a.node as usize]),
                    description: String::new(),
                    addr: IpAddr::V4(node_addr(a.node)),
                    remote_asn: Asn(asns[a.node as usize]),
                    local_asn: Asn(asn),
                    ebgp: true,
                    confed: false,
                    confed_id: None,
                    rr_client: false,
                    rs_client: false,
                    role: None,
                    next_hop: NextHopMode::Auto,
                    max_prefix: None,
                    import: policies.import(a.role),
                    export: policies.export(a.role, false),
                    keep_pre_policy: false,
                    families: vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
                    mrai: cfg.mrai,
                    add_path_send: PathSelection::All,
                    damping: false,
                };
                core.insert_peer(
                    PeerId(i as u16 + 1),
                    PeerEntry::new(meta, Arc::new(PeerStatus::default())),
                );
                let neg = negotiated(asns[a.node as usize], a.node);
                sess.push(Sess {
                    peer: a.node,
                    back: index.get(&(a.node, x)).copied().unwrap_or(0),
                    role: a.role,
                    lat_ns: u64::from(a.latency_us) * 1000,
                    up: false,
                    epoch: 0,
                    ctx: neg.parse_ctx(),
                    wake: 0,
                    med: None,
                });
            }
            nodes.push(AsNode {
                core,
                rng: Rng::new(cfg.seed ^ u64::from(x).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                sess,
                busy_until: 0,
                prop_scheduled: false,
                originated: Vec::new(),
                leak: false,
            });
        }
        let stubs = adj
            .iter()
            .enumerate()
            .filter(|(i, l)| {
                !l.iter().any(|a| a.role == Role::Customer) && !graph.nodes[*i].prefixes.is_empty()
            })
            .map(|(i, _)| i as NodeId)
            .collect();
        let want = if nodes.len() > 1 {
            cfg.threads.clamp(1, nodes.len())
        } else {
            1
        };
        let (part_of, lookahead) = partition(graph, &adj, want);
        let count = part_of.iter().map(|&p| p as usize + 1).max().unwrap_or(1);
        let mut slots = vec![0u32; count];
        let place: Vec<(u32, u32)> = part_of
            .iter()
            .map(|&p| {
                let s = slots[p as usize];
                slots[p as usize] += 1;
                (p, s)
            })
            .collect();
        let place = Arc::new(place);
        let mut parts: Vec<Part> = (0..count)
            .map(|index| Part {
                index,
                place: place.clone(),
                nodes: Vec::new(),
                queue: BinaryHeap::new(),
                seq: 0,
                now: 0,
                out: Outbox::default(),
                events: 0,
                messages: 0,
                work: 0,
                acc: Acc::default(),
                trace: Vec::new(),
                outgoing: Vec::new(),
            })
            .collect();
        for (x, n) in nodes.into_iter().enumerate() {
            parts[place[x].0 as usize].nodes.push(n);
        }
        Sim {
            rng: Rng::new(cfg.seed),
            cfg,
            traced: vec![false; asns.len()],
            asns,
            parts,
            acts: BinaryHeap::new(),
            act_seq: 0,
            acts_done: 0,
            lookahead,
            place,
            windows: (0, 0),
            balance: (0, 0),
            now: 0,
            policies,
            planned: Vec::new(),
            stats: vec![EventStats {
                name: "initial announcement".into(),
                ..EventStats::default()
            }],
            cur: 0,
            started: false,
            initial: graph.nodes.iter().map(|n| n.prefixes.clone()).collect(),
            stubs,
            sessions_seen: Vec::new(),
        }
    }

    /// Messages received at `node` go to the [`Observer`].
    pub fn trace(&mut self, node: NodeId) {
        if let Some(t) = self.traced.get_mut(node as usize) {
            *t = true;
        }
    }

    /// The node with AS number `asn`.
    pub fn node(&self, asn: u32) -> Option<NodeId> {
        self.asns
            .iter()
            .position(|&a| a == asn)
            .map(|i| i as NodeId)
    }

    /// AS numbers by node.
    pub fn asns(&self) -> &[u32] {
        &self.asns
    }

    /// `from` sends its routes to `to` with MULTI_EXIT_DISC `med` (set
    /// before [`Sim::start`]).
    pub fn set_export_med(&mut self, from: NodeId, to: NodeId, med: u32) {
        if from as usize >= self.asns.len() {
            return;
        }
        let policies = &self.policies;
        let n = node_mut(&mut self.parts, from);
        let Some(i) = n.sess.iter().position(|s| s.peer == to) else {
            return;
        };
        n.sess[i].med = Some(med);
        set_export(policies, n, i);
    }

    fn as_node(&self, x: NodeId) -> &AsNode {
        let (p, i) = self.place[x as usize];
        &self.parts[p as usize].nodes[i as usize]
    }

    fn schedule_propagate(&mut self, x: NodeId, t: u64) {
        let p = self.place[x as usize].0 as usize;
        self.parts[p].schedule_propagate(x, t);
    }

    /// Starts at time 0: every session comes up, every AS originates its
    /// prefixes, and the scenario's events are queued.
    pub fn start(&mut self, scenario: &Scenario) -> Result<(), String> {
        if self.started {
            return Err("already started".into());
        }
        self.started = true;
        for x in 0..self.asns.len() {
            for i in 0..self.as_node(x as NodeId).sess.len() {
                self.session_up(x as NodeId, i);
            }
        }
        for x in 0..self.asns.len() {
            let p = std::mem::take(&mut self.initial[x]);
            node_mut(&mut self.parts, x as NodeId).originated = p;
            self.originate(x as NodeId);
            self.schedule_propagate(x as NodeId, 0);
        }
        // In time order, so that the counters of each event cover the
        // window up to the next one.
        let mut events: Vec<_> = scenario.events.iter().collect();
        events.sort_by_key(|e| e.at);
        for e in events {
            self.plan(e.at, &e.action)?;
        }
        Ok(())
    }

    fn check_asn(&self, asn: u32) -> Result<NodeId, String> {
        self.node(asn)
            .ok_or_else(|| format!("AS{asn} is not in the topology"))
    }

    fn check_link(&self, a: u32, b: u32) -> Result<(), String> {
        let x = self.check_asn(a)?;
        let y = self.check_asn(b)?;
        if self.as_node(x).sess.iter().any(|s| s.peer == y) {
            Ok(())
        } else {
            Err(format!("no link AS{a}-AS{b}"))
        }
    }

    fn plan_one(&mut self, at: u64, action: Action, stat: usize) {
        let k = self.planned.len();
        self.planned.push(Planned { action, stat });
        self.act_seq += 1;
        self.acts.push(Ev {
            t: at,
            seq: self.act_seq,
            kind: Kind::Act(k),
        });
    }

    fn plan(&mut self, at: Duration, action: &Action) -> Result<(), String> {
        let at_ns = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
        match action {
            Action::LinkDown(a, b) | Action::LinkUp(a, b) | Action::SessionReset(a, b) => {
                self.check_link(*a, *b)?
            }
            Action::Withdraw(a, _)
            | Action::Announce(a, _)
            | Action::Hijack(a, _)
            | Action::Leak(a) => {
                self.check_asn(*a)?;
            }
            Action::Flap { asn, .. } => {
                self.check_asn(*asn)?;
            }
            Action::Surge { .. } => {}
        }
        let stat = self.stats.len();
        self.stats.push(EventStats {
            name: action.name(),
            at_ns,
            last_ns: at_ns,
            ..EventStats::default()
        });
        match action {
            Action::Flap {
                asn,
                prefix,
                period,
                count,
            } => {
                let p = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
                for c in 0..u64::from(*count) {
                    let t = at_ns.saturating_add(p.saturating_mul(2 * c));
                    self.plan_one(t, Action::Withdraw(*asn, *prefix), stat);
                    self.plan_one(t.saturating_add(p), Action::Announce(*asn, *prefix), stat);
                }
            }
            Action::Surge {
                duration,
                rate,
                hold,
            } => {
                let hold = u64::try_from(hold.as_nanos()).unwrap_or(u64::MAX);
                let d = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
                let n = (rate * duration.as_secs_f64()).max(0.0) as u64;
                if self.stubs.is_empty() {
                    return Ok(());
                }
                for _ in 0..n {
                    let t = at_ns + self.rng.below(d.max(1));
                    let x = self.stubs[self.rng.below(self.stubs.len() as u64) as usize];
                    let asn = self.asns[x as usize];
                    let ps = &self.initial_prefixes(x);
                    if ps.is_empty() {
                        continue;
                    }
                    let p = ps[self.rng.below(ps.len() as u64) as usize];
                    self.plan_one(t, Action::Withdraw(asn, p), stat);
                    self.plan_one(t.saturating_add(hold), Action::Announce(asn, p), stat);
                }
            }
            a => self.plan_one(at_ns, a.clone(), stat),
        }
        Ok(())
    }

    fn initial_prefixes(&self, x: NodeId) -> Vec<Prefix> {
        self.as_node(x).originated.clone()
    }

    fn session_up(&mut self, x: NodeId, i: usize) {
        let now = self.now;
        let traced = self.traced[x as usize];
        let (pi, si) = self.place[x as usize];
        let part = &mut self.parts[pi as usize];
        let n = &mut part.nodes[si as usize];
        let s = &mut n.sess[i];
        if s.up {
            return;
        }
        s.up = true;
        s.wake = 0;
        let peer = s.peer;
        if traced {
            self.sessions_seen.push((now, x, peer, true));
        }
        let local = SocketAddr::new(IpAddr::V4(node_addr(x)), 179);
        let up = SessionUp {
            negotiated: negotiated(self.asns[peer as usize], peer),
            local_addr: local,
            remote_addr: SocketAddr::new(IpAddr::V4(node_addr(peer)), 179),
            eor_barrier: None,
            since: SystemTime::UNIX_EPOCH,
            session: u64::from(s.epoch),
            link: LinkAddrs {
                v4: Some(node_addr(x)),
                v6: Some(node_addr6(x)),
                v6_link_local: None,
            },
        };
        n.core.handle(
            Instant(now),
            RibInput::Up {
                peer: PeerId(i as u16 + 1),
                up: Box::new(up),
            },
            &mut part.out,
        );
        part.out.clear();
    }

    fn session_down(&mut self, x: NodeId, i: usize) {
        let now = self.now;
        let traced = self.traced[x as usize];
        let (pi, si) = self.place[x as usize];
        let part = &mut self.parts[pi as usize];
        let n = &mut part.nodes[si as usize];
        let s = &mut n.sess[i];
        if !s.up {
            return;
        }
        s.up = false;
        if traced {
            self.sessions_seen.push((now, x, s.peer, false));
        }
        n.core.handle(
            Instant(now),
            RibInput::Down {
                peer: PeerId(i as u16 + 1),
                reason: DownReason::TcpConnectionFails,
                graceful: false,
                at: SystemTime::UNIX_EPOCH,
            },
            &mut part.out,
        );
        part.out.clear();
    }

    /// Both ends of the link between `x` and `y`, as session indexes.
    fn link(&self, x: NodeId, y: NodeId) -> Option<(usize, usize)> {
        let n = self.as_node(x);
        let i = n.sess.iter().position(|s| s.peer == y)?;
        Some((i, usize::from(n.sess[i].back)))
    }

    fn bump_epoch(&mut self, x: NodeId, i: usize, y: NodeId, j: usize) {
        let e = self.as_node(x).sess[i].epoch.wrapping_add(1);
        node_mut(&mut self.parts, x).sess[i].epoch = e;
        node_mut(&mut self.parts, y).sess[j].epoch = e;
    }

    fn originate(&mut self, x: NodeId) {
        let n = node_mut(&mut self.parts, x);
        let routes = n
            .originated
            .iter()
            .map(|&prefix| {
                let mut b = AttrsBuilder::new();
                b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
                b.set(PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
                    Vec::new(),
                ))));
                match prefix {
                    Prefix::V4(_) => b.set_next_hop(NextHop::V4(node_addr(x))),
                    Prefix::V6(_) => b.set_next_hop(NextHop::V6(node_addr6(x))),
                }
                b.mark_clean();
                StaticRoute { prefix, attrs: b }
            })
            .collect();
        n.core.set_statics(routes);
    }

    /// Adds the parts' counters to the current event's.
    fn flush_acc(&mut self) {
        let cur = self.cur;
        for p in &mut self.parts {
            let a = std::mem::take(&mut p.acc);
            if let Some(st) = self.stats.get_mut(cur) {
                st.updates += a.updates;
                st.prefixes += a.prefixes;
                st.last_ns = st.last_ns.max(a.last);
            }
        }
    }

    fn act(&mut self, k: usize) {
        let Some(p) = self.planned.get(k) else {
            return;
        };
        let (action, stat) = (p.action.clone(), p.stat);
        self.flush_acc();
        self.cur = self.cur.max(stat);
        let node = |s: &Sim, a: u32| s.node(a).unwrap_or(0);
        let now = self.now;
        match action {
            Action::LinkDown(a, b) | Action::LinkUp(a, b) | Action::SessionReset(a, b) => {
                let (x, y) = (node(self, a), node(self, b));
                let Some((i, j)) = self.link(x, y) else {
                    return;
                };
                let down = !matches!(action, Action::LinkUp(..));
                let up = !matches!(action, Action::LinkDown(..));
                if down {
                    self.session_down(x, i);
                    self.session_down(y, j);
                    self.bump_epoch(x, i, y, j);
                }
                if up {
                    self.session_up(x, i);
                    self.session_up(y, j);
                }
                self.schedule_propagate(x, now);
                self.schedule_propagate(y, now);
            }
            Action::Withdraw(a, p) => {
                let x = node(self, a);
                node_mut(&mut self.parts, x).originated.retain(|q| *q != p);
                self.originate(x);
                self.schedule_propagate(x, now);
            }
            Action::Announce(a, p) | Action::Hijack(a, p) => {
                let x = node(self, a);
                let o = &mut node_mut(&mut self.parts, x).originated;
                if !o.contains(&p) {
                    o.push(p);
                }
                self.originate(x);
                self.schedule_propagate(x, now);
            }
            Action::Leak(a) => {
                let x = node(self, a);
                let policies = &self.policies;
                let (pi, si) = self.place[x as usize];
                let part = &mut self.parts[pi as usize];
                let n = &mut part.nodes[si as usize];
                n.leak = true;
                for i in 0..n.sess.len() {
                    set_export(policies, n, i);
                    if n.sess[i].up {
                        n.core.export_full(PeerId(i as u16 + 1));
                    }
                }
                let env = Env {
                    cfg: &self.cfg,
                    traced: &self.traced,
                };
                part.now = now;
                part.propagate(x, true, &env);
            }
            Action::Flap { .. } | Action::Surge { .. } => {}
        }
    }

    /// Runs events up to and including time `until_ns`, at most about
    /// `max_events` of them (a parallel window is finished once begun).
    /// Returns whether events remain (at any time).
    pub fn run(&mut self, until_ns: u64, max_events: u64, obs: &mut impl Observer) -> bool {
        let mut done = 0u64;
        self.show_sessions(obs);
        while done < max_events {
            let next_ev = self
                .parts
                .iter()
                .filter_map(|p| p.queue.peek().map(|e| e.t))
                .min();
            let next_act = self.acts.peek().map(|e| e.t);
            let t = match (next_ev, next_act) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => break,
            };
            if t > until_ns {
                break;
            }
            // Scenario actions at a time run before that time's events.
            if next_act == Some(t) {
                if let Some(ev) = self.acts.pop() {
                    self.now = t;
                    self.acts_done += 1;
                    done += 1;
                    if let Kind::Act(k) = ev.kind {
                        self.act(k);
                    }
                    self.show_sessions(obs);
                }
                continue;
            }
            let mut end = until_ns.saturating_add(1);
            if let Some(a) = next_act {
                end = end.min(a);
            }
            let budget;
            if self.parts.len() > 1 {
                end = end.min(t.saturating_add(self.lookahead));
                budget = u64::MAX;
            } else {
                // Bounded, so that the trace is handed over as it grows.
                budget = (max_events - done).min(10_000);
            }
            done += self.window(end, budget);
            self.merge(obs);
        }
        self.flush_acc();
        self.next_event_ns().is_some()
    }

    /// Every part runs its events before `end`; in parallel when more than
    /// one has any.
    fn window(&mut self, end: u64, budget: u64) -> u64 {
        let env = Env {
            cfg: &self.cfg,
            traced: &self.traced,
        };
        let before: Vec<u64> = self.parts.iter().map(|p| p.work).collect();
        let mut busy: Vec<&mut Part> = self
            .parts
            .iter_mut()
            .filter(|p| p.queue.peek().is_some_and(|e| e.t < end))
            .collect();
        let mut n = 0;
        self.windows.0 += 1;
        if busy.len() <= 1 {
            for p in busy {
                n += p.process(end, budget, &env);
            }
            self.count_balance(&before);
            return n;
        }
        self.windows.1 += 1;
        let rest = busy.split_off(1);
        std::thread::scope(|sc| {
            let handles: Vec<_> = rest
                .into_iter()
                .map(|p| {
                    let env = &env;
                    sc.spawn(move || p.process(end, budget, env))
                })
                .collect();
            for p in busy {
                n += p.process(end, budget, &env);
            }
            for h in handles {
                match h.join() {
                    Ok(k) => n += k,
                    Err(e) => std::panic::resume_unwind(e),
                }
            }
        });
        self.count_balance(&before);
        n
    }

    fn count_balance(&mut self, before: &[u64]) {
        let d = self
            .parts
            .iter()
            .zip(before)
            .map(|(p, b)| p.work.saturating_sub(*b));
        let (sum, max) = d.fold((0, 0), |(s, m), x| (s + x, m.max(x)));
        self.balance.0 += sum;
        self.balance.1 += max;
    }

    /// The speed-up the split into parts allows at most, from the work
    /// each part did in each window (UPDATEs plus prefixes applied): the
    /// total work over the sum of each window's largest part. 1 with one
    /// part; ignores the cost of synchronisation.
    pub fn balance(&self) -> f64 {
        if self.balance.1 == 0 {
            1.0
        } else {
            self.balance.0 as f64 / self.balance.1 as f64
        }
    }

    /// Hands deliveries to their ASes' parts and the traced messages to
    /// the observer, in time order (ties: part order, then arrival order).
    fn merge(&mut self, obs: &mut impl Observer) {
        let c = self.parts.len();
        self.now = self.parts.iter().map(|p| p.now).max().unwrap_or(self.now);
        if c > 1 {
            for i in 0..c {
                let out = std::mem::take(&mut self.parts[i].outgoing);
                for (t, kind) in out {
                    let to = match &kind {
                        Kind::Deliver { to, .. } => self.place[*to as usize].0 as usize,
                        _ => i,
                    };
                    self.parts[to].push(t, kind);
                }
            }
        }
        let with_trace = self.parts.iter().filter(|p| !p.trace.is_empty()).count();
        if with_trace == 0 {
            return;
        }
        let mut all: Vec<(u64, NodeId, NodeId, Vec<u8>)> = Vec::new();
        for p in &mut self.parts {
            all.append(&mut p.trace);
        }
        if with_trace > 1 {
            all.sort_by_key(|r| r.0);
        }
        for (t, at, from, m) in all {
            obs.received(t, at, from, &m);
        }
    }

    fn show_sessions(&mut self, obs: &mut impl Observer) {
        for (t, at, from, up) in self.sessions_seen.drain(..) {
            obs.session(t, at, from, up);
        }
    }

    /// Runs every event up to and including `until_ns`.
    pub fn run_to_end(&mut self, until_ns: u64, obs: &mut impl Observer) {
        self.run(until_ns, u64::MAX, obs);
    }

    /// Simulated time now, ns.
    pub fn now_ns(&self) -> u64 {
        self.now
    }
    /// The time of the next event, if any.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.parts
            .iter()
            .filter_map(|p| p.queue.peek().map(|e| e.t))
            .chain(self.acts.peek().map(|e| e.t))
            .min()
    }
    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.acts_done + self.parts.iter().map(|p| p.events).sum::<u64>()
    }
    /// BGP messages delivered so far.
    pub fn messages(&self) -> u64 {
        self.parts.iter().map(|p| p.messages).sum()
    }
    /// Per scenario event counters (index 0: the initial announcement).
    pub fn stats(&self) -> &[EventStats] {
        &self.stats
    }
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.asns.len()
    }
    /// Whether the network has no AS.
    pub fn is_empty(&self) -> bool {
        self.asns.is_empty()
    }
    /// Windows run so far, and how many of them ran on several threads.
    pub fn windows(&self) -> (u64, u64) {
        self.windows
    }
    /// The window of parallel runs (the shortest latency of a link between
    /// parts), ns; 0 with one part.
    pub fn window_ns(&self) -> u64 {
        if self.parts.len() > 1 {
            self.lookahead
        } else {
            0
        }
    }
    /// How many parts (threads) the network is split into.
    pub fn threads(&self) -> usize {
        self.parts.len()
    }

    fn info(&self, x: NodeId, peer: PeerId, prefix: Prefix, attrs: &AttrSet) -> RouteInfo {
        let n = self.as_node(x);
        let from = (peer.0 > 0)
            .then(|| n.sess.get(usize::from(peer.0 - 1)).map(|s| s.peer))
            .flatten();
        RouteInfo {
            prefix,
            from,
            as_path: as_path_of(attrs),
            local_pref: attrs.summary().local_pref(),
            med: attrs.summary().med(),
        }
    }

    /// `x`'s Loc-RIB: the best route of each prefix, by prefix.
    pub fn best_routes(&self, x: NodeId) -> Vec<RouteInfo> {
        let mut v: Vec<RouteInfo> = self
            .as_node(x)
            .core
            .rib
            .iter()
            .filter_map(|r| {
                let (p, a) = r.best()?;
                Some(self.info(x, p.peer, r.prefix, a))
            })
            .collect();
        v.sort_by_key(|a| a.prefix);
        v
    }

    /// Every path `x` holds (its Adj-RIBs-In after import policy, and its
    /// own routes), by prefix.
    pub fn all_paths(&self, x: NodeId) -> Vec<RouteInfo> {
        let mut v: Vec<RouteInfo> = Vec::new();
        for r in self.as_node(x).core.rib.iter() {
            for (p, a) in r.iter() {
                v.push(self.info(x, p.peer, r.prefix, a));
            }
        }
        v.sort_by_key(|a| (a.prefix, a.from));
        v
    }

    /// Routes stored over all ASes (paths in Adj-RIBs-In, own routes
    /// included).
    pub fn path_count(&self) -> u64 {
        self.parts
            .iter()
            .flat_map(|p| &p.nodes)
            .map(|n| n.core.rib.iter().map(|r| r.paths.len() as u64).sum::<u64>())
            .sum()
    }

    /// Prefixes with a best route, over all ASes.
    pub fn best_count(&self) -> u64 {
        self.parts
            .iter()
            .flat_map(|p| &p.nodes)
            .map(|n| n.core.rib.iter().filter(|r| r.best.is_some()).count() as u64)
            .sum()
    }

    /// The neighbours of `x` with their session's state.
    pub fn neighbours(&self, x: NodeId) -> Vec<(NodeId, Role, bool)> {
        self.as_node(x)
            .sess
            .iter()
            .map(|s| (s.peer, s.role, s.up))
            .collect()
    }

    pub(crate) fn rib_of(&self, x: NodeId) -> &bgp_rib::Rib {
        &self.as_node(x).core.rib
    }

    pub(crate) fn session_of_peer(&self, x: NodeId, peer: PeerId) -> Option<NodeId> {
        let i = usize::from(peer.0.checked_sub(1)?);
        self.as_node(x).sess.get(i).map(|s| s.peer)
    }
}

/// Splits the ASes into at most `want` parts for parallel runs, so that
/// short links stay inside a part: the window of conservative
/// synchronisation is the shortest latency of a link *between* parts. Links
/// are taken shortest first and join their ends' groups unless the group
/// would outgrow a part's share of the work (sessions + 1 per AS); the
/// groups then go, largest first, to the least loaded part. (Smaller
/// groups balance the total work no better and shrink the window: on the
/// seeds' graph a quarter of a share gave a window of 5.5 ms and at most a
/// 1.31x speed-up at 2 threads, a whole share 6.9 ms and 1.35x, single ASes
/// 0.26 ms and 1.04x; see `Sim::balance`.)
/// Deterministic. Returns each AS's part and the window in ns; one part
/// (window 0, unused) when `want` is 1 or a zero-latency link would cross
/// parts.
fn partition(graph: &Graph, adj: &[Vec<topo::Adj>], want: usize) -> (Vec<u32>, u64) {
    let n = graph.nodes.len();
    if want <= 1 || n < 2 {
        return (vec![0; n], 0);
    }
    let w: Vec<u64> = adj.iter().map(|l| l.len() as u64 + 1).collect();
    let total: u64 = w.iter().sum();
    let cap = (total / want as u64).max(1);
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let mut size = w.clone();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            let g = parent[parent[x as usize] as usize];
            parent[x as usize] = g;
            x = g;
        }
        x
    }
    let mut order: Vec<usize> = (0..graph.links.len()).collect();
    order.sort_by_key(|&i| (graph.links[i].latency_us, i));
    for i in order {
        let l = &graph.links[i];
        if l.a as usize >= n || l.b as usize >= n {
            continue;
        }
        let (a, b) = (find(&mut parent, l.a), find(&mut parent, l.b));
        if a == b || size[a as usize] + size[b as usize] > cap {
            continue;
        }
        let (big, small) = if a < b { (a, b) } else { (b, a) };
        parent[small as usize] = big;
        size[big as usize] += size[small as usize];
    }
    // Groups by their root, largest first (ties: the lower root).
    let mut roots: Vec<u32> = (0..n as u32)
        .filter(|&x| find(&mut parent, x) == x)
        .collect();
    roots.sort_by_key(|&r| (std::cmp::Reverse(size[r as usize]), r));
    let mut load = vec![0u64; want];
    let mut part_of_root = vec![0u32; n];
    for r in roots {
        let mut best = 0;
        for p in 1..want {
            if load[p] < load[best] {
                best = p;
            }
        }
        load[best] += size[r as usize];
        part_of_root[r as usize] = best as u32;
    }
    let part_of: Vec<u32> = (0..n as u32)
        .map(|x| part_of_root[find(&mut parent, x) as usize])
        .collect();
    let window = graph
        .links
        .iter()
        .filter(|l| part_of.get(l.a as usize) != part_of.get(l.b as usize))
        .map(|l| u64::from(l.latency_us) * 1000)
        .min()
        .unwrap_or(u64::MAX / 4);
    if window == 0 {
        return (vec![0; n], 0);
    }
    (part_of, window)
}

fn node_mut(parts: &mut [Part], x: NodeId) -> &mut AsNode {
    let (p, i) = parts[0].place[x as usize];
    &mut parts[p as usize].nodes[i as usize]
}

fn set_export(policies: &Policies, n: &mut AsNode, i: usize) {
    let s = &n.sess[i];
    let p: PolicyRef = match s.med {
        Some(m) => policies.export_with_med(s.role, n.leak, m),
        None => policies.export(s.role, n.leak),
    };
    if let Some(e) = n.core.peer_mut(PeerId(i as u16 + 1)) {
        e.meta.export = p;
    }
}

impl Part {
    fn node(&mut self, x: NodeId) -> &mut AsNode {
        let i = self.place[x as usize].1 as usize;
        &mut self.nodes[i]
    }

    fn push(&mut self, t: u64, kind: Kind) {
        self.seq += 1;
        self.queue.push(Ev {
            t,
            seq: self.seq,
            kind,
        });
    }

    fn schedule_propagate(&mut self, x: NodeId, t: u64) {
        let n = self.node(x);
        if !n.prop_scheduled {
            n.prop_scheduled = true;
            self.push(t, Kind::Propagate(x));
        }
    }

    /// Runs this part's events before `end`, at most `budget` of them.
    fn process(&mut self, end: u64, budget: u64, env: &Env<'_>) -> u64 {
        let mut done = 0;
        while done < budget {
            match self.queue.peek() {
                Some(e) if e.t < end => {}
                _ => break,
            }
            let Some(ev) = self.queue.pop() else { break };
            self.now = ev.t;
            self.events += 1;
            done += 1;
            match ev.kind {
                Kind::Deliver {
                    to,
                    sess,
                    epoch,
                    bytes,
                } => self.deliver(to, sess, epoch, bytes, env),
                Kind::Apply {
                    to,
                    sess,
                    epoch,
                    updates,
                } => self.apply(to, sess, epoch, updates),
                Kind::Propagate(x) => {
                    self.node(x).prop_scheduled = false;
                    self.propagate(x, false, env);
                }
                Kind::Wake(x) => {
                    let t = self.now;
                    for s in &mut self.node(x).sess {
                        if s.wake != 0 && s.wake <= t {
                            s.wake = 0;
                        }
                    }
                    self.propagate(x, false, env);
                }
                Kind::Act(_) => {}
            }
        }
        done
    }

    fn deliver(&mut self, to: NodeId, sess: u16, epoch: u32, bytes: Vec<u8>, env: &Env<'_>) {
        let t = self.now;
        let slot = self.place[to as usize].1 as usize;
        let n = &mut self.nodes[slot];
        let Some(s) = n.sess.get(usize::from(sess)) else {
            return;
        };
        if !s.up || s.epoch != epoch {
            return;
        }
        let traced = env.traced[to as usize];
        let mut updates = Vec::new();
        let mut prefixes = 0u64;
        for m in messages(&bytes) {
            self.messages += 1;
            if traced {
                self.trace.push((t, to, s.peer, m.to_vec()));
            }
            if m.get(18) != Some(&UPDATE) {
                continue;
            }
            match decode_update(&m[HEADER..], s.ctx, true) {
                Decoded::Ok(d, _) => {
                    prefixes += (d.announce.len() + d.withdraw.len()) as u64;
                    updates.push(d);
                }
                Decoded::Reset(_) => {}
            }
        }
        if updates.is_empty() {
            return;
        }
        self.work += updates.len() as u64 + prefixes;
        let cost = (env.cfg.per_update.as_nanos() as u64)
            .saturating_mul(updates.len() as u64)
            .saturating_add((env.cfg.per_prefix.as_nanos() as u64).saturating_mul(prefixes));
        let start = t.max(n.busy_until);
        let done = start.saturating_add(cost);
        n.busy_until = done;
        if done == t {
            self.apply(to, sess, epoch, updates);
        } else {
            self.push(
                done,
                Kind::Apply {
                    to,
                    sess,
                    epoch,
                    updates,
                },
            );
        }
    }

    fn apply(&mut self, to: NodeId, sess: u16, epoch: u32, updates: Vec<DecodedUpdate>) {
        let now = self.now;
        let slot = self.place[to as usize].1 as usize;
        let n = &mut self.nodes[slot];
        let live = n
            .sess
            .get(usize::from(sess))
            .is_some_and(|s| s.up && s.epoch == epoch);
        if live {
            n.core.handle(
                Instant(now),
                RibInput::Updates {
                    peer: PeerId(sess + 1),
                    updates,
                },
                &mut self.out,
            );
            self.out.clear();
            self.acc.last = self.acc.last.max(now);
        }
        // The export round runs once the AS has applied everything it has
        // received so far (the last queued delivery schedules it), as the
        // daemon's RIB thread exports after draining its input.
        if self.nodes[slot].busy_until <= now {
            self.schedule_propagate(to, now);
        }
    }

    fn propagate(&mut self, x: NodeId, force_wakes: bool, env: &Env<'_>) {
        let t = self.now;
        let slot = self.place[x as usize].1 as usize;
        let n = &mut self.nodes[slot];
        let had = force_wakes || n.core.pending_changes() > 0;
        n.core.propagate(Instant(t), &mut self.out);
        // Pull export (docs/adr/0004) hands a session at most
        // `bgp_core::OUT_QUEUE_LIMIT` per round and holds the rest back;
        // simulated sessions take everything at once, so run rounds while
        // something is held back and each still hands something out.
        while n.core.export_backlog() {
            let before = self.out.out.len();
            n.core.propagate(Instant(t), &mut self.out);
            if self.out.out.len() == before {
                break;
            }
        }
        let mut sends = std::mem::take(&mut self.out.out);
        self.out.clear();
        for o in sends.drain(..) {
            let Output::Send {
                peer,
                bytes,
                markers,
            } = o
            else {
                continue;
            };
            let bytes = bgp_core::concat(&match markers {
                Some(m) => m.assemble(bytes),
                None => bytes,
            });
            let i = usize::from(peer.0.saturating_sub(1));
            let Some(s) = n.sess.get(i) else { continue };
            for m in messages(&bytes) {
                if m.get(18) == Some(&UPDATE) {
                    self.acc.updates += 1;
                    self.acc.prefixes += nlri_count(&m[HEADER..], s.ctx);
                }
            }
            let (to, back, epoch, at) = (s.peer, s.back, s.epoch, t.saturating_add(s.lat_ns));
            let kind = Kind::Deliver {
                to,
                sess: back,
                epoch,
                bytes,
            };
            if self.place[to as usize].0 as usize == self.index {
                self.seq += 1;
                self.queue.push(Ev {
                    t: at,
                    seq: self.seq,
                    kind,
                });
            } else {
                self.outgoing.push((at, kind));
            }
        }
        self.out.out = sends;
        // MRAI: re-draw the jittered interval after each flush, and wake
        // up when a blocked session may send again.
        let base = env.cfg.mrai;
        let jitter = env.cfg.mrai_jitter;
        let mut wakes: Vec<u64> = Vec::new();
        let n = &mut self.nodes[slot];
        for (i, s) in n.sess.iter_mut().enumerate() {
            if !s.up || base.is_zero() {
                continue;
            }
            let Some(e) = n.core.peer_mut(PeerId(i as u16 + 1)) else {
                continue;
            };
            let Some(up) = e.up.as_ref() else { continue };
            if up.last_flush.0 == t {
                if jitter {
                    let f = 0.75 + 0.25 * (n.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    e.meta.mrai = base.mul_f64(f);
                }
            } else if had {
                let due = (up.last_flush + e.meta.mrai).0;
                if due > t && s.wake != due {
                    s.wake = due;
                    wakes.push(due);
                }
            }
        }
        wakes.sort_unstable();
        wakes.dedup();
        for w in wakes {
            self.push(w, Kind::Wake(x));
        }
    }
}

/// Prefixes announced or withdrawn by one UPDATE body.
pub fn nlri_count(body: &[u8], ctx: ParseCtx) -> u64 {
    let Ok(u) = bgp_wire::UpdateView::parse(body, ctx) else {
        return 0;
    };
    let mut n = u.withdrawn().count() + u.nlri().count();
    if let Some(Ok(r)) = u.mp_reach() {
        n += r.nlri().count();
    }
    if let Some(Ok(w)) = u.mp_unreach() {
        n += w.withdrawn().count();
    }
    n as u64
}
