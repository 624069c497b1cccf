//! Next-hop tracking inside a shard: what the router knows of each BGP
//! next hop (reachable, and at what interior cost) and which prefixes have
//! a path through it.
//!
//! RFC 4271 §9.1.2.1: a route whose NEXT_HOP cannot be resolved is not
//! eligible for selection; §9.1.2.2 e: among the rest, the lower interior
//! cost to the next hop wins. The state comes from outside (the runtime
//! resolves next hops against the kernel's routing table) through
//! [`crate::RibShard::nexthop_update`]; the shard asks for it by listing
//! next hops it starts and stops using ([`NexthopWatch`]). Until a next hop
//! has a state its paths are not eligible.
//!
//! The index (next hop -> prefixes with a path through it, with a count)
//! lets a change of one next hop re-run selection only where it matters,
//! not over the whole table. It is kept only while tracking is on.

use std::net::IpAddr;

use base::Prefix;
use bgp_wire::NextHop;

use crate::hash::FastMap;
use crate::key::PKey;

/// What is known of one next hop.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NhState {
    /// Resolvable through a route that is not one of ours (RFC 4271 §9.1.2.1).
    pub reachable: bool,
    /// The interior cost (the resolving route's metric; 0 when directly
    /// connected), for RFC 4271 §9.1.2.2 e.
    pub igp_cost: u32,
}

/// A next hop the shard started (`track`) or stopped using.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NexthopWatch {
    /// The next hop (the global address for IPv6).
    pub nexthop: IpAddr,
    /// True: now used, resolve it; false: no path uses it any more.
    pub track: bool,
}

/// One tracked next hop, as shown to operators.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NexthopInfo {
    /// The next hop.
    pub nexthop: IpAddr,
    /// Its state; `None` while not resolved yet.
    pub state: Option<NhState>,
    /// Prefixes with at least one path through it.
    pub prefixes: usize,
}

#[derive(Debug, Default)]
struct NhEntry {
    state: Option<NhState>,
    /// Paths through this next hop, per prefix.
    prefixes: FastMap<PKey, u32>,
}

/// The next-hop table of a shard (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct NhTable {
    entries: FastMap<IpAddr, NhEntry>,
    watch: Vec<NexthopWatch>,
}

/// The address a next hop is tracked by: the global one for IPv6.
pub fn nexthop_ip(nh: NextHop) -> IpAddr {
    match nh {
        NextHop::V4(a) => IpAddr::V4(a),
        NextHop::V6(a) | NextHop::V6LinkLocal(a, _) => IpAddr::V6(a),
    }
}

impl NhTable {
    /// Eligibility and cost of a path through `nh`: `None` when it is not
    /// eligible (unreachable, or not resolved yet).
    pub(crate) fn cost(&self, nh: IpAddr) -> Option<u32> {
        match self.entries.get(&nh)?.state? {
            NhState {
                reachable: true,
                igp_cost,
            } => Some(igp_cost),
            _ => None,
        }
    }

    /// One more path of `prefix` goes through `nh`.
    pub(crate) fn add(&mut self, nh: IpAddr, prefix: Prefix) {
        let e = self.entries.entry(nh).or_insert_with(|| {
            self.watch.push(NexthopWatch {
                nexthop: nh,
                track: true,
            });
            NhEntry::default()
        });
        *e.prefixes.entry(PKey::from(prefix)).or_insert(0) += 1;
    }

    /// One path of `prefix` through `nh` is gone.
    pub(crate) fn remove(&mut self, nh: IpAddr, prefix: Prefix) {
        let Some(e) = self.entries.get_mut(&nh) else {
            return;
        };
        let k = PKey::from(prefix);
        if let Some(n) = e.prefixes.get_mut(&k) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                e.prefixes.remove(&k);
            }
        }
        if e.prefixes.is_empty() {
            self.entries.remove(&nh);
            self.watch.push(NexthopWatch {
                nexthop: nh,
                track: false,
            });
        }
    }

    /// Records `st` for `nh`; returns the prefixes to reselect (appended to
    /// `out`) when the state changed and some path uses it.
    pub(crate) fn set(&mut self, nh: IpAddr, st: NhState, out: &mut Vec<Prefix>) {
        let Some(e) = self.entries.get_mut(&nh) else {
            return;
        };
        if e.state == Some(st) {
            return;
        }
        e.state = Some(st);
        out.extend(e.prefixes.keys().filter_map(|k| k.prefix()));
    }

    /// Moves the next hops started or stopped since the last call to `out`.
    pub(crate) fn drain_watch(&mut self, out: &mut Vec<NexthopWatch>) {
        out.append(&mut self.watch);
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = NexthopInfo> + '_ {
        self.entries.iter().map(|(nh, e)| NexthopInfo {
            nexthop: *nh,
            state: e.state,
            prefixes: e.prefixes.len(),
        })
    }
}
