//! The FIB as the XDP fast path needs it (`[dataplane] xdp_fastpath`):
//! the same [`FibDelta`]s the workers' tables absorb, turned into changes
//! of the kernel's maps ([`io::xdp::fast`]). Pure: deltas in, map
//! operations out; the FIB thread applies them.
//!
//! What goes into the LPM maps, IPv4 and IPv6 alike:
//! - a route whose adjacency is a gateway with a known MAC, on an external
//!   port: (prefix -> egress port, gateway MAC, port MAC);
//! - a multipath route (a next-hop group): (prefix -> the group's slice of
//!   the member array); each member slot holds the member's (port, MAC),
//!   or "unresolved" while its MAC is unknown (those flows go to the
//!   graph, which resolves it). The members are in the FIB's order
//!   ([`crate::table::FibTables::group`]) and the program picks
//!   `flow_hash % members` as [`crate::table::FibTables::pick`] does, so a
//!   flow takes the same next hop with and without the fast path;
//! - a neighbour with a known MAC whose longest route is a connected
//!   prefix: a /32 (/128) to it (the connected prefix itself is absent, so
//!   a destination not resolved yet goes to the graph, which sends ARP or
//!   a Neighbor Solicitation);
//! - each of the router's own addresses: a /32 (/128) marked
//!   [`io::xdp::fast::LOCAL`]
//!   (to the graph: ICMP echo and everything addressed to us).
//!
//! What stays absent, so that the graph handles it as before: routes whose
//! gateway is unresolved, routes across the cluster fabric (tagged
//! adjacencies), ports beyond the map, groups with more than
//! [`MAX_MEMBERS`] members or ids beyond [`MAX_GROUPS`].

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Arc;

use io::xdp::fast::{
    ApplyStats, FastHop, FastMaps, FastOp, Route4, Route6, MAX_GROUPS, MAX_MEMBERS,
};
use lpm::NextHop;

use crate::table::{is_group, Adjacency, FibDelta, GROUP_BASE};

/// An address family as the mirror needs it: host-order addresses.
trait Fam: Copy + Eq + Hash + Ord + Debug + Default {
    const BITS: u8;
    fn masked(self, len: u8) -> Self;
    fn set(k: Key<Self>, h: FastHop) -> FastOp;
    fn remove(k: Key<Self>) -> FastOp;
}

impl Fam for u32 {
    const BITS: u8 = 32;
    fn masked(self, len: u8) -> Self {
        self & base::mask4(len.min(32))
    }
    fn set(k: Key<Self>, h: FastHop) -> FastOp {
        FastOp::Set(
            Route4 {
                addr: k.addr,
                len: k.len,
            },
            h,
        )
    }
    fn remove(k: Key<Self>) -> FastOp {
        FastOp::Remove(Route4 {
            addr: k.addr,
            len: k.len,
        })
    }
}

impl Fam for u128 {
    const BITS: u8 = 128;
    fn masked(self, len: u8) -> Self {
        self & base::mask6(len.min(128))
    }
    fn set(k: Key<Self>, h: FastHop) -> FastOp {
        FastOp::Set6(
            Route6 {
                addr: k.addr,
                len: k.len,
            },
            h,
        )
    }
    fn remove(k: Key<Self>) -> FastOp {
        FastOp::Remove6(Route6 {
            addr: k.addr,
            len: k.len,
        })
    }
}

/// A prefix of one family, host bits cleared.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key<A> {
    addr: A,
    len: u8,
}

impl<A: Fam> Key<A> {
    fn new(addr: A, len: u8) -> Self {
        let len = len.min(A::BITS);
        Key {
            addr: addr.masked(len),
            len,
        }
    }
    fn host(addr: A) -> Self {
        Key { addr, len: A::BITS }
    }
}

/// What both families share: the ports, adjacencies and groups.
#[derive(Debug, Default)]
struct Shared {
    /// Each port's MAC, by port index (the map's DEVMAP slot).
    port_macs: Vec<[u8; 6]>,
    adj: HashMap<NextHop, Adjacency>,
    groups: HashMap<NextHop, Arc<[NextHop]>>,
}

impl Shared {
    fn hop(&self, port: u16, dmac: [u8; 6]) -> Option<FastHop> {
        let smac = *self.port_macs.get(usize::from(port))?;
        Some(FastHop {
            slot: u32::from(port),
            dmac,
            smac,
        })
    }

    /// A gateway adjacency with a known MAC on an external port.
    fn gateway(&self, nh: NextHop) -> Option<FastHop> {
        let a = self.adj.get(&nh)?;
        let (Some(_), Some(mac), 0) = (a.gw, a.mac, a.tag) else {
            return None;
        };
        self.hop(a.port, mac)
    }

    /// Group `nh`'s first slot in the member array and its members, when
    /// the array has room for it.
    fn group_slot(&self, nh: NextHop) -> Option<(u32, &[NextHop])> {
        let g = nh.0.checked_sub(GROUP_BASE)?;
        let m = self.groups.get(&nh)?;
        if g >= MAX_GROUPS || m.is_empty() || m.len() > MAX_MEMBERS as usize {
            return None;
        }
        Some((g * MAX_MEMBERS, m))
    }

    /// What a route to `nh` should hold: the gateway's entry or the group's.
    fn route_entry(&self, nh: NextHop) -> Option<FastHop> {
        if is_group(nh) {
            let (first, m) = self.group_slot(nh)?;
            return Some(FastHop::group(first, m.len() as u32));
        }
        self.gateway(nh)
    }
}

/// One family's routes, neighbours and what its LPM map holds.
#[derive(Debug, Default)]
struct Side<A: Fam> {
    own: HashSet<A>,
    routes: HashMap<Key<A>, NextHop>,
    /// The prefixes of each next hop (adjacency or group id).
    by_nh: HashMap<NextHop, HashSet<Key<A>>>,
    neigh: HashMap<A, [u8; 6]>,
    /// The map's content as we wrote it.
    installed: HashMap<Key<A>, FastHop>,
    /// Neighbour host routes installed (a subset of `installed`'s keys).
    hosts: HashSet<A>,
    /// Keys to look at again, and whether a route changed (so that every
    /// neighbour is looked at again).
    dirty: HashSet<Key<A>>,
    routes_changed: bool,
}

impl<A: Fam> Side<A> {
    fn insert(&mut self, k: Key<A>, nh: NextHop) {
        if let Some(old) = self.routes.insert(k, nh) {
            if let Some(s) = self.by_nh.get_mut(&old) {
                s.remove(&k);
            }
        }
        self.by_nh.entry(nh).or_default().insert(k);
        self.dirty.insert(k);
        self.routes_changed = true;
    }

    fn remove(&mut self, k: Key<A>) {
        if let Some(old) = self.routes.remove(&k) {
            if let Some(s) = self.by_nh.get_mut(&old) {
                s.remove(&k);
            }
        }
        self.dirty.insert(k);
        self.routes_changed = true;
    }

    fn neigh(&mut self, ip: A, mac: Option<[u8; 6]>) {
        match mac {
            Some(m) => self.neigh.insert(ip, m),
            None => self.neigh.remove(&ip),
        };
        self.dirty.insert(Key::host(ip));
    }

    fn touch(&mut self, nh: NextHop) {
        if let Some(s) = self.by_nh.get(&nh) {
            self.dirty.extend(s.iter().copied());
        }
    }

    /// Brings every dirty key of the map in line with [`Side::desired`].
    fn flush(&mut self, sh: &Shared, out: &mut Vec<FastOp>) {
        if std::mem::take(&mut self.routes_changed) {
            // A route change can move a neighbour under a longer route
            // (or back): look at every neighbour again (they are few).
            let n: Vec<Key<A>> = self
                .neigh
                .keys()
                .chain(self.hosts.iter())
                .map(|a| Key::host(*a))
                .collect();
            self.dirty.extend(n);
        }
        let mut dirty: Vec<Key<A>> = self.dirty.drain().collect();
        dirty.sort_unstable();
        for k in dirty {
            self.sync(sh, k, out);
        }
    }

    fn sync(&mut self, sh: &Shared, k: Key<A>, out: &mut Vec<FastOp>) {
        let want = self.desired(sh, k);
        let host = want.is_some() && k.len == A::BITS && self.is_host(sh, k.addr);
        match (want, self.installed.get(&k).copied()) {
            (Some(w), Some(h)) if w == h => {}
            (Some(w), _) => {
                self.installed.insert(k, w);
                out.push(A::set(k, w));
            }
            (None, Some(_)) => {
                self.installed.remove(&k);
                out.push(A::remove(k));
            }
            (None, None) => {}
        }
        if host {
            self.hosts.insert(k.addr);
        } else if k.len == A::BITS {
            self.hosts.remove(&k.addr);
        }
    }

    /// What key `k` should hold: our address, else a neighbour's host
    /// route, else the route's forwarding entry.
    fn desired(&self, sh: &Shared, k: Key<A>) -> Option<FastHop> {
        if k.len == A::BITS && self.own.contains(&k.addr) {
            return Some(FastHop::local());
        }
        if k.len == A::BITS {
            if let Some(h) = self.host(sh, k.addr) {
                return Some(h);
            }
        }
        sh.route_entry(*self.routes.get(&k)?)
    }

    fn is_host(&self, sh: &Shared, addr: A) -> bool {
        !self.own.contains(&addr) && self.host(sh, addr).is_some()
    }

    /// A neighbour's host route: its MAC is known and its longest route
    /// is a connected prefix (no gateway) on an external port.
    fn host(&self, sh: &Shared, addr: A) -> Option<FastHop> {
        let mac = *self.neigh.get(&addr)?;
        let nh = (0..=A::BITS)
            .rev()
            .find_map(|len| self.routes.get(&Key::new(addr, len)).copied())?;
        if is_group(nh) {
            return None;
        }
        let a = sh.adj.get(&nh)?;
        if a.gw.is_some() || a.tag != 0 {
            return None;
        }
        sh.hop(a.port, mac)
    }
}

/// The mirror's state: what the FIB says and what the maps hold.
#[derive(Debug, Default)]
pub struct FastMirror {
    sh: Shared,
    v4: Side<u32>,
    v6: Side<u128>,
    /// The member array as we wrote it.
    members: HashMap<u32, FastHop>,
}

impl FastMirror {
    /// A mirror for ports with these MACs and the router's own addresses
    /// (IPv4 and IPv6); `out` gets their [`io::xdp::fast::LOCAL`] entries.
    pub fn new(port_macs: Vec<[u8; 6]>, own: &[IpAddr], out: &mut Vec<FastOp>) -> Self {
        let mut m = FastMirror {
            sh: Shared {
                port_macs,
                ..Shared::default()
            },
            ..FastMirror::default()
        };
        for a in own {
            match a {
                IpAddr::V4(a) => {
                    let a = u32::from(*a);
                    m.v4.own.insert(a);
                    m.v4.dirty.insert(Key::host(a));
                }
                IpAddr::V6(a) => {
                    let a = u128::from(*a);
                    m.v6.own.insert(a);
                    m.v6.dirty.insert(Key::host(a));
                }
            }
        }
        m.v4.flush(&m.sh, out);
        m.v6.flush(&m.sh, out);
        m
    }

    /// Entries the LPM maps hold now.
    pub fn len(&self) -> usize {
        self.v4.installed.len() + self.v6.installed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes one publication's deltas; `out` gets the map changes that
    /// make the maps match (in an order the maps can apply one by one:
    /// group members before the routes that point at them).
    pub fn apply(&mut self, deltas: &[FibDelta], out: &mut Vec<FastOp>) {
        let mut groups: HashSet<NextHop> = HashSet::new();
        for d in deltas {
            match d {
                FibDelta::Insert4(p, nh) => {
                    self.v4.insert(Key::new(p.addr_bits(), p.len()), *nh);
                }
                FibDelta::Remove4(p) => self.v4.remove(Key::new(p.addr_bits(), p.len())),
                FibDelta::Insert6(p, nh) => {
                    self.v6.insert(Key::new(p.addr_bits(), p.len()), *nh);
                }
                FibDelta::Remove6(p) => self.v6.remove(Key::new(p.addr_bits(), p.len())),
                FibDelta::SetAdj(nh, a) => {
                    self.sh.adj.insert(*nh, *a);
                    self.touch(*nh, &mut groups);
                    // A connected adjacency's port decides its hosts.
                    if a.gw.is_none() {
                        self.v4.routes_changed = true;
                        self.v6.routes_changed = true;
                    }
                }
                FibDelta::ClearAdj(nh) => {
                    self.sh.adj.remove(nh);
                    self.touch(*nh, &mut groups);
                    self.v4.routes_changed = true;
                    self.v6.routes_changed = true;
                }
                FibDelta::SetGroup(nh, m) => {
                    self.sh.groups.insert(*nh, Arc::clone(m));
                    groups.insert(*nh);
                    self.v4.touch(*nh);
                    self.v6.touch(*nh);
                }
                FibDelta::ClearGroup(nh) => {
                    // Its member slots stay as they are: no route points
                    // at them any more, and a new group rewrites them.
                    self.sh.groups.remove(nh);
                    self.v4.touch(*nh);
                    self.v6.touch(*nh);
                }
                FibDelta::Neigh(IpAddr::V4(ip), mac) => self.v4.neigh(u32::from(*ip), *mac),
                FibDelta::Neigh(IpAddr::V6(ip), mac) => self.v6.neigh(u128::from(*ip), *mac),
            }
        }
        let mut groups: Vec<NextHop> = groups.into_iter().collect();
        groups.sort_unstable();
        for g in groups {
            self.sync_members(g, out);
        }
        self.v4.flush(&self.sh, out);
        self.v6.flush(&self.sh, out);
    }

    /// Marks the routes of adjacency `nh` dirty, and the groups it is a
    /// member of.
    fn touch(&mut self, nh: NextHop, groups: &mut HashSet<NextHop>) {
        self.v4.touch(nh);
        self.v6.touch(nh);
        for (g, m) in &self.sh.groups {
            if m.contains(&nh) {
                groups.insert(*g);
            }
        }
    }

    /// Writes group `g`'s member slots that differ from what they should
    /// hold: each member's (port, MAC), or unresolved.
    fn sync_members(&mut self, g: NextHop, out: &mut Vec<FastOp>) {
        let Some((first, m)) = self.sh.group_slot(g) else {
            return;
        };
        for (i, nh) in m.iter().enumerate() {
            let want = self.sh.gateway(*nh).unwrap_or(FastHop::unresolved());
            let at = first + i as u32;
            if self.members.get(&at) != Some(&want) {
                self.members.insert(at, want);
                out.push(FastOp::Member(at, want));
            }
        }
    }
}

/// The edge: a mirror and the maps it writes, owned by the FIB thread.
pub struct FastFeed {
    maps: Arc<FastMaps>,
    mirror: FastMirror,
    ops: Vec<FastOp>,
}

impl FastFeed {
    /// Starts the maps with the router's own addresses (what that wrote).
    pub fn new(maps: Arc<FastMaps>, port_macs: Vec<[u8; 6]>, own: &[IpAddr]) -> (Self, ApplyStats) {
        let mut ops = Vec::new();
        let mirror = FastMirror::new(port_macs, own, &mut ops);
        let mut f = FastFeed { maps, mirror, ops };
        let st = f.flush();
        (f, st)
    }

    /// Mirrors one publication's deltas into the maps.
    pub fn feed(&mut self, deltas: &[FibDelta]) -> ApplyStats {
        self.mirror.apply(deltas, &mut self.ops);
        self.flush()
    }

    fn flush(&mut self) -> ApplyStats {
        let st = if self.ops.is_empty() {
            ApplyStats::default()
        } else {
            self.maps.apply(&self.ops)
        };
        self.ops.clear();
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::FibTables;
    use base::{Prefix4, Prefix6};
    use lpm::publish::Absorb;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const P0: [u8; 6] = [2, 0, 0, 0, 1, 0];
    const P1: [u8; 6] = [2, 0, 0, 0, 1, 1];
    const GW: [u8; 6] = [2, 0, 0, 0, 0xb, 0];
    const H: [u8; 6] = [2, 0, 0, 0, 0xb, 9];

    fn p(a: [u8; 4], l: u8) -> Prefix4 {
        Prefix4::from_addr(Ipv4Addr::from(a), l).unwrap()
    }
    fn k(a: [u8; 4], l: u8) -> Route4 {
        Route4 {
            addr: u32::from(Ipv4Addr::from(a)).masked(l),
            len: l,
        }
    }
    fn p6(a: &str, l: u8) -> Prefix6 {
        Prefix6::from_addr(a.parse().unwrap(), l).unwrap()
    }
    fn k6(a: &str, l: u8) -> Route6 {
        Route6 {
            addr: u128::from(a.parse::<Ipv6Addr>().unwrap()).masked(l),
            len: l,
        }
    }
    fn v6(a: &str) -> IpAddr {
        IpAddr::V6(a.parse().unwrap())
    }
    fn adj(port: u16, gw: Option<[u8; 4]>, mac: Option<[u8; 6]>) -> Adjacency {
        Adjacency {
            port,
            gw: gw.map(|g| IpAddr::V4(Ipv4Addr::from(g))),
            mac,
            tag: 0,
        }
    }

    /// The map follows the FIB: an unresolved gateway stays absent until
    /// its MAC is known, a neighbour on a connected prefix gets a /32,
    /// our address is LOCAL, and withdrawals remove.
    #[test]
    fn follows_resolution_and_withdrawal() {
        let mut out = Vec::new();
        let mut m = FastMirror::new(
            vec![P0, P1],
            &[IpAddr::V4(Ipv4Addr::new(198, 18, 2, 1))],
            &mut out,
        );
        assert_eq!(
            out,
            vec![FastOp::Set(k([198, 18, 2, 1], 32), FastHop::local())]
        );
        out.clear();
        // Connected 198.18.2.0/24 on port 1 (nh 0); a route via
        // 198.18.2.2 (nh 1), not resolved yet.
        m.apply(
            &[
                FibDelta::SetAdj(NextHop(0), adj(1, None, None)),
                FibDelta::Insert4(p([198, 18, 2, 0], 24), NextHop(0)),
                FibDelta::SetAdj(NextHop(1), adj(1, Some([198, 18, 2, 2]), None)),
                FibDelta::Insert4(p([198, 19, 0, 0], 16), NextHop(1)),
            ],
            &mut out,
        );
        assert_eq!(out, vec![], "nothing resolved yet: all to the graph");
        // ARP resolved the gateway (also a connected neighbour).
        m.apply(
            &[
                FibDelta::SetAdj(NextHop(1), adj(1, Some([198, 18, 2, 2]), Some(GW))),
                FibDelta::Neigh(IpAddr::V4(Ipv4Addr::new(198, 18, 2, 2)), Some(GW)),
            ],
            &mut out,
        );
        let via = FastHop {
            slot: 1,
            dmac: GW,
            smac: P1,
        };
        assert_eq!(
            out,
            vec![
                FastOp::Set(k([198, 18, 2, 2], 32), via),
                FastOp::Set(k([198, 19, 0, 0], 16), via),
            ]
        );
        out.clear();
        // A host behind the connected prefix, then a more specific route
        // over it that has a gateway: the host's /32 goes (the route now
        // decides), and comes back when that route is withdrawn.
        m.apply(
            &[FibDelta::Neigh(
                IpAddr::V4(Ipv4Addr::new(198, 18, 2, 9)),
                Some(H),
            )],
            &mut out,
        );
        assert_eq!(
            out,
            vec![FastOp::Set(
                k([198, 18, 2, 9], 32),
                FastHop {
                    slot: 1,
                    dmac: H,
                    smac: P1
                }
            )]
        );
        out.clear();
        m.apply(
            &[FibDelta::Insert4(p([198, 18, 2, 8], 30), NextHop(1))],
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                FastOp::Set(k([198, 18, 2, 8], 30), via),
                FastOp::Remove(k([198, 18, 2, 9], 32)),
            ]
        );
        out.clear();
        m.apply(&[FibDelta::Remove4(p([198, 18, 2, 8], 30))], &mut out);
        assert_eq!(out.len(), 2);
        assert!(out.contains(&FastOp::Remove(k([198, 18, 2, 8], 30))));
        out.clear();
        // The gateway's MAC is forgotten: its route leaves the map.
        m.apply(
            &[FibDelta::SetAdj(
                NextHop(1),
                adj(1, Some([198, 18, 2, 2]), None),
            )],
            &mut out,
        );
        assert_eq!(out, vec![FastOp::Remove(k([198, 19, 0, 0], 16))]);
        out.clear();
        m.apply(&[FibDelta::Remove4(p([198, 19, 0, 0], 16))], &mut out);
        assert_eq!(out, vec![]);
        assert_eq!(m.len(), 3, "LOCAL and two hosts remain");
    }

    /// Fabric routes, unknown ports and a group whose members were never
    /// set stay with the graph.
    #[test]
    fn groups_fabric_and_unknown_ports_stay_absent() {
        let mut out = Vec::new();
        let mut m = FastMirror::new(vec![P0], &[], &mut out);
        let mut fab = adj(0, Some([198, 18, 9, 1]), Some(GW));
        fab.tag = 7;
        m.apply(
            &[
                FibDelta::SetAdj(NextHop(1), fab),
                FibDelta::Insert4(p([198, 20, 0, 0], 16), NextHop(1)),
                FibDelta::SetAdj(NextHop(2), adj(5, Some([198, 18, 9, 1]), Some(GW))),
                FibDelta::Insert4(p([198, 21, 0, 0], 16), NextHop(2)),
                FibDelta::Insert4(p([198, 22, 0, 0], 16), NextHop(crate::table::GROUP_BASE)),
            ],
            &mut out,
        );
        assert_eq!(out, vec![]);
        assert!(m.is_empty());
    }

    /// IPv6 follows the same rules: own /128 LOCAL, a route via a
    /// resolved gateway, a neighbour's /128 on a connected prefix, and
    /// removal when the gateway's MAC is forgotten.
    #[test]
    fn ipv6_follows_resolution() {
        let mut out = Vec::new();
        let mut m = FastMirror::new(vec![P0, P1], &[v6("2001:db8:2::1")], &mut out);
        assert_eq!(
            out,
            vec![FastOp::Set6(k6("2001:db8:2::1", 128), FastHop::local())]
        );
        out.clear();
        let gw = Adjacency {
            port: 1,
            gw: Some(v6("2001:db8:2::2")),
            mac: None,
            tag: 0,
        };
        m.apply(
            &[
                FibDelta::SetAdj(NextHop(0), adj(1, None, None)),
                FibDelta::Insert6(p6("2001:db8:2::", 64), NextHop(0)),
                FibDelta::SetAdj(NextHop(1), gw),
                FibDelta::Insert6(p6("2001:db8:113::", 48), NextHop(1)),
            ],
            &mut out,
        );
        assert_eq!(out, vec![], "nothing resolved yet");
        m.apply(
            &[
                FibDelta::SetAdj(
                    NextHop(1),
                    Adjacency {
                        mac: Some(GW),
                        ..gw
                    },
                ),
                FibDelta::Neigh(v6("2001:db8:2::2"), Some(GW)),
            ],
            &mut out,
        );
        let via = FastHop {
            slot: 1,
            dmac: GW,
            smac: P1,
        };
        assert_eq!(
            out,
            vec![
                FastOp::Set6(k6("2001:db8:2::2", 128), via),
                FastOp::Set6(k6("2001:db8:113::", 48), via),
            ]
        );
        out.clear();
        m.apply(&[FibDelta::SetAdj(NextHop(1), gw)], &mut out);
        assert_eq!(out, vec![FastOp::Remove6(k6("2001:db8:113::", 48))]);
        out.clear();
        // IPv4 deltas leave the IPv6 map alone and the other way round.
        m.apply(&[FibDelta::Remove6(p6("2001:db8:113::", 48))], &mut out);
        assert_eq!(out, vec![]);
        assert_eq!(m.len(), 2, "LOCAL and the neighbour remain");
    }

    /// A multipath route: its members are written in the FIB's order
    /// before the route that points at them, an unresolved member is
    /// marked so (its flows go to the graph), and member `h % n` of the
    /// array is the adjacency `FibTables::pick` takes for hash `h`: the
    /// same next hop with and without the fast path. Resolving a member
    /// rewrites only its slot; clearing the group removes its routes.
    #[test]
    fn groups_follow_the_fib_member_order() {
        let mut out = Vec::new();
        let mut m = FastMirror::new(vec![P0, P1], &[], &mut out);
        let g = NextHop(GROUP_BASE + 3);
        let members: Arc<[NextHop]> = vec![NextHop(4), NextHop(7)].into();
        let b = adj(0, Some([198, 18, 2, 2]), Some(GW));
        let c = adj(1, Some([198, 18, 3, 2]), None);
        let deltas = vec![
            FibDelta::SetAdj(NextHop(4), b),
            FibDelta::SetAdj(NextHop(7), c),
            FibDelta::SetGroup(g, Arc::clone(&members)),
            FibDelta::Insert4(p([198, 19, 113, 0], 24), g),
            FibDelta::Insert6(p6("2001:db8:113::", 48), g),
        ];
        m.apply(&deltas, &mut out);
        let first = 3 * MAX_MEMBERS;
        let hb = FastHop {
            slot: 0,
            dmac: GW,
            smac: P0,
        };
        assert_eq!(
            out,
            vec![
                FastOp::Member(first, hb),
                FastOp::Member(first + 1, FastHop::unresolved()),
                FastOp::Set(k([198, 19, 113, 0], 24), FastHop::group(first, 2)),
                FastOp::Set6(k6("2001:db8:113::", 48), FastHop::group(first, 2)),
            ]
        );
        out.clear();
        // C resolved: only its slot changes.
        let c2 = adj(1, Some([198, 18, 3, 2]), Some(H));
        m.apply(&[FibDelta::SetAdj(NextHop(7), c2)], &mut out);
        let hc = FastHop {
            slot: 1,
            dmac: H,
            smac: P1,
        };
        assert_eq!(out, vec![FastOp::Member(first + 1, hc)]);
        out.clear();
        // The same choice as the graph's tables for every hash.
        let mut t = FibTables::new();
        for d in deltas
            .iter()
            .chain(std::iter::once(&FibDelta::SetAdj(NextHop(7), c2)))
        {
            t.absorb(d).unwrap();
        }
        for h in [0u32, 1, 2, 3, 0xdead_beef, u32::MAX] {
            let a = t.adjacency(t.pick(g, h)).copied().unwrap();
            let slot = m.members[&(first + h % 2)];
            assert_eq!((slot.slot, slot.dmac), (u32::from(a.port), a.mac.unwrap()));
        }
        // The group goes: its routes leave the maps.
        m.apply(
            &[
                FibDelta::Remove4(p([198, 19, 113, 0], 24)),
                FibDelta::Remove6(p6("2001:db8:113::", 48)),
                FibDelta::ClearGroup(g),
            ],
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                FastOp::Remove(k([198, 19, 113, 0], 24)),
                FastOp::Remove6(k6("2001:db8:113::", 48)),
            ]
        );
        // A group beyond the member array stays with the graph.
        out.clear();
        let far = NextHop(GROUP_BASE + MAX_GROUPS);
        m.apply(
            &[
                FibDelta::SetGroup(far, Arc::clone(&members)),
                FibDelta::Insert4(p([198, 20, 0, 0], 16), far),
            ],
            &mut out,
        );
        assert_eq!(out, vec![]);
    }
}
