use super::*;
use crate::table::{FibTables, Hop};
use lpm::publish::Absorb;
use std::net::Ipv4Addr;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}
fn pfx(s: &str) -> Prefix {
    s.parse().expect("prefix")
}
fn ch(p: &str, nh: Option<&str>) -> Change {
    Change {
        prefix: pfx(p),
        next_hop: nh.map(ip),
        ecmp: Vec::new(),
    }
}
fn ports() -> Vec<PortSpec> {
    vec![
        PortSpec {
            name: "r0".into(),
            addrs: vec![(ip("10.1.0.1"), 24)],
        },
        PortSpec {
            name: "r1".into(),
            addrs: vec![(ip("10.2.0.1"), 24), (ip("2001:db8:2::1"), 64)],
        },
        PortSpec {
            name: "r2".into(),
            addrs: vec![(ip("10.3.0.1"), 24)],
        },
    ]
}
fn apply_all(t: &mut FibTables, f: &mut Fib) -> Vec<FibDelta> {
    let d = f.take_deltas();
    for x in &d {
        t.absorb(x).expect("absorb");
    }
    d
}
fn to(t: &FibTables, a: &str) -> Option<(u16, Option<IpAddr>)> {
    let IpAddr::V4(a) = ip(a) else { return None };
    let nh = lpm::Lpm::<u32>::lookup(t, u32::from(a))?;
    let adj = t.adjacency(nh).expect("installed route has its adjacency");
    Some((adj.port, adj.gw))
}

#[test]
fn connected_and_on_link_routes_share_refcounted_next_hops() {
    let mut f = Fib::new(&ports(), false);
    let mut t = FibTables::new();
    let d = apply_all(&mut t, &mut f);
    assert_eq!(
        d.len(),
        7,
        "3 port adjacencies + 4 connected prefixes: {d:?}"
    );
    assert_eq!(to(&t, "10.2.0.77"), Some((1, None)));
    f.apply(&[
        ch("203.0.113.0/24", Some("10.2.0.2")),
        ch("198.51.100.0/24", Some("10.2.0.2")),
    ]);
    let d = apply_all(&mut t, &mut f);
    assert_eq!(
        d.iter()
            .filter(|d| matches!(d, FibDelta::SetAdj(..)))
            .count(),
        1
    );
    assert_eq!(to(&t, "203.0.113.5"), Some((1, Some(ip("10.2.0.2")))));
    assert_eq!(to(&t, "198.51.100.5"), Some((1, Some(ip("10.2.0.2")))));
    let before = f.stats().next_hops;
    // Move one route to B2: a new adjacency; the old one stays (still used).
    f.apply(&[ch("203.0.113.0/24", Some("10.3.0.2"))]);
    let d = apply_all(&mut t, &mut f);
    assert!(
        !d.iter().any(|d| matches!(d, FibDelta::ClearAdj(_))),
        "{d:?}"
    );
    assert_eq!(to(&t, "203.0.113.5"), Some((2, Some(ip("10.3.0.2")))));
    assert_eq!(f.stats().next_hops, before + 1);
    // Last user leaves: the adjacency is freed after the route delta.
    f.apply(&[ch("198.51.100.0/24", None)]);
    let d = apply_all(&mut t, &mut f);
    let [FibDelta::Remove4(_), FibDelta::ClearAdj(freed)] = d.as_slice() else {
        panic!("route delta first, then the adjacency: {d:?}")
    };
    let freed = *freed;
    assert_eq!(to(&t, "198.51.100.5"), None);
    assert_eq!(f.stats().next_hops, before);
    // The freed id is reused.
    f.apply(&[ch("192.0.2.0/24", Some("10.1.0.9"))]);
    let d = apply_all(&mut t, &mut f);
    let FibDelta::SetAdj(nh, _) = d[0] else {
        panic!("{d:?}")
    };
    assert_eq!(nh, freed, "freed next-hop ids are reused");
    assert_eq!(f.stats().installed, 2);
}

#[test]
fn connected_prefix_wins_and_unknown_next_hop_waits() {
    let mut f = Fib::new(&ports(), false);
    let mut t = FibTables::new();
    apply_all(&mut t, &mut f);
    f.apply(&[ch("10.2.0.0/24", Some("10.1.0.2"))]);
    assert!(f.take_deltas().is_empty());
    assert_eq!(f.stats().shadowed, 1);
    // Next hop nowhere: kept, not installed; resolves when a covering
    // route appears.
    f.apply(&[ch("203.0.113.0/24", Some("172.16.0.1"))]);
    assert!(f.take_deltas().is_empty());
    assert_eq!(f.resolved(pfx("203.0.113.0/24")), None);
    f.apply(&[ch("172.16.0.0/16", Some("10.3.0.2"))]);
    apply_all(&mut t, &mut f);
    assert_eq!(to(&t, "203.0.113.1"), Some((2, Some(ip("10.3.0.2")))));
    // A next hop that is our own address does not resolve.
    f.apply(&[ch("192.0.2.0/24", Some("10.1.0.1"))]);
    assert!(f.take_deltas().is_empty());
}

#[test]
fn recursive_routes_follow_their_covering_route() {
    let mut f = Fib::new(&ports(), false);
    let mut t = FibTables::new();
    apply_all(&mut t, &mut f);
    f.apply(&[
        ch("172.16.0.0/16", Some("10.2.0.2")),
        ch("203.0.113.0/24", Some("172.16.5.5")),
        // Resolved through a recursive route itself (two levels).
        ch("198.51.100.0/24", Some("203.0.113.9")),
    ]);
    apply_all(&mut t, &mut f);
    assert_eq!(to(&t, "203.0.113.1"), Some((1, Some(ip("10.2.0.2")))));
    assert_eq!(to(&t, "198.51.100.1"), Some((1, Some(ip("10.2.0.2")))));
    // A more specific route for the next hop takes over.
    f.apply(&[ch("172.16.5.0/24", Some("10.3.0.2"))]);
    apply_all(&mut t, &mut f);
    assert_eq!(to(&t, "203.0.113.1"), Some((2, Some(ip("10.3.0.2")))));
    assert_eq!(to(&t, "198.51.100.1"), Some((2, Some(ip("10.3.0.2")))));
    // Both covering routes gone: the recursive routes leave the table.
    f.apply(&[ch("172.16.5.0/24", None), ch("172.16.0.0/16", None)]);
    apply_all(&mut t, &mut f);
    assert_eq!(to(&t, "203.0.113.1"), None);
    assert_eq!(to(&t, "198.51.100.1"), None);
    assert_eq!(f.stats().installed, 0);
    assert_eq!(
        f.stats().next_hops,
        3,
        "only the connected adjacencies are left"
    );
}

#[test]
fn learned_mac_reaches_adjacencies_and_neighbours() {
    let mut f = Fib::new(&ports(), false);
    let mut t = FibTables::new();
    f.apply(&[ch("203.0.113.0/24", Some("10.2.0.2"))]);
    apply_all(&mut t, &mut f);
    assert_eq!(f.unresolved_gateways(), vec![(1, ip("10.2.0.2"))]);
    let dst = u32::from(Ipv4Addr::new(203, 0, 113, 1));
    assert_eq!(
        t.route4(dst),
        Some(Hop::Resolve {
            port: 1,
            target: ip("10.2.0.2")
        })
    );
    f.learn(ip("10.2.0.2"), [2, 0, 0, 0, 0xb, 0]);
    apply_all(&mut t, &mut f);
    assert_eq!(
        t.route4(dst),
        Some(Hop::Ready {
            port: 1,
            mac: [2, 0, 0, 0, 0xb, 0]
        })
    );
    assert_eq!(
        t.route4(u32::from(Ipv4Addr::new(10, 2, 0, 2))),
        Some(Hop::Ready {
            port: 1,
            mac: [2, 0, 0, 0, 0xb, 0]
        }),
        "connected destination uses the neighbour table"
    );
    f.learn(ip("10.2.0.2"), [2, 0, 0, 0, 0xb, 0]);
    assert!(
        f.take_deltas().is_empty(),
        "same MAC again: nothing to publish"
    );
    // An adjacency created later picks the known MAC up at once.
    f.apply(&[ch("198.51.100.0/24", Some("10.2.0.2"))]);
    assert!(f.unresolved_gateways().is_empty());
}

#[test]
fn export_list_reports_resolved_changes() {
    let mut f = Fib::new(&ports(), true);
    f.apply(&[
        ch("203.0.113.0/24", Some("10.2.0.2")),
        ch("198.51.100.0/24", Some("192.0.2.1")),
    ]);
    f.apply(&[ch("203.0.113.0/24", None)]);
    assert_eq!(
        f.take_exported(),
        vec![
            (pfx("203.0.113.0/24"), vec![(1, ip("10.2.0.2"))]),
            (pfx("203.0.113.0/24"), vec![])
        ]
    );
}

/// Random changes over a small prefix space: after every batch, the
/// tables built from the deltas forward exactly like a naive model
/// (longest installed route; routes resolved on-link or recursively).
#[test]
fn deltas_match_a_naive_model() {
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut f = Fib::new(&ports(), false);
    let mut t = FibTables::new();
    apply_all(&mut t, &mut f);
    let mut model: HashMap<Prefix, IpAddr> = HashMap::new();
    let gws = [
        "10.1.0.5",
        "10.2.0.2",
        "10.3.0.2",
        "10.3.0.3",
        "172.16.1.1",
        "9.9.9.9",
    ];
    for _round in 0..300 {
        let mut batch = Vec::new();
        for _ in 0..(next() % 8 + 1) {
            let len = [8u8, 12, 16, 20, 24][(next() % 5) as usize];
            // 0x9... or 0xb...: clear of the connected and gateway space.
            let a = Ipv4Addr::from(
                (next() as u32 & 0x0fff_ffff) | 0x9000_0000 | ((next() % 2) as u32) << 29,
            );
            let p = Prefix::new(IpAddr::V4(a), len).expect("p").masked();
            let nh = if next() % 4 == 0 {
                None
            } else {
                Some(ip(gws[(next() % gws.len() as u64) as usize]))
            };
            batch.push(Change {
                prefix: p,
                next_hop: nh,
                ecmp: Vec::new(),
            });
            match nh {
                Some(g) => model.insert(p, g),
                None => model.remove(&p),
            };
        }
        // Give 172.16.1.1 a covering route sometimes.
        if next() % 5 == 0 {
            let c = ch(
                "172.16.0.0/16",
                if next() % 2 == 0 {
                    Some("10.2.0.2")
                } else {
                    None
                },
            );
            match c.next_hop {
                Some(g) => model.insert(c.prefix, g),
                None => model.remove(&c.prefix),
            };
            batch.push(c);
        }
        f.apply(&batch);
        apply_all(&mut t, &mut f);
        for _ in 0..50 {
            let a = (next() as u32 & 0x3fff_ffff) | 0x9000_0000;
            let want = naive(&model, a);
            assert_eq!(
                to(&t, &Ipv4Addr::from(a).to_string()),
                want,
                "addr {}",
                Ipv4Addr::from(a)
            );
        }
    }
}

fn naive(model: &HashMap<Prefix, IpAddr>, a: u32) -> Option<(u16, Option<IpAddr>)> {
    // Routes whose next hop resolves nowhere are not installed, so the
    // longest *resolvable* route wins (as in any router's FIB).
    fn covering(model: &HashMap<Prefix, IpAddr>, a: u32, skip: Option<Prefix>) -> Vec<Prefix> {
        let mut v: Vec<Prefix> = model
            .keys()
            .filter(|p| Some(**p) != skip)
            .filter(|p| matches!(p, Prefix::V4(p) if p.contains_addr(a)))
            .copied()
            .collect();
        v.sort_by_key(|p| core::cmp::Reverse(p.len()));
        v
    }
    fn resolve(model: &HashMap<Prefix, IpAddr>, p: Prefix, depth: u32) -> Option<(u16, IpAddr)> {
        let gw = *model.get(&p)?;
        let IpAddr::V4(g) = gw else { return None };
        let port = match u32::from(g) >> 8 {
            0x0a0100 => Some(0),
            0x0a0200 => Some(1),
            0x0a0300 => Some(2),
            _ => None,
        };
        if let Some(port) = port {
            return Some((port, gw));
        }
        if depth == 0 {
            return None;
        }
        covering(model, u32::from(g), Some(p))
            .into_iter()
            .find_map(|c| resolve(model, c, depth - 1))
    }
    // Connected prefixes are not in 0x9.. / 0xb.. space, so only routes.
    covering(model, a, None)
        .into_iter()
        .find_map(|p| resolve(model, p, 3))
        .map(|(port, gw)| (port, Some(gw)))
}

/// The netns proof's case (tesserad issue 4): 203.0.113.0/24 via a
/// gateway inside port r1's connected prefix is resolved on-link and is
/// what a worker reads after one left-right publication; via an address on
/// no port (BIRD's own session address on a non-dataplane link, what BIRD
/// sends unless told otherwise) it is kept but neither installed nor
/// published, and the stats say so.
#[test]
fn gateway_on_connected_prefix_is_installed_and_published() {
    use lpm::publish::left_right;
    let mut f = Fib::new(&ports(), false);
    let mut w = left_right(FibTables::new());
    let mut r = w.reader();
    w.publish(&f.take_deltas()).expect("connected");
    let dst = u32::from(Ipv4Addr::new(203, 0, 113, 1));
    assert_eq!(r.read().route4(dst), None);

    f.apply(&[ch("203.0.113.0/24", Some("10.9.0.2"))]);
    let s = f.stats();
    assert_eq!((s.routes, s.installed, s.unresolved), (1, 0, 1), "{s:?}");
    assert!(f.take_deltas().is_empty(), "nothing to publish");
    assert_eq!(f.resolved(pfx("203.0.113.0/24")), None);

    f.apply(&[ch("203.0.113.0/24", Some("10.2.0.2"))]);
    let s = f.stats();
    assert_eq!((s.routes, s.installed, s.unresolved), (1, 1, 0), "{s:?}");
    assert_eq!(f.resolved(pfx("203.0.113.0/24")), Some((1, ip("10.2.0.2"))));
    w.publish(&f.take_deltas()).expect("route");
    assert_eq!(
        r.read().route4(dst),
        Some(Hop::Resolve {
            port: 1,
            target: ip("10.2.0.2")
        }),
        "the worker's view: out of r1, ARP for the gateway"
    );
    f.learn(ip("10.2.0.2"), [2; 6]);
    w.publish(&f.take_deltas()).expect("neighbour");
    assert_eq!(
        r.read().route4(dst),
        Some(Hop::Ready {
            port: 1,
            mac: [2; 6]
        })
    );
    // Moving to B2 (r2) and withdrawing are published the same way.
    f.apply(&[ch("203.0.113.0/24", Some("10.3.0.2"))]);
    w.publish(&f.take_deltas()).expect("move");
    assert!(matches!(
        r.read().route4(dst),
        Some(Hop::Resolve { port: 2, .. })
    ));
    f.apply(&[ch("203.0.113.0/24", None)]);
    w.publish(&f.take_deltas()).expect("withdraw");
    assert_eq!(r.read().route4(dst), None);
    assert_eq!(f.stats().routes, 0);
}

fn chm(p: &str, nh: &str, more: &[&str]) -> Change {
    Change {
        prefix: pfx(p),
        next_hop: Some(ip(nh)),
        ecmp: more.iter().map(|a| ip(a)).collect(),
    }
}

/// The (port, gateway) each of `flows` flow hashes takes to `a`.
fn spread(t: &FibTables, a: &str, flows: u32) -> HashMap<(u16, Option<IpAddr>), u32> {
    let IpAddr::V4(a) = ip(a) else {
        return HashMap::new();
    };
    let mut m = HashMap::new();
    for h in 0..flows {
        let nh = lpm::Lpm::<u32>::lookup(t, u32::from(a)).expect("route");
        let adj = t
            .adjacency(t.pick(nh, h.wrapping_mul(0x9e37_79b9)))
            .expect("member");
        *m.entry((adj.port, adj.gw)).or_insert(0) += 1;
    }
    m
}

#[test]
fn multipath_route_is_a_group_flows_spread_and_stick() {
    let mut f = Fib::new(&ports(), true);
    let mut t = FibTables::new();
    apply_all(&mut t, &mut f);
    let _ = f.take_exported();
    f.apply(&[chm("203.0.113.0/24", "10.2.0.2", &["10.3.0.2", "10.2.0.2"])]);
    let d = apply_all(&mut t, &mut f);
    assert!(
        d.iter().any(|d| matches!(d, FibDelta::SetGroup(..))),
        "{d:?}"
    );
    assert_eq!(f.groups(), 1);
    let s = spread(&t, "203.0.113.9", 1000);
    assert_eq!(s.len(), 2, "both members used: {s:?}");
    assert!(s.values().all(|&n| n > 300), "balanced: {s:?}");
    // One flow, one member, every time.
    let nh = lpm::Lpm::<u32>::lookup(&t, 0xcb00_7109).expect("route");
    let first = t.pick(nh, 42);
    assert!((0..100).all(|_| t.pick(nh, 42) == first));
    assert_eq!(
        f.take_exported(),
        vec![(
            pfx("203.0.113.0/24"),
            vec![(1, ip("10.2.0.2")), (2, ip("10.3.0.2"))]
        )]
    );
    // A second prefix with the same members shares the group.
    f.apply(&[chm("198.51.100.0/24", "10.3.0.2", &["10.2.0.2"])]);
    apply_all(&mut t, &mut f);
    assert_eq!(f.groups(), 1);
    // Back to one path: a plain adjacency; the group stays for the other.
    f.apply(&[ch("203.0.113.0/24", Some("10.3.0.2"))]);
    apply_all(&mut t, &mut f);
    assert_eq!(spread(&t, "203.0.113.9", 100).len(), 1);
    assert_eq!(to(&t, "203.0.113.9"), Some((2, Some(ip("10.3.0.2")))));
    assert_eq!(f.groups(), 1);
    // The last user gone: the group is cleared after the route delta,
    // then no member adjacency leaks.
    f.apply(&[ch("198.51.100.0/24", None)]);
    let d = apply_all(&mut t, &mut f);
    let rm = d.iter().position(|d| matches!(d, FibDelta::Remove4(_)));
    let cg = d.iter().position(|d| matches!(d, FibDelta::ClearGroup(_)));
    assert!(rm.is_some() && rm < cg, "{d:?}");
    assert_eq!(f.groups(), 0);
    f.apply(&[ch("203.0.113.0/24", None)]);
    apply_all(&mut t, &mut f);
    assert_eq!(t.adjacencies(), 3, "only the connected adjacencies remain");
}

#[test]
fn multipath_member_that_does_not_resolve_is_left_out() {
    let mut f = Fib::new(&ports(), false);
    let mut t = FibTables::new();
    apply_all(&mut t, &mut f);
    // 172.16.0.1 is on no port and under no route.
    f.apply(&[chm("203.0.113.0/24", "172.16.0.1", &["10.3.0.2"])]);
    apply_all(&mut t, &mut f);
    assert_eq!(f.groups(), 0);
    assert_eq!(to(&t, "203.0.113.9"), Some((2, Some(ip("10.3.0.2")))));
    // Once a route covers it, the member joins (recursive re-resolution).
    f.apply(&[ch("172.16.0.0/16", Some("10.2.0.2"))]);
    apply_all(&mut t, &mut f);
    assert_eq!(f.groups(), 1);
    assert_eq!(spread(&t, "203.0.113.9", 200).len(), 2);
}

/// `routes()` gives back every best route known, resolved or not, with
/// its multipath next hops, and nothing for withdrawn or connected
/// prefixes: applied to a fresh FIB it installs the same routes.
#[test]
fn routes_rebuild_the_same_fib() {
    let mut f = Fib::new(&ports(), false);
    let mut multi = ch("10.9.0.0/16", Some("10.1.0.7"));
    multi.ecmp = vec![ip("10.2.0.8")];
    f.apply(&[
        ch("10.8.0.0/16", Some("10.1.0.5")),
        ch("10.7.0.0/16", Some("192.0.2.99")),
        ch("10.6.0.0/16", Some("10.3.0.5")),
        ch("10.1.0.0/24", Some("10.3.0.5")),
        ch("2001:db8:9::/48", Some("2001:db8:2::5")),
        multi.clone(),
    ]);
    f.apply(&[ch("10.6.0.0/16", None)]);
    let mut got = f.routes();
    got.sort_by_key(|c| c.prefix.to_string());
    let mut want = vec![
        ch("10.8.0.0/16", Some("10.1.0.5")),
        ch("10.7.0.0/16", Some("192.0.2.99")),
        ch("2001:db8:9::/48", Some("2001:db8:2::5")),
        multi,
    ];
    want.sort_by_key(|c| c.prefix.to_string());
    assert_eq!(got, want);
    let mut g = Fib::new(&ports(), false);
    g.apply(&got);
    assert_eq!(g.stats().routes, f.stats().routes);
    assert_eq!(g.stats().installed, f.stats().installed);
    assert_eq!(
        g.resolved_all(pfx("10.9.0.0/16")),
        f.resolved_all(pfx("10.9.0.0/16"))
    );
}
