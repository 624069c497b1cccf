//! The FIB as the XDP fast path needs it (`[dataplane] xdp_fastpath`):
//! the same [`FibDelta`]s the workers' tables absorb, turned into changes
//! of the kernel's LPM map ([`io::xdp::fast`]). Pure: deltas in, map
//! operations out; the FIB thread applies them.
//!
//! What goes into the map, for IPv4 only:
//! - a route whose adjacency is a gateway with a known MAC, on an external
//!   port: (prefix -> egress port, gateway MAC, port MAC);
//! - a neighbour with a known MAC whose longest route is a connected
//!   prefix: a /32 to it (the connected prefix itself is absent, so a
//!   destination not resolved yet goes to the graph, which sends ARP);
//! - each of the router's own addresses: a /32 marked [`LOCAL`] (to the
//!   graph: ICMP echo and everything addressed to us).
//!
//! What stays absent, so that the graph handles it as before: routes whose
//! gateway is unresolved, next-hop groups (ECMP: the graph's flow hash
//! picks the member), routes across the cluster fabric (tagged
//! adjacencies), ports beyond the map, IPv4 routes with IPv6 next hops.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use base::Prefix4;
use io::xdp::fast::{ApplyStats, FastHop, FastMaps, FastOp, Route4, LOCAL};
use lpm::NextHop;

use crate::table::{is_group, Adjacency, FibDelta};

/// The mirror's state: what the FIB says and what the map holds.
#[derive(Debug, Default)]
pub struct FastMirror {
    /// Each port's MAC, by port index (the map's DEVMAP slot).
    port_macs: Vec<[u8; 6]>,
    own: HashSet<u32>,
    routes: HashMap<Prefix4, NextHop>,
    /// The prefixes of each next hop (adjacency or group id).
    by_nh: HashMap<NextHop, HashSet<Prefix4>>,
    adj: HashMap<NextHop, Adjacency>,
    neigh: HashMap<u32, [u8; 6]>,
    /// The map's content as we wrote it.
    installed: HashMap<Route4, FastHop>,
    /// Neighbour /32s installed (a subset of `installed`'s keys).
    hosts: HashSet<u32>,
}

fn route4(p: Prefix4) -> Route4 {
    let p = p.masked();
    Route4 {
        addr: p.addr_bits(),
        len: p.len(),
    }
}

impl FastMirror {
    /// A mirror for ports with these MACs and the router's own IPv4
    /// addresses; `out` gets their [`LOCAL`] entries.
    pub fn new(port_macs: Vec<[u8; 6]>, own: &[Ipv4Addr], out: &mut Vec<FastOp>) -> Self {
        let mut m = FastMirror {
            port_macs,
            own: own.iter().map(|a| u32::from(*a)).collect(),
            ..FastMirror::default()
        };
        let own: Vec<u32> = m.own.iter().copied().collect();
        for a in own {
            m.sync(Route4 { addr: a, len: 32 }, out);
        }
        m
    }

    /// Entries the map holds now.
    pub fn len(&self) -> usize {
        self.installed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.installed.is_empty()
    }

    /// Takes one publication's deltas; `out` gets the map changes that
    /// make the map match (in an order the map can apply one by one).
    pub fn apply(&mut self, deltas: &[FibDelta], out: &mut Vec<FastOp>) {
        let mut dirty: HashSet<Route4> = HashSet::new();
        let mut routes_changed = false;
        for d in deltas {
            match d {
                FibDelta::Insert4(p, nh) => {
                    let p = p.masked();
                    if let Some(old) = self.routes.insert(p, *nh) {
                        if let Some(s) = self.by_nh.get_mut(&old) {
                            s.remove(&p);
                        }
                    }
                    self.by_nh.entry(*nh).or_default().insert(p);
                    dirty.insert(route4(p));
                    routes_changed = true;
                }
                FibDelta::Remove4(p) => {
                    let p = p.masked();
                    if let Some(old) = self.routes.remove(&p) {
                        if let Some(s) = self.by_nh.get_mut(&old) {
                            s.remove(&p);
                        }
                    }
                    dirty.insert(route4(p));
                    routes_changed = true;
                }
                FibDelta::SetAdj(nh, a) => {
                    self.adj.insert(*nh, *a);
                    self.touch(*nh, &mut dirty);
                    // A connected adjacency's port decides its hosts.
                    routes_changed |= a.gw.is_none();
                }
                FibDelta::ClearAdj(nh) => {
                    self.adj.remove(nh);
                    self.touch(*nh, &mut dirty);
                    routes_changed = true;
                }
                FibDelta::Neigh(IpAddr::V4(ip), mac) => {
                    let ip = u32::from(*ip);
                    match mac {
                        Some(m) => self.neigh.insert(ip, *m),
                        None => self.neigh.remove(&ip),
                    };
                    dirty.insert(Route4 { addr: ip, len: 32 });
                }
                // Groups are never in the map; their routes' entries are
                // absent whatever the members are.
                FibDelta::SetGroup(..) | FibDelta::ClearGroup(_) => {}
                FibDelta::Insert6(..)
                | FibDelta::Remove6(_)
                | FibDelta::Neigh(IpAddr::V6(_), _) => {}
            }
        }
        if routes_changed {
            // A route change can move a neighbour under a longer route
            // (or back): look at every neighbour again (they are few).
            dirty.extend(self.neigh.keys().map(|a| Route4 { addr: *a, len: 32 }));
            dirty.extend(self.hosts.iter().map(|a| Route4 { addr: *a, len: 32 }));
        }
        let mut dirty: Vec<Route4> = dirty.into_iter().collect();
        dirty.sort_unstable();
        for k in dirty {
            self.sync(k, out);
        }
    }

    fn touch(&self, nh: NextHop, dirty: &mut HashSet<Route4>) {
        if let Some(s) = self.by_nh.get(&nh) {
            dirty.extend(s.iter().map(|p| route4(*p)));
        }
    }

    /// Brings key `k` of the map in line with [`FastMirror::desired`].
    fn sync(&mut self, k: Route4, out: &mut Vec<FastOp>) {
        let want = self.desired(k);
        let host = want.is_some() && k.len == 32 && self.is_host(k.addr);
        match (want, self.installed.get(&k).copied()) {
            (Some(w), Some(h)) if w == h => {}
            (Some(w), _) => {
                self.installed.insert(k, w);
                out.push(FastOp::Set(k, w));
            }
            (None, Some(_)) => {
                self.installed.remove(&k);
                out.push(FastOp::Remove(k));
            }
            (None, None) => {}
        }
        if host {
            self.hosts.insert(k.addr);
        } else if k.len == 32 {
            self.hosts.remove(&k.addr);
        }
    }

    /// What key `k` should hold: our address, else a neighbour's /32, else
    /// the route's forwarding entry.
    fn desired(&self, k: Route4) -> Option<FastHop> {
        if k.len == 32 && self.own.contains(&k.addr) {
            return Some(FastHop {
                slot: LOCAL,
                dmac: [0; 6],
                smac: [0; 6],
            });
        }
        if k.len == 32 {
            if let Some(h) = self.host(k.addr) {
                return Some(h);
            }
        }
        let p = Prefix4::new(k.addr, k.len).ok()?;
        let nh = *self.routes.get(&p)?;
        if is_group(nh) {
            return None;
        }
        let a = self.adj.get(&nh)?;
        let (Some(IpAddr::V4(_)), Some(mac), 0) = (a.gw, a.mac, a.tag) else {
            return None;
        };
        self.hop(a.port, mac)
    }

    fn is_host(&self, addr: u32) -> bool {
        !self.own.contains(&addr) && self.host(addr).is_some()
    }

    /// A neighbour's /32: its MAC is known and its longest route is a
    /// connected prefix (no gateway) on an external port.
    fn host(&self, addr: u32) -> Option<FastHop> {
        let mac = *self.neigh.get(&addr)?;
        let nh = (0..=32u8).rev().find_map(|len| {
            let p = Prefix4::new(addr, len).ok()?.masked();
            self.routes.get(&p).copied()
        })?;
        if is_group(nh) {
            return None;
        }
        let a = self.adj.get(&nh)?;
        if a.gw.is_some() || a.tag != 0 {
            return None;
        }
        self.hop(a.port, mac)
    }

    fn hop(&self, port: u16, dmac: [u8; 6]) -> Option<FastHop> {
        let smac = *self.port_macs.get(usize::from(port))?;
        Some(FastHop {
            slot: u32::from(port),
            dmac,
            smac,
        })
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
    pub fn new(
        maps: Arc<FastMaps>,
        port_macs: Vec<[u8; 6]>,
        own: &[Ipv4Addr],
    ) -> (Self, ApplyStats) {
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

    const P0: [u8; 6] = [2, 0, 0, 0, 1, 0];
    const P1: [u8; 6] = [2, 0, 0, 0, 1, 1];
    const GW: [u8; 6] = [2, 0, 0, 0, 0xb, 0];
    const H: [u8; 6] = [2, 0, 0, 0, 0xb, 9];

    fn p(a: [u8; 4], l: u8) -> Prefix4 {
        Prefix4::from_addr(Ipv4Addr::from(a), l).unwrap()
    }
    fn k(a: [u8; 4], l: u8) -> Route4 {
        route4(p(a, l))
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
        let mut m = FastMirror::new(vec![P0, P1], &[Ipv4Addr::new(198, 18, 2, 1)], &mut out);
        assert_eq!(
            out,
            vec![FastOp::Set(
                k([198, 18, 2, 1], 32),
                FastHop {
                    slot: LOCAL,
                    dmac: [0; 6],
                    smac: [0; 6]
                }
            )]
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

    /// Groups, fabric routes and unknown ports stay with the graph.
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
}
