//! `replay::mrt_input` on real files of one collector: Route Views jinx's
//! RIB dump of 2014-05-30 22:00 (its first 20,000 prefixes) followed by
//! its update file of 23:45. Peers are matched across the files by
//! (address, AS); every message keeps the session's own next hop (the
//! second file is read with the sessions the first one numbered); the
//! merged trace holds every message once, each peer's in order, the RIB
//! part first; times never go back within a feed.

use base::Asn;
use bgp_wire::{Message, PathAttribute};
use replay::feed::FeedParams;
use replay::mrt_input::{load, InputKind, InputOptions, ParamsFn};
use replay::workload::send_ctx;
use replay::Workload;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

fn data(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the shared MRT data set is needed",
        p.display()
    );
    p
}

fn nh(i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 1, 1)) + i as u32)
}

fn params() -> ParamsFn {
    Arc::new(|i| FeedParams::ebgp(Asn(65001), nh(i)))
}

/// The IPv4 NEXT_HOP of every message of every feed that has one.
fn next_hops(w: &Workload) -> Vec<(usize, Ipv4Addr)> {
    let mut out = Vec::new();
    for (i, f) in w.feeds.iter().enumerate() {
        for k in 0..f.msgs.len() {
            let (Message::Update(u), _) = Message::parse(f.range(k, k + 1), send_ctx()).unwrap()
            else {
                panic!("not an UPDATE")
            };
            for a in u.attributes() {
                if let PathAttribute::NextHop(h) = a.unwrap().typed(send_ctx()).unwrap() {
                    out.push((i, h));
                }
            }
        }
    }
    out
}

#[test]
fn a_rib_dump_then_its_updates_merge_by_peer() {
    let (rib, upd) = (
        data("routeviews.route-views.jinx.ribs.1401487200.bz2"),
        data("routeviews.route-views.jinx.updates.1401493500.bz2"),
    );
    let opts = InputOptions {
        max_prefixes: Some(20_000),
        ignore_state_changes: true,
        ..InputOptions::default()
    };
    let p = params();
    let (w, sums) = load(&[rib.clone(), upd.clone()], &opts, &p).unwrap();
    assert_eq!(sums[0].kind, InputKind::RibDump);
    assert_eq!(sums[1].kind, InputKind::UpdateTrace);

    // Sessions: the RIB's peers 0..n in order; the updates' peers are the
    // RIB's where (address, AS) match, new ones after.
    let mut by_peer = HashMap::new();
    for (k, pr) in sums[0].peers.iter().enumerate() {
        assert_eq!(pr.session, k);
        by_peer.insert((pr.ip, pr.asn), pr.session);
    }
    let n_rib = by_peer.len();
    let mut shared = 0;
    for pr in &sums[1].peers {
        match by_peer.get(&(pr.ip, pr.asn)) {
            Some(&s) => {
                assert_eq!(pr.session, s, "{pr:?}");
                shared += 1;
            }
            None => assert!(pr.session >= n_rib, "{pr:?}"),
        }
    }
    assert!(shared > 0, "the two files of one collector share peers");
    assert_eq!(
        w.feeds.len(),
        n_rib + sums[1].peers.len() - shared,
        "one session per distinct peer"
    );

    // Each file alone, numbered from 0: the merged feeds are the sums.
    let (wr, _) = load(std::slice::from_ref(&rib), &opts, &p).unwrap();
    let (wu, su) = load(std::slice::from_ref(&upd), &opts, &p).unwrap();
    let mut want = vec![0u64; w.feeds.len()];
    for (i, f) in wr.feeds.iter().enumerate() {
        want[i] += f.messages;
    }
    for (pr, f) in sums[1].peers.iter().zip(&wu.feeds) {
        want[pr.session] += f.messages;
    }
    let got: Vec<u64> = w.feeds.iter().map(|f| f.messages).collect();
    assert_eq!(got, want);
    assert_eq!(su[0].peers.len(), sums[1].peers.len());

    // Every message carries its session's next hop, also those read with
    // session numbers other than the file's own.
    let hops = next_hops(&w);
    assert!(hops.len() as u64 > w.total_messages() / 2);
    for (i, h) in hops {
        assert_eq!(h, nh(i), "session {i}");
    }

    // The trace: every message once, per-peer order, the RIB part first.
    let rib_msgs = wr.total_messages() as usize;
    assert_eq!(w.trace.len() as u64, w.total_messages());
    let rib_count: Vec<u32> = (0..w.feeds.len())
        .map(|i| wr.feeds.get(i).map_or(0, |f| f.msgs.len() as u32))
        .collect();
    let mut next = vec![0u32; w.feeds.len()];
    for (j, s) in w.trace.iter().enumerate() {
        let i = s.peer as usize;
        assert_eq!(s.msg, next[i], "step {j}");
        next[i] += 1;
        assert_eq!(j < rib_msgs, s.msg < rib_count[i], "step {j}: {s:?}");
    }
    // Times: the RIB at 0, the updates after; never back within a feed.
    assert!(w.is_timed());
    for f in &w.feeds {
        assert!(f.times_us.windows(2).all(|t| t[0] <= t[1]));
    }
    assert_eq!(
        w.expected_prefixes, None,
        "a trace's end state is counted after"
    );
    assert!(w.final_prefixes() >= 20_000);
}

#[test]
fn the_same_rib_dump_twice_is_one_table() {
    let rib = data("bview.20020722.2337.gz");
    let opts = InputOptions {
        max_prefixes: Some(5_000),
        ..InputOptions::default()
    };
    let p = params();
    let (one, _) = load(std::slice::from_ref(&rib), &opts, &p).unwrap();
    let (two, sums) = load(&[rib.clone(), rib], &opts, &p).unwrap();
    assert_eq!(one.expected_prefixes, Some(5_000));
    assert_eq!(
        two.expected_prefixes,
        Some(5_000),
        "the union of equal tables"
    );
    assert_eq!(two.feeds.len(), one.feeds.len());
    assert_eq!(two.total_messages(), 2 * one.total_messages());
    assert!(two.trace.is_empty(), "RIB dumps have no order of their own");
    assert!(!two.is_timed());
    for (a, b) in sums[0].peers.iter().zip(&sums[1].peers) {
        assert_eq!(a.session, b.session);
    }
}
