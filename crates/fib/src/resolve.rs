//! The control side of the FIB: best routes in, table deltas out.
//!
//! Resolution (what a router does between its RIB and its FIB, cf. RFC 4271
//! §5.1.3 and §9.1.2.1 "the immediate next-hop address is determined by
//! performing a best matching route lookup for the IP address in the
//! NEXT_HOP attribute"):
//! - a next hop inside a connected prefix of a dataplane port is on-link:
//!   the adjacency is (that port, the next hop);
//! - otherwise the longest *other* route covering the next hop is used,
//!   and the route inherits that route's adjacency (recursive resolution).
//!   Such routes are remembered and re-resolved after every batch that
//!   changed something, up to [`MAX_PASSES`] times, so a change of the
//!   covering route moves them too;
//! - a route whose next hop resolves nowhere is kept (it may resolve later)
//!   but not installed.
//!
//! Adjacencies are interned by (port, gateway) and reference counted: the
//! first route to use one allocates a `NextHop` id (reusing freed ids) and
//! emits [`FibDelta::SetAdj`]; the last route to leave emits
//! [`FibDelta::ClearAdj`] after its own route delta, so readers never see a
//! route pointing at a missing adjacency. Connected prefixes hold one
//! reference each and are never removed; a BGP route for exactly a
//! connected prefix is ignored (connected wins, as in every router).
//!
//! Multipath (ECMP): a change with further next hops ([`Change::ecmp`])
//! resolves each of them the same way; two or more distinct targets make a
//! next-hop group ([`FibDelta::SetGroup`], ids from
//! [`crate::table::GROUP_BASE`] up), interned by its members and reference
//! counted like adjacencies (a group holds one reference on each member).
//! The route's LPM result is the group, and the lookup picks a member per
//! flow ([`crate::table::FibTables::pick`]). Members that resolve nowhere
//! are left out; one left makes a plain route.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use base::{Prefix, Prefix4, Prefix6};
use lpm::NextHop;

use crate::table::{is_group, Adjacency, FibDelta, GROUP_BASE};

/// Where a route goes: (port, gateway, fabric tag); the gateway is `None`
/// for the destination itself (only across the fabric: a route at the
/// peer's connected port), the tag 0 off the fabric (see
/// [`Adjacency::tag`]).
type Target = (u16, Option<IpAddr>, u32);

/// Re-resolution passes per batch (a recursive route resolved through a
/// route that is itself recursive needs one pass per level).
pub const MAX_PASSES: usize = 4;

/// Changes per touch pass of [`Fib::apply`] (their route-map lines must
/// still be in cache when the real pass reaches them).
const TOUCH: usize = 64;

/// One best-route change: the new best next hop, or `None` when the prefix
/// has no route any more. The same type the RIB produces
/// (`bgp_core::BestChange`): [`base::RouteChange`].
pub type Change = base::RouteChange;

/// A dataplane port as the FIB sees it: its connected prefixes (the
/// router's own addresses on it, with their prefix lengths).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    pub name: String,
    pub addrs: Vec<(IpAddr, u8)>,
}

/// Counters of the control side.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FibStats {
    /// Changes taken in.
    pub changes: u64,
    /// Routes (BGP) known / installed now.
    pub routes: u64,
    pub installed: u64,
    /// Changes for a connected prefix (ignored).
    pub shadowed: u64,
    /// Routes known but not installed now: their next hop is on no
    /// dataplane port and no other route covers it (e.g. a peer that
    /// advertises its own session address on a link that is not a
    /// dataplane port).
    pub unresolved: u64,
    /// Next-hop ids in use (connected ones included).
    pub next_hops: u64,
    /// Deltas emitted.
    pub deltas: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Route {
    gw: IpAddr,
    nh: Option<NextHop>,
}

/// BGP routes by prefix, one map per family: an IPv4 key is 8 bytes
/// instead of the 32 of `Prefix`, so a full table's map is about half the
/// memory, and the churn hot path (one probe per change into a 500k-entry
/// map, a cache miss each) touches half the lines.
#[derive(Debug, Default)]
struct Routes {
    v4: HashMap<Prefix4, Route>,
    v6: HashMap<Prefix6, Route>,
}

impl Routes {
    #[inline]
    fn get(&self, p: Prefix) -> Option<Route> {
        match p {
            Prefix::V4(p) => self.v4.get(&p).copied(),
            Prefix::V6(p) => self.v6.get(&p).copied(),
        }
    }
    #[inline]
    fn insert(&mut self, p: Prefix, r: Route) {
        match p {
            Prefix::V4(p) => self.v4.insert(p, r),
            Prefix::V6(p) => self.v6.insert(p, r),
        };
    }
    #[inline]
    fn remove(&mut self, p: Prefix) {
        match p {
            Prefix::V4(p) => self.v4.remove(&p),
            Prefix::V6(p) => self.v6.remove(&p),
        };
    }
    fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
}

#[derive(Copy, Clone, Debug)]
struct Slot {
    adj: Adjacency,
    refs: u32,
}

#[derive(Clone, Debug)]
struct GroupSlot {
    members: Arc<[NextHop]>,
    refs: u32,
}

/// A resolved route as kernel export takes it: the prefix and its
/// (port, gateway) next hops, several for a multipath route; none when the
/// prefix left the FIB.
pub type Exported = (Prefix, Vec<(u16, IpAddr)>);

/// Best routes, connected prefixes, and the next-hop table; produces
/// [`FibDelta`]s. Single-threaded (the FIB thread owns it).
#[derive(Debug, Default)]
pub struct Fib {
    /// Connected prefixes, longest first, with their port.
    connected: Vec<(Prefix, u16)>,
    /// The router's own addresses (a handful: a scan beats hashing).
    own: Vec<IpAddr>,
    routes: Routes,
    /// Routes whose next hop is not on-link.
    recursive: HashSet<Prefix>,
    slots: Vec<Option<Slot>>,
    index: HashMap<(u16, Option<IpAddr>, u32), NextHop>,
    /// Cluster peers: fabric address and node id ([`Fib::add_peer`]).
    peers: Vec<(IpAddr, u16)>,
    /// The peers' external port prefixes: (prefix, node, port), longest
    /// first.
    remote: Vec<(Prefix, u16, u8)>,
    free: Vec<NextHop>,
    /// The further next hops of multipath routes (only those).
    ecmp: HashMap<Prefix, Vec<IpAddr>>,
    /// Next-hop groups by `id - GROUP_BASE`, their index by members, and
    /// freed ids.
    groups: Vec<Option<GroupSlot>>,
    group_index: HashMap<Arc<[NextHop]>, NextHop>,
    group_free: Vec<NextHop>,
    neigh: HashMap<IpAddr, [u8; 6]>,
    out: Vec<FibDelta>,
    /// Route changes after resolution, for kernel export.
    exported: Vec<Exported>,
    export: bool,
    stats: FibStats,
}

fn insert_delta(p: Prefix, nh: NextHop) -> FibDelta {
    match p {
        Prefix::V4(p) => FibDelta::Insert4(p, nh),
        Prefix::V6(p) => FibDelta::Insert6(p, nh),
    }
}

fn remove_delta(p: Prefix) -> FibDelta {
    match p {
        Prefix::V4(p) => FibDelta::Remove4(p),
        Prefix::V6(p) => FibDelta::Remove6(p),
    }
}

fn host_len(a: IpAddr) -> u8 {
    if a.is_ipv4() {
        32
    } else {
        128
    }
}

impl Fib {
    /// A FIB over `ports` (port `i` is `ports[i]`); the connected prefixes'
    /// deltas are pending in [`Fib::take_deltas`]. `export` keeps the list
    /// of resolved route changes for [`Fib::take_exported`].
    pub fn new(ports: &[PortSpec], export: bool) -> Self {
        let mut f = Fib {
            export,
            ..Fib::default()
        };
        for (i, p) in ports.iter().enumerate() {
            let port = u16::try_from(i).unwrap_or(u16::MAX);
            for &(a, len) in &p.addrs {
                if !f.own.contains(&a) {
                    f.own.push(a);
                }
                let Ok(pfx) = Prefix::new(a, len) else {
                    continue;
                };
                let pfx = pfx.masked();
                if f.connected.iter().any(|(c, _)| *c == pfx) {
                    continue;
                }
                f.connected.push((pfx, port));
                let nh = f.adj_ref(port, None, 0);
                f.push(insert_delta(pfx, nh));
            }
        }
        f.connected
            .sort_by_key(|(p, _)| core::cmp::Reverse(p.len()));
        f
    }

    fn push(&mut self, d: FibDelta) {
        self.stats.deltas += 1;
        self.out.push(d);
    }

    /// The deltas produced since the last call, in the order they must be
    /// applied (publish them as one batch).
    pub fn take_deltas(&mut self) -> Vec<FibDelta> {
        std::mem::take(&mut self.out)
    }

    /// Moves the pending deltas into `v` (keeps both allocations).
    pub fn drain_deltas_into(&mut self, v: &mut Vec<FibDelta>) {
        v.append(&mut self.out);
    }

    /// Every best route known (installed or not) as the changes that
    /// would rebuild it in another FIB: what a virtual router added to a
    /// running dataplane starts from (`table = "main"`). Connected
    /// prefixes are not in it (every FIB of the dataplane has them).
    pub fn routes(&self) -> Vec<Change> {
        let mut v = Vec::with_capacity(self.routes.len());
        let mut one = |p: Prefix, r: &Route| {
            v.push(Change {
                prefix: p,
                next_hop: Some(r.gw),
                ecmp: self.ecmp.get(&p).cloned().unwrap_or_default(),
            });
        };
        for (p, r) in &self.routes.v4 {
            one(Prefix::V4(*p), r);
        }
        for (p, r) in &self.routes.v6 {
            one(Prefix::V6(*p), r);
        }
        v
    }

    /// Resolved route changes since the last call (only with `export`).
    pub fn take_exported(&mut self) -> Vec<Exported> {
        std::mem::take(&mut self.exported)
    }

    pub fn stats(&self) -> FibStats {
        let mut s = self.stats;
        s.routes = self.routes.len() as u64;
        s.unresolved = s.routes.saturating_sub(s.installed);
        s.next_hops = self.slots.iter().flatten().count() as u64;
        s
    }

    /// Whether `a` is one of the router's own addresses.
    pub fn is_own(&self, a: IpAddr) -> bool {
        self.own.contains(&a)
    }

    /// The port of the connected prefix containing `a`.
    pub fn on_link(&self, a: IpAddr) -> Option<u16> {
        let host = Prefix::new(a, host_len(a)).ok()?;
        self.connected
            .iter()
            .find(|(p, _)| contains(*p, host))
            .map(|&(_, port)| port)
    }

    /// Where `prefix` is forwarded now: (port, gateway), if installed
    /// (the first member of a multipath route).
    pub fn resolved(&self, prefix: Prefix) -> Option<(u16, IpAddr)> {
        self.resolved_all(prefix).into_iter().next()
    }

    /// Every (port, gateway) `prefix` is forwarded to now: one, several
    /// for a multipath route, none when not installed.
    pub fn resolved_all(&self, prefix: Prefix) -> Vec<(u16, IpAddr)> {
        let Some(nh) = self.routes.get(prefix.masked()).and_then(|r| r.nh) else {
            return Vec::new();
        };
        self.members(nh)
            .iter()
            .filter_map(|&m| {
                let a = self.slots.get(m.0 as usize)?.as_ref()?.adj;
                Some((a.port, a.gw?))
            })
            .collect()
    }

    /// The adjacency ids behind next-hop id `nh`: the group's members, or
    /// `nh` itself.
    fn members(&self, nh: NextHop) -> Vec<NextHop> {
        if !is_group(nh) {
            return vec![nh];
        }
        self.group_slot(nh)
            .map(|g| g.members.to_vec())
            .unwrap_or_default()
    }

    fn group_slot(&self, nh: NextHop) -> Option<&GroupSlot> {
        let g = nh.0.checked_sub(GROUP_BASE)?;
        self.groups.get(g as usize)?.as_ref()
    }

    /// Next-hop groups in use.
    pub fn groups(&self) -> usize {
        self.groups.iter().flatten().count()
    }

    /// A reference to the group of adjacencies for `first` and `more`
    /// (distinct targets), made when new.
    fn group_ref(&mut self, first: Target, more: &[Target]) -> NextHop {
        let mut members = Vec::with_capacity(1 + more.len());
        for &(p, g, t) in std::iter::once(&first).chain(more) {
            members.push(self.adj_ref(p, g, t));
        }
        members.sort_unstable();
        let key: Arc<[NextHop]> = members.into();
        if let Some(&id) = self.group_index.get(&key) {
            // The group already holds its members: give back the
            // references just taken.
            for &m in key.iter() {
                self.adj_unref(m);
            }
            if let Some(Some(g)) = self.groups.get_mut((id.0 - GROUP_BASE) as usize) {
                g.refs += 1;
            }
            return id;
        }
        let id = match self.group_free.pop() {
            Some(id) => id,
            None => {
                let id = GROUP_BASE + self.groups.len() as u32;
                if id > NextHop::MAX_VALID {
                    // Out of group ids: forward over the first member.
                    let (keep, rest) = key
                        .split_first()
                        .map_or((None, &[][..]), |(k, r)| (Some(*k), r));
                    for &m in rest {
                        self.adj_unref(m);
                    }
                    return keep.unwrap_or(NextHop(0));
                }
                NextHop(id)
            }
        };
        let i = (id.0 - GROUP_BASE) as usize;
        if self.groups.len() <= i {
            self.groups.resize(i + 1, None);
        }
        if let Some(s) = self.groups.get_mut(i) {
            *s = Some(GroupSlot {
                members: Arc::clone(&key),
                refs: 1,
            });
        }
        self.group_index.insert(Arc::clone(&key), id);
        self.push(FibDelta::SetGroup(id, key));
        id
    }

    /// Drops one reference to next-hop id `nh` (an adjacency or a group;
    /// a freed group lets go of its members after its own delta).
    fn nh_unref(&mut self, nh: NextHop) {
        if !is_group(nh) {
            self.adj_unref(nh);
            return;
        }
        let i = (nh.0 - GROUP_BASE) as usize;
        let Some(Some(g)) = self.groups.get_mut(i) else {
            return;
        };
        g.refs = g.refs.saturating_sub(1);
        if g.refs > 0 {
            return;
        }
        let members = Arc::clone(&g.members);
        if let Some(x) = self.groups.get_mut(i) {
            *x = None;
        }
        self.group_index.remove(&members);
        self.group_free.push(nh);
        self.push(FibDelta::ClearGroup(nh));
        for &m in members.iter() {
            self.adj_unref(m);
        }
    }

    /// The adjacency of next hop `nh`.
    pub fn adjacency(&self, nh: NextHop) -> Option<Adjacency> {
        self.slots.get(nh.0 as usize)?.as_ref().map(|s| s.adj)
    }

    fn adj_ref(&mut self, port: u16, gw: Option<IpAddr>, tag: u32) -> NextHop {
        if let Some(&nh) = self.index.get(&(port, gw, tag)) {
            if let Some(Some(s)) = self.slots.get_mut(nh.0 as usize) {
                s.refs += 1;
                return nh;
            }
        }
        let nh = self.free.pop().unwrap_or(NextHop(self.slots.len() as u32));
        let adj = Adjacency {
            port,
            gw,
            // Across the fabric the MAC is the egress's business.
            mac: gw
                .filter(|_| tag == 0)
                .and_then(|g| self.neigh.get(&g).copied()),
            tag,
        };
        let i = nh.0 as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
        }
        if let Some(s) = self.slots.get_mut(i) {
            *s = Some(Slot { adj, refs: 1 });
        }
        self.index.insert((port, gw, tag), nh);
        self.push(FibDelta::SetAdj(nh, adj));
        nh
    }

    fn adj_unref(&mut self, nh: NextHop) {
        let Some(Some(s)) = self.slots.get_mut(nh.0 as usize) else {
            return;
        };
        s.refs = s.refs.saturating_sub(1);
        if s.refs > 0 {
            return;
        }
        let key = (s.adj.port, s.adj.gw, s.adj.tag);
        if let Some(x) = self.slots.get_mut(nh.0 as usize) {
            *x = None;
        }
        self.index.remove(&key);
        self.free.push(nh);
        self.push(FibDelta::ClearAdj(nh));
    }

    /// Resolves next hop `gw` of `prefix`: on-link, or through the longest
    /// other installed route covering it.
    /// Makes `pfx` on-link on `port` without giving the router an address
    /// in it: the cluster fabric, where each peer's fabric address is a
    /// host prefix on the fabric port, so that a route whose next hop is a
    /// peer's fabric address resolves to (fabric port, that address). Call
    /// it before any route arrives; the delta is pending in
    /// [`Fib::take_deltas`].
    pub fn add_link(&mut self, port: u16, pfx: Prefix) {
        let pfx = pfx.masked();
        if self.connected.iter().any(|(c, _)| *c == pfx) {
            return;
        }
        self.connected.push((pfx, port));
        let nh = self.adj_ref(port, None, 0);
        self.push(insert_delta(pfx, nh));
        self.connected
            .sort_by_key(|(p, _)| core::cmp::Reverse(p.len()));
    }

    /// A cluster peer: node `node` at fabric address `addr`, on-link on
    /// the fabric `port` (as [`Fib::add_link`] with its host prefix), with
    /// its external ports' connected prefixes `ports` (port `i` is
    /// `ports[i]`). A route whose next hop is `addr` is a route at that
    /// peer: it resolves to the fabric with the egress tag (node, the port
    /// whose prefix holds the route) and the destination as the neighbour
    /// there; a route whose next hop lies under such a route resolves to
    /// the fabric with (node, the port whose prefix holds the next hop)
    /// and the next hop as the neighbour. So the ingress does the whole
    /// lookup, and the egress forwards by the tag. A route at a peer under
    /// none of its ports is not installed (the egress could not forward
    /// it without a lookup).
    pub fn add_peer(&mut self, port: u16, addr: IpAddr, node: u16, ports: &[Prefix]) {
        if let Ok(p) = Prefix::new(addr, host_len(addr)) {
            self.add_link(port, p);
        }
        self.peers.push((addr, node));
        for (i, p) in ports.iter().enumerate() {
            if let Ok(i) = u8::try_from(i) {
                self.remote.push((p.masked(), node, i));
            }
        }
        self.remote
            .sort_by_key(|(p, _, _)| core::cmp::Reverse(p.len()));
    }

    /// The port of peer `node` whose prefix holds `inner`.
    fn remote_port(&self, node: u16, inner: Prefix) -> Option<u8> {
        self.remote
            .iter()
            .find(|&&(p, n, _)| n == node && contains(p, inner))
            .map(|&(_, _, port)| port)
    }

    fn resolve(&self, gw: IpAddr, prefix: Prefix) -> Option<Target> {
        self.resolve_with(gw, prefix, self.on_link(gw))
    }

    /// [`Fib::resolve`] with `on_link(gw)` already known (the hot path of
    /// [`Fib::apply`] needs it anyway).
    fn resolve_with(&self, gw: IpAddr, prefix: Prefix, on_link: Option<u16>) -> Option<Target> {
        if self.own.contains(&gw) {
            return None;
        }
        if let Some(port) = on_link {
            if !self.peers.is_empty() {
                if let Some(&(_, node)) = self.peers.iter().find(|(a, _)| *a == gw) {
                    let rp = self.remote_port(node, prefix)?;
                    return Some((port, None, elements::fabric::egress_tag(node, rp, 0)));
                }
            }
            return Some((port, Some(gw), 0));
        }
        for len in (0..=host_len(gw)).rev() {
            let Ok(p) = Prefix::new(gw, len) else {
                continue;
            };
            let p = p.masked();
            if p == prefix {
                continue;
            }
            let Some(r) = self.routes.get(p) else {
                continue;
            };
            let Some(nh) = r.nh else { continue };
            // Through a multipath route: its first member.
            let nh = if is_group(nh) {
                *self.group_slot(nh)?.members.first()?
            } else {
                nh
            };
            let a = self.slots.get(nh.0 as usize)?.as_ref()?.adj;
            if a.tag != 0 {
                // Across the fabric: through a route at the peer, `gw` is
                // the neighbour there, on the peer's port that holds it.
                return Some(match (a.gw, elements::fabric::egress_of(a.tag)) {
                    (None, Some((node, port, q))) => {
                        let host = Prefix::new(gw, host_len(gw)).ok()?;
                        let rp = self.remote_port(node, host).unwrap_or(port);
                        (a.port, Some(gw), elements::fabric::egress_tag(node, rp, q))
                    }
                    _ => (a.port, a.gw, a.tag),
                });
            }
            return Some((a.port, Some(a.gw?), 0));
        }
        None
    }

    /// Applies a batch of best-route changes; deltas accumulate.
    pub fn apply(&mut self, changes: &[Change]) {
        let mut any = false;
        for chunk in changes.chunks(TOUCH) {
            // Touch pass: independent lookups, so the CPU overlaps their
            // cache misses into the route map (one per change in a full
            // table); the real pass below, with its dependent work per
            // change, then finds the lines in cache.
            let mut found = 0usize;
            for c in chunk {
                found += usize::from(self.routes.get(c.prefix.masked()).is_some());
            }
            std::hint::black_box(found);
            for c in chunk {
                self.stats.changes += 1;
                any |= self.apply_one(c.prefix.masked(), c.next_hop, &c.ecmp);
            }
        }
        if any && !self.recursive.is_empty() {
            self.reresolve();
        }
    }

    /// Sets `prefix`'s route to `gw` (or removes it); returns whether the
    /// installed state changed.
    fn apply_one(&mut self, prefix: Prefix, gw: Option<IpAddr>, extra: &[IpAddr]) -> bool {
        if self.connected.iter().any(|(p, _)| *p == prefix) {
            self.stats.shadowed += 1;
            return false;
        }
        let old = self.routes.get(prefix);
        let Some(gw) = gw else {
            let Some(old) = old else { return false };
            self.routes.remove(prefix);
            if !self.recursive.is_empty() {
                self.recursive.remove(&prefix);
            }
            if !self.ecmp.is_empty() {
                self.ecmp.remove(&prefix);
            }
            if let Some(nh) = old.nh {
                self.push(remove_delta(prefix));
                self.note_export(prefix, None, &[]);
                self.nh_unref(nh);
                self.stats.installed = self.stats.installed.saturating_sub(1);
                return true;
            }
            return false;
        };
        let on_link = self.on_link(gw);
        // Skipping the empty map saves a hash per change in the usual
        // single-path table.
        if !extra.is_empty() {
            self.ecmp.insert(prefix, extra.to_vec());
        } else if !self.ecmp.is_empty() {
            self.ecmp.remove(&prefix);
        }
        let off_link = on_link.is_none() || extra.iter().any(|g| self.on_link(*g).is_none());
        if off_link {
            self.recursive.insert(prefix);
        } else if !self.recursive.is_empty() {
            // Skipping the empty set saves a hash per change in the usual
            // all-on-link table (this is the churn hot path).
            self.recursive.remove(&prefix);
        }
        let target = self.resolve_with(gw, prefix, on_link);
        if extra.is_empty() {
            return self.set_route(prefix, gw, target, &[], old);
        }
        let (target, more) = self.resolve_more(prefix, target, extra);
        self.set_route(prefix, gw, target, &more, old)
    }

    /// The distinct targets of a multipath route's further next hops
    /// `extra`, besides `target` (the best's); the first of them stands in
    /// for an unresolved `target`.
    fn resolve_more(
        &self,
        prefix: Prefix,
        target: Option<Target>,
        extra: &[IpAddr],
    ) -> (Option<Target>, Vec<Target>) {
        let mut more = Vec::new();
        for &g in extra {
            if let Some(t) = self.resolve(g, prefix) {
                if Some(t) != target && !more.contains(&t) {
                    more.push(t);
                }
            }
        }
        match target {
            Some(t) => (Some(t), more),
            None if more.is_empty() => (None, more),
            None => {
                let first = more.remove(0);
                (Some(first), more)
            }
        }
    }

    fn set_route(
        &mut self,
        prefix: Prefix,
        gw: IpAddr,
        target: Option<Target>,
        more: &[Target],
        old: Option<Route>,
    ) -> bool {
        let old_nh = old.and_then(|r| r.nh);
        if more.is_empty() {
            let old_key = old_nh
                .and_then(|nh| self.adjacency(nh))
                .map(|a| (a.port, a.gw, a.tag));
            if old_key == target && old_key.is_some() {
                self.routes.insert(prefix, Route { gw, nh: old_nh });
                return false;
            }
        }
        let nh = match target {
            None => None,
            Some((p, g, t)) if more.is_empty() => Some(self.adj_ref(p, g, t)),
            Some(t) => Some(self.group_ref(t, more)),
        };
        self.routes.insert(prefix, Route { gw, nh });
        if let (Some(n), Some(o)) = (nh, old_nh) {
            if n == o {
                // The same group as before: give back the new reference.
                self.nh_unref(n);
                return false;
            }
        }
        match (nh, old_nh) {
            (Some(n), _) => {
                self.push(insert_delta(prefix, n));
                self.note_export(prefix, target, more);
                if old_nh.is_none() {
                    self.stats.installed += 1;
                }
            }
            (None, Some(_)) => {
                self.push(remove_delta(prefix));
                self.note_export(prefix, None, &[]);
                self.stats.installed = self.stats.installed.saturating_sub(1);
            }
            (None, None) => return false,
        }
        if let Some(o) = old_nh {
            self.nh_unref(o);
        }
        true
    }

    fn note_export(&mut self, p: Prefix, target: Option<Target>, more: &[Target]) {
        if self.export {
            let via = target
                .iter()
                .chain(more)
                .filter_map(|&(port, g, _)| Some((port, g?)))
                .collect();
            self.exported.push((p, via));
        }
    }

    fn reresolve(&mut self) {
        let mut todo: Vec<Prefix> = self.recursive.iter().copied().collect();
        // Shorter prefixes first: a covering route settles before the
        // routes resolved through it.
        todo.sort_by_key(|p| p.len());
        for _ in 0..MAX_PASSES {
            let mut changed = false;
            for &p in &todo {
                let Some(r) = self.routes.get(p) else {
                    continue;
                };
                let target = self.resolve(r.gw, p);
                let extra = self.ecmp.get(&p).cloned().unwrap_or_default();
                let (target, more) = if extra.is_empty() {
                    (target, Vec::new())
                } else {
                    self.resolve_more(p, target, &extra)
                };
                changed |= self.set_route(p, r.gw, target, &more, Some(r));
            }
            if !changed {
                break;
            }
        }
    }

    /// A neighbour's MAC learned by a worker (ARP): updates the adjacencies
    /// through it and the neighbour table. No delta when nothing changed.
    pub fn learn(&mut self, ip: IpAddr, mac: [u8; 6]) {
        if self.neigh.get(&ip) == Some(&mac) {
            return;
        }
        self.neigh.insert(ip, mac);
        self.push(FibDelta::Neigh(ip, Some(mac)));
        let mut set = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Some(s) = s {
                if s.adj.gw == Some(ip) && s.adj.tag == 0 {
                    s.adj.mac = Some(mac);
                    set.push(FibDelta::SetAdj(NextHop(i as u32), s.adj));
                }
            }
        }
        for d in set {
            self.push(d);
        }
    }

    /// Gateways of adjacencies whose MAC is unknown, with their port (the
    /// dataplane asks for them by ARP).
    pub fn unresolved_gateways(&self) -> Vec<(u16, IpAddr)> {
        self.slots
            .iter()
            .flatten()
            .filter(|s| s.adj.mac.is_none() && s.adj.tag == 0)
            .filter_map(|s| Some((s.adj.port, s.adj.gw?)))
            .collect()
    }
}

fn contains(outer: Prefix, inner: Prefix) -> bool {
    match (outer, inner) {
        (Prefix::V4(o), Prefix::V4(i)) => o.len() <= i.len() && o.contains_addr(i.addr_bits()),
        (Prefix::V6(o), Prefix::V6(i)) => o.len() <= i.len() && o.contains_addr(i.addr_bits()),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
