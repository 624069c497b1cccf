//! Multipath in the RIB core: the best-route feed carries the multipath
//! set's other next hops (`BestChange::ecmp`), follows changes of non-best
//! paths, and a new `multipath` setting recomputes every set.

mod common;

use std::net::IpAddr;
use std::time::Duration;

use base::Instant;
use bgp_core::{BestChange, Part};
use bgp_rib::{BestPathConfig, MultipathConfig};
use common::{addr, prefix, Harness};

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn mp(n: u16, relax: bool) -> BestPathConfig {
    BestPathConfig {
        multipath: MultipathConfig {
            ebgp: n,
            ibgp: n,
            relax_as_path: relax,
        },
        ..BestPathConfig::default()
    }
}

/// The feed's changes since the last call.
fn feed(h: &mut Harness, ms: u64) -> Vec<BestChange> {
    h.core.propagate(at(ms), &mut h.out);
    let b = std::mem::take(&mut h.out.best);
    h.drain(&[]);
    b
}

fn ecmp_of(changes: &[BestChange]) -> Option<(Option<IpAddr>, Vec<IpAddr>)> {
    let p = prefix("198.19.113.0/24");
    changes
        .iter()
        .rfind(|c| c.prefix == p)
        .map(|c| (c.next_hop, c.ecmp.clone()))
}

#[test]
fn feed_follows_the_multipath_set() {
    let mut h = Harness::new(Part::WHOLE);
    h.core.set_bestpath(mp(4, false));
    for n in 1..=3 {
        let asn = if n == 3 { "as=65020" } else { "as=65010" };
        h.add_peer(n, &[asn]);
        h.up(at(0), n, &[]);
    }
    feed(&mut h, 0);
    let p = prefix("198.19.113.0/24");
    h.announce(at(1), 1, &[p], &[]);
    assert_eq!(ecmp_of(&feed(&mut h, 1)), Some((Some(addr(1)), vec![])));
    // An equal path from the same neighbouring AS: the best stays, the
    // set grows, and the feed says so.
    h.announce(at(2), 2, &[p], &[]);
    assert_eq!(
        ecmp_of(&feed(&mut h, 2)),
        Some((Some(addr(1)), vec![addr(2)]))
    );
    // Another neighbouring AS with an equal path length: not without
    // relax (the feed may repeat the set; the FIB ignores a repeat).
    h.announce(at(3), 3, &[p], &[]);
    let again = ecmp_of(&feed(&mut h, 3));
    assert!(
        again.is_none() || again == Some((Some(addr(1)), vec![addr(2)])),
        "{again:?}"
    );
    // Reload with relax_as_path: every set is recomputed.
    h.core.set_bestpath(mp(4, true));
    assert_eq!(
        ecmp_of(&feed(&mut h, 4)),
        Some((Some(addr(1)), vec![addr(2), addr(3)]))
    );
    // A member withdrawn.
    h.withdraw(at(5), 2, &[p]);
    assert_eq!(
        ecmp_of(&feed(&mut h, 5)),
        Some((Some(addr(1)), vec![addr(3)]))
    );
    // Multipath off: the best alone.
    h.core.set_bestpath(BestPathConfig::default());
    assert_eq!(ecmp_of(&feed(&mut h, 6)), Some((Some(addr(1)), vec![])));
    // Off, a non-best change is not sent at all.
    h.announce(at(7), 2, &[p], &[]);
    assert_eq!(ecmp_of(&feed(&mut h, 7)), None);
}

#[test]
fn only_the_best_is_advertised() {
    let mut h = Harness::new(Part::WHOLE);
    h.core.set_bestpath(mp(4, false));
    for n in 1..=3 {
        let asn = if n == 3 { "as=65030" } else { "as=65010" };
        h.add_peer(n, &[asn]);
        h.up(at(0), n, &[]);
    }
    feed(&mut h, 0);
    let p = prefix("198.19.113.0/24");
    h.announce(at(1), 1, &[p], &[]);
    h.announce(at(1), 2, &[p], &[]);
    h.core.propagate(at(1), &mut h.out);
    let s = h.drain(&[]);
    // Peer 3 hears one UPDATE for the prefix, with the best's AS path.
    let to3: Vec<&str> = s.lines().filter(|l| l.contains("-> p3")).collect();
    assert_eq!(
        to3.iter().filter(|l| l.contains("198.19.113.0/24")).count(),
        1,
        "{s}"
    );
}
