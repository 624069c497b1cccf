//! Views in the RIB core (`bgp_core::views`): three peers announce one
//! prefix with different next hops; views {p1}, {p2} and {p1,p3} each get
//! their own next hop, a withdrawal or a session going down moves them,
//! and the main best-route feed is what it is without views (a second
//! core fed the same inputs, with no view, is the reference).

mod common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use base::{Instant, Prefix};
use bgp_core::{BestChange, Part};
use bgp_rib::{BestPathConfig, MultipathConfig};
use common::{addr, prefix, Harness};

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// What each view's follower holds: view -> prefix -> next hops.
type Fibs = BTreeMap<String, BTreeMap<Prefix, Vec<IpAddr>>>;

fn apply(fibs: &mut Fibs, view: &str, c: BestChange) {
    let f = fibs.entry(view.to_string()).or_default();
    if c.next_hop.is_some() {
        f.insert(c.prefix, c.next_hops().collect());
    } else {
        f.remove(&c.prefix);
    }
}

/// Two cores fed the same: `with` has views, `without` has none.
struct Pair {
    with: Harness,
    without: Harness,
    fibs: Fibs,
    /// Batches per view in the last round.
    last: BTreeMap<String, usize>,
    /// The main feed's changes in the last round.
    main: Vec<BestChange>,
}

impl Pair {
    fn new(peers: u16, cfg: BestPathConfig) -> Pair {
        let mut p = Pair {
            with: Harness::new(Part::WHOLE),
            without: Harness::new(Part::WHOLE),
            fibs: Fibs::new(),
            last: BTreeMap::new(),
            main: Vec::new(),
        };
        for h in [&mut p.with, &mut p.without] {
            h.core.set_bestpath(cfg);
            for n in 1..=peers {
                h.add_peer(n, &[]);
                h.up(at(0), n, &[]);
            }
        }
        p.round(0);
        p
    }

    fn view(&mut self, name: &str, neighbors: &[&str]) {
        let names: Vec<String> = neighbors.iter().map(|s| s.to_string()).collect();
        let mut snap = Vec::new();
        self.with.core.set_view(name, &names, |c| snap.push(c));
        self.fibs.insert(name.to_string(), BTreeMap::new());
        for c in snap {
            apply(&mut self.fibs, name, c);
        }
    }

    fn announce(&mut self, ms: u64, n: u16, p: Prefix, words: &[&str]) {
        self.with.announce(at(ms), n, &[p], words);
        self.without.announce(at(ms), n, &[p], words);
    }

    fn withdraw(&mut self, ms: u64, n: u16, p: Prefix) {
        self.with.withdraw(at(ms), n, &[p]);
        self.without.withdraw(at(ms), n, &[p]);
    }

    fn down(&mut self, ms: u64, n: u16) {
        self.with.down(at(ms), n, false);
        self.without.down(at(ms), n, false);
    }

    /// One export round on both; the main feed and the sessions' output
    /// must be the same with and without views.
    fn round(&mut self, ms: u64) {
        self.with.core.propagate(at(ms), &mut self.with.out);
        self.without.core.propagate(at(ms), &mut self.without.out);
        assert!(self.without.out.views.is_empty());
        let batches = std::mem::take(&mut self.with.out.views);
        self.last.clear();
        for b in batches {
            *self.last.entry(b.view.clone()).or_default() += 1;
            for c in b.changes {
                apply(&mut self.fibs, &b.view, c);
            }
        }
        assert_eq!(self.with.out.best, self.without.out.best, "main feed");
        self.main = self.with.out.best.clone();
        assert_eq!(self.with.drain(&[]), self.without.drain(&[]), "sessions");
    }

    fn nh(&self, view: &str, p: Prefix) -> Option<Vec<IpAddr>> {
        self.fibs.get(view)?.get(&p).cloned()
    }

    /// The view as a fresh registration would see it now.
    fn fresh(&mut self, neighbors: &[&str]) -> BTreeMap<Prefix, Vec<IpAddr>> {
        let names: Vec<String> = neighbors.iter().map(|s| s.to_string()).collect();
        let mut snap = Vec::new();
        self.with.core.set_view("fresh", &names, |c| snap.push(c));
        self.with.core.remove_view("fresh");
        snap.into_iter()
            .map(|c| (c.prefix, c.next_hops().collect()))
            .collect()
    }
}

#[test]
fn views_follow_their_own_neighbours() {
    let p = prefix("198.18.7.0/24");
    let q = prefix("198.18.8.0/24");
    let mut t = Pair::new(3, BestPathConfig::default());
    // p2 has the shortest AS path: the Loc-RIB best. p1 beats p3 on
    // length too.
    t.announce(1, 1, p, &["path=65001,64999"]);
    t.announce(1, 2, p, &[]);
    t.announce(1, 3, p, &["path=65003,64998,64999"]);
    t.round(1);
    // Registered after the routes: the snapshot.
    t.view("a", &["p1"]);
    t.view("b", &["p2"]);
    t.view("ac", &["p1", "p3"]);
    t.view("nobody", &["p9"]);
    assert_eq!(t.nh("a", p), Some(vec![addr(1)]));
    assert_eq!(t.nh("b", p), Some(vec![addr(2)]));
    assert_eq!(t.nh("ac", p), Some(vec![addr(1)]));
    assert_eq!(t.nh("nobody", p), None);
    let main = t.with.core.rib.lookup(&p).and_then(|r| r.best());
    assert_eq!(main.map(|(e, _)| e.peer.0), Some(2));

    // A prefix only p3 has: in ac alone, in the same round's batch.
    t.announce(2, 3, q, &[]);
    t.round(2);
    assert_eq!(t.nh("ac", q), Some(vec![addr(3)]));
    assert_eq!(t.nh("a", q), None);
    assert_eq!(t.last.get("ac"), Some(&1));
    assert_eq!(t.last.get("b"), None, "nothing for b");

    // p1 withdraws: a loses the route, ac moves to p3, b hears nothing;
    // the Loc-RIB best (p2) did not change.
    t.withdraw(3, 1, p);
    t.round(3);
    assert_eq!(t.nh("a", p), None);
    assert_eq!(t.nh("ac", p), Some(vec![addr(3)]));
    assert_eq!(t.nh("b", p), Some(vec![addr(2)]));
    assert_eq!(t.last.get("b"), None);
    assert!(t.main.is_empty(), "{:?}", t.main);

    // A new attribute set with the same next hop: nothing for the views.
    t.announce(4, 3, p, &["path=65003,64998,64997"]);
    t.round(4);
    assert!(t.last.is_empty(), "{:?}", t.last);

    // p3's session goes down: its paths leave ac as they leave the
    // Loc-RIB; p1 is back.
    t.announce(5, 1, p, &["path=65001,64999"]);
    t.round(5);
    assert_eq!(t.nh("ac", p), Some(vec![addr(1)]));
    t.down(6, 3);
    t.round(6);
    assert_eq!(t.nh("ac", p), Some(vec![addr(1)]));
    assert_eq!(t.nh("ac", q), None);
    // p2 down: the Loc-RIB best changes (the main feed says so, the
    // same with and without views), b loses it.
    t.down(7, 2);
    t.round(7);
    assert_eq!(t.main.len(), 1);
    assert_eq!(t.main[0].next_hop, Some(addr(1)));
    assert_eq!(t.nh("b", p), None);
    assert_eq!(t.nh("a", p), Some(vec![addr(1)]));

    // Every view's follower holds what a fresh snapshot would give.
    for (name, n) in [("a", &["p1"][..]), ("b", &["p2"]), ("ac", &["p1", "p3"])] {
        let fresh = t.fresh(n);
        assert_eq!(t.fibs.get(name), Some(&fresh), "{name}");
    }

    // Removed: no more batches. Re-registered with other neighbours: a
    // new snapshot.
    assert!(t.with.core.remove_view("a"));
    assert!(!t.with.core.remove_view("a"));
    t.withdraw(8, 1, p);
    t.round(8);
    assert_eq!(t.last.get("a"), None);
    assert_eq!(t.last.get("ac"), Some(&1));
    let names: Vec<&str> = t.with.core.view_names().collect();
    assert_eq!(names, ["b", "ac", "nobody"]);
}

/// Multipath on: a view's change carries its own multipath set, and a
/// change of a non-best path in the view (not the Loc-RIB best) reaches it.
#[test]
fn views_carry_their_multipath_set() {
    let cfg = BestPathConfig {
        multipath: MultipathConfig {
            ebgp: 4,
            ibgp: 4,
            relax_as_path: true,
        },
        ..BestPathConfig::default()
    };
    let p = prefix("198.18.9.0/24");
    let mut t = Pair::new(3, cfg);
    t.view("bc", &["p2", "p3"]);
    t.announce(1, 1, p, &[]);
    t.announce(1, 2, p, &["path=65002,64999"]);
    t.round(1);
    assert_eq!(t.nh("bc", p), Some(vec![addr(2)]));
    // p3 equal to p2 (not to the Loc-RIB best, p1): bc's set grows.
    t.announce(2, 3, p, &["path=65003,64999"]);
    t.round(2);
    let mut got = t.nh("bc", p).expect("route");
    got.sort();
    assert_eq!(got, vec![addr(2), addr(3)]);
    t.withdraw(3, 2, p);
    t.round(3);
    assert_eq!(t.nh("bc", p), Some(vec![addr(3)]));
}

/// Without a view, changes of non-best paths are not collected (nothing
/// is computed for views); with one they are, until it is removed.
#[test]
fn no_view_no_tracking() {
    let p = prefix("198.18.10.0/24");
    let mut h = Harness::new(Part::WHOLE);
    for n in 1..=2 {
        h.add_peer(n, &[]);
        h.up(at(0), n, &[]);
    }
    h.announce(at(1), 1, &[p], &[]);
    h.announce(at(1), 2, &[p], &["path=65002,64999"]);
    h.core.propagate(at(1), &mut h.out);
    h.drain(&[]);
    // A non-best path changes: not collected without a view.
    h.announce(at(2), 2, &[p], &["path=65002,64998"]);
    assert!(!h.core.rib.path_changes_pending());
    h.core.propagate(at(2), &mut h.out);
    h.drain(&[]);
    h.core.set_view("v", &["p2".to_string()], |_| {});
    h.announce(at(3), 2, &[p], &["path=65002,64997"]);
    assert!(h.core.rib.path_changes_pending());
    h.core.propagate(at(3), &mut h.out);
    assert!(h.out.views.is_empty(), "same next hop: nothing to say");
    h.drain(&[]);
    assert!(h.core.remove_view("v"));
    h.announce(at(4), 2, &[p], &["path=65002,64996"]);
    assert!(!h.core.rib.path_changes_pending());
}
