//! Views: the best routes among the paths learned from a set of named
//! neighbours, for a forwarding plane that is not the main one (a virtual
//! router's FIB fed by `[[dataplane.vr]] neighbors = [...]`, issue 19).
//!
//! A view is a name and a list of neighbour names. Its best path of a
//! prefix is chosen by the Loc-RIB's own decision process among the
//! paths of those neighbours only ([`bgp_rib::Rib::best_among`]), with
//! the multipath set when multipath is on; it is handed out as the same
//! [`BestChange`] the main best-route feed carries.
//!
//! * Registration ([`crate::RibCore::set_view`]) hands the caller the
//!   view's whole table (a snapshot) and starts following it.
//! * Each export round ([`crate::RibCore::propagate`]) looks at every
//!   prefix whose Loc-RIB best changed or where another path changed (the
//!   RIB collects those while a view is registered:
//!   [`bgp_rib::Rib::set_view_tracking`]) and writes one
//!   [`ViewBatch`] per view into [`crate::Outbox::views`] with the
//!   prefixes whose view next hops changed: the same rhythm as
//!   [`crate::Outbox::best`]. A view remembers a 64-bit fingerprint of the
//!   next hops it last handed out per prefix (what its FIB holds), so
//!   that changes elsewhere in the RIB cost it nothing downstream; that
//!   table is the memory a view costs (about 60 bytes per prefix in it).
//! * Neighbour names are resolved to peer ids on every round, so a
//!   neighbour added, removed or re-added by a reload is followed; a
//!   neighbour that is not up has no paths (a session going down
//!   withdraws them as from the Loc-RIB; graceful restart keeps them
//!   stale, as in the Loc-RIB) and contributes nothing.
//! * With no view registered nothing is collected or computed.
//! * Unicast only, as the main feed (multicast routes never reach a FIB).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use base::Prefix;
use bgp_rib::{nexthop_ip, PeerId, PeerSet, Rib};

use crate::outbox::{BestChange, Outbox, ViewBatch};
use crate::peer::PeerEntry;

/// One registered view.
#[derive(Debug)]
struct View {
    name: String,
    neighbors: Vec<String>,
    /// Per prefix with a route in the view: a fingerprint of the next hops
    /// last handed out.
    last: HashMap<Prefix, u64>,
}

/// The views of one RIB part (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Views {
    list: Vec<View>,
    /// Scratch: the prefixes of one round, the selected path indices.
    cand: Vec<Prefix>,
    idx: Vec<usize>,
}

fn fingerprint(c: &BestChange) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for nh in c.next_hops() {
        nh.hash(&mut h);
    }
    h.finish()
}

/// The peer ids of `names` now.
fn resolve(peers: &[Option<PeerEntry>], names: &[String]) -> PeerSet {
    peers
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let e = e.as_ref()?;
            names.contains(&e.meta.name).then_some(PeerId(i as u16))
        })
        .collect()
}

/// The view's route for `p` now: its best next hop, then the other
/// distinct next hops of its multipath set (as `core::best_change` for
/// the Loc-RIB). `idx` is scratch.
fn change(rib: &Rib, set: &PeerSet, p: &Prefix, idx: &mut Vec<usize>) -> BestChange {
    let mut c = BestChange::single(*p, None);
    idx.clear();
    rib.best_among(p, set, idx);
    if idx.is_empty() {
        return c;
    }
    let (Some(r), Some(shard)) = (rib.lookup(p), rib.shards().get(rib.shard_of(p))) else {
        return c;
    };
    let nh = |i: usize| {
        let path = r.paths.get(i)?;
        shard.attrs(path.attrs)?.next_hop().map(nexthop_ip)
    };
    let mut it = idx.iter();
    c.next_hop = it.next().and_then(|&i| nh(i));
    if c.next_hop.is_none() {
        return c;
    }
    for &i in it {
        if let Some(a) = nh(i) {
            if c.next_hop != Some(a) && !c.ecmp.contains(&a) {
                c.ecmp.push(a);
            }
        }
    }
    c
}

impl Views {
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.list.iter().map(|v| v.name.as_str())
    }

    /// Registers `name` (replacing a view of that name) and hands its
    /// whole table to `snapshot`.
    pub(crate) fn set(
        &mut self,
        rib: &Rib,
        peers: &[Option<PeerEntry>],
        name: &str,
        neighbors: &[String],
        snapshot: &mut dyn FnMut(BestChange),
    ) {
        self.remove(name);
        let set = resolve(peers, neighbors);
        let mut last = HashMap::new();
        if !set.is_empty() {
            for r in rib.iter() {
                let c = change(rib, &set, &r.prefix, &mut self.idx);
                if c.next_hop.is_some() {
                    last.insert(c.prefix, fingerprint(&c));
                    snapshot(c);
                }
            }
        }
        self.list.push(View {
            name: name.to_string(),
            neighbors: neighbors.to_vec(),
            last,
        });
    }

    /// Stops following `name`; whether it was registered.
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        let n = self.list.len();
        self.list.retain(|v| v.name != name);
        self.list.len() != n
    }

    /// One export round: `changed` (the Loc-RIB best changes) and every
    /// shard's pending non-best path changes are looked at; each view with
    /// a change gets one batch in `out`.
    pub(crate) fn update(
        &mut self,
        rib: &Rib,
        peers: &[Option<PeerEntry>],
        changed: &[Prefix],
        out: &mut Outbox,
    ) {
        self.cand.clear();
        self.cand.extend_from_slice(changed);
        for s in rib.shards() {
            self.cand.extend_from_slice(s.pending_path_changes());
        }
        if self.cand.is_empty() {
            return;
        }
        self.cand.sort_unstable();
        self.cand.dedup();
        for v in &mut self.list {
            let set = resolve(peers, &v.neighbors);
            let mut batch = Vec::new();
            for p in &self.cand {
                let c = change(rib, &set, p, &mut self.idx);
                let now = c.next_hop.map(|_| fingerprint(&c));
                let before = v.last.get(p).copied();
                if now == before {
                    continue;
                }
                match now {
                    Some(f) => {
                        v.last.insert(*p, f);
                    }
                    None => {
                        v.last.remove(p);
                    }
                }
                batch.push(c);
            }
            if !batch.is_empty() {
                out.views.push(ViewBatch {
                    view: v.name.clone(),
                    changes: batch,
                });
            }
        }
    }
}

impl crate::RibCore {
    /// Registers the view `name` of the routes learned from the neighbours
    /// named in `neighbors` (replacing a view of that name): `snapshot`
    /// gets its whole table in this part now, and each later
    /// [`Self::propagate`] writes its changes into [`Outbox::views`] (see
    /// [`crate::views`]).
    pub fn set_view(
        &mut self,
        name: &str,
        neighbors: &[String],
        mut snapshot: impl FnMut(BestChange),
    ) {
        self.views
            .set(&self.rib, &self.peers, name, neighbors, &mut snapshot);
        self.rib.set_view_tracking(true);
    }

    /// Stops following the view `name`; returns whether it was registered.
    pub fn remove_view(&mut self, name: &str) -> bool {
        let gone = self.views.remove(name);
        self.rib.set_view_tracking(!self.views.is_empty());
        gone
    }

    /// The names of the registered views.
    pub fn view_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.views.names()
    }
}
