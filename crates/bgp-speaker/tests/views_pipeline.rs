//! Views (`bgp_speaker::view_feed`) in every pipeline mode: three fake
//! peers announce the same table with their own next hops; views of one,
//! two and every peer are followed through their channels while routes
//! are announced, withdrawn and a session goes down, and each follower
//! must end with:
//! * what a fresh registration's snapshot gives (incremental changes and
//!   snapshots agree);
//! * for the view of every peer, the Loc-RIB's best next hops;
//! * the same table in every mode (the differential check of
//!   `pipeline_diff.rs`).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::mpsc::{sync_channel, Receiver};

use base::{Prefix, Prefix4};
use bgp_speaker::msg::DecodedUpdate;
use bgp_speaker::pipeline::{Locks, Mode};

use bgp_speaker::view_feed::{BestChange, ViewRegistry, ViewSpec};
use bgp_wire::Nlri;
use testkit::inproc::{shared_table, FakePeer, InProc};

const MODES: [Mode; 8] = [
    Mode::Sequential,
    Mode::Sharded(2),
    Mode::Sharded(4),
    Mode::PerPeer(Locks::Stripes),
    Mode::PerPeer(Locks::Fine),
    Mode::WorkerPool(2, Locks::Stripes),
    Mode::WorkerPool(4, Locks::Stripes),
    Mode::WorkerPool(2, Locks::Fine),
];

const PREFIXES: usize = 600;

type Table = BTreeMap<Prefix, Vec<IpAddr>>;

struct Follower {
    rx: Receiver<Vec<BestChange>>,
    table: Table,
}

impl Follower {
    /// Applies every batch received so far.
    fn drain(&mut self) {
        while let Ok(b) = self.rx.try_recv() {
            for c in b {
                if c.next_hop.is_some() {
                    self.table.insert(c.prefix, c.next_hops().collect());
                } else {
                    self.table.remove(&c.prefix);
                }
            }
        }
    }
}

fn spec(name: &str, neighbors: &[&str]) -> (ViewSpec, Follower) {
    let (tx, rx) = sync_channel(1 << 16);
    (
        ViewSpec {
            name: name.into(),
            neighbors: neighbors.iter().map(|s| s.to_string()).collect(),
            tx,
        },
        Follower {
            rx,
            table: Table::new(),
        },
    )
}

fn nh(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 255, 0, i as u8 + 1))
}

fn withdraw(prefixes: impl Iterator<Item = u32>) -> Vec<DecodedUpdate> {
    vec![DecodedUpdate {
        attrs: None,
        announce: Vec::new(),
        withdraw: prefixes
            .map(|i| {
                Nlri::new(Prefix::V4(
                    Prefix4::new(0x0a00_0000 | (i << 8), 24).expect("ok"),
                ))
            })
            .collect(),
        end_of_rib: None,
        multicast: Default::default(),
    }]
}

/// Registers a throw-away view of `neighbors` and returns its snapshot.
fn fresh(reg: &ViewRegistry, neighbors: &[&str]) -> Table {
    let (s, mut f) = spec("fresh", neighbors);
    reg.register(s).expect("registered");
    reg.remove("fresh").expect("removed");
    f.drain();
    f.table
}

/// One run; returns the followers' final tables by view name.
fn run(mode: Mode) -> BTreeMap<String, Table> {
    let peers: Vec<FakePeer> = (0..3).map(FakePeer::nth).collect();
    let p = InProc::start(mode, &peers).expect("pipeline");
    let reg = ViewRegistry::new();
    let views = [
        ("a", &["peer1"][..]),
        ("b", &["peer2"]),
        ("ac", &["peer1", "peer3"]),
        ("all", &["peer1", "peer2", "peer3"]),
        ("none", &["peer9"]),
    ];
    let mut followers = BTreeMap::new();
    // Two before the RIB is connected, the rest after.
    for (name, n) in &views[..2] {
        let (s, f) = spec(name, n);
        reg.register(s).expect("registered");
        followers.insert(name.to_string(), f);
    }
    reg.attach(p.senders().to_vec()).expect("attached");
    for (name, n) in &views[2..] {
        let (s, f) = spec(name, n);
        reg.register(s).expect("registered");
        followers.insert(name.to_string(), f);
    }
    for i in 0..3 {
        p.up(i);
    }
    for (i, peer) in peers.iter().enumerate() {
        for batch in shared_table(i, peer.asn, PREFIXES, 8) {
            p.updates(i, batch);
        }
    }
    p.settle().expect("settled");
    // peer1 withdraws a third of the table, peer3's session goes down.
    p.updates(0, withdraw(0..(PREFIXES as u32 / 3)));
    p.settle().expect("settled");
    p.down(2);
    p.settle().expect("settled");
    for f in followers.values_mut() {
        f.drain();
    }
    let a = &followers["a"].table;
    assert_eq!(a.len(), PREFIXES - PREFIXES / 3, "{mode:?}");
    assert!(a.values().all(|v| v == &vec![nh(0)]), "{mode:?}");
    assert!(followers["none"].table.is_empty());
    for (name, n) in &views {
        assert_eq!(
            followers[*name].table,
            fresh(&reg, n),
            "{mode:?}: view {name} against a fresh snapshot"
        );
    }
    // The view of every peer is the Loc-RIB.
    let loc: Table = p
        .call_all(|st| {
            st.rib
                .iter()
                .filter_map(|r| {
                    let (_, a) = r.best()?;
                    let nh = a.next_hop().map(bgp_rib::nexthop_ip)?;
                    Some((r.prefix, vec![nh]))
                })
                .collect::<Vec<_>>()
        })
        .expect("loc-rib")
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(followers["all"].table, loc, "{mode:?}");
    // Removed views hear nothing more.
    assert!(reg.remove("b").expect("removed"));
    p.updates(1, withdraw(0..(PREFIXES as u32)));
    p.settle().expect("settled");
    assert!(followers["b"].rx.try_recv().is_err(), "{mode:?}");
    // A reload's replacement: "a" stays (a new snapshot), the others stop.
    let mut ac = followers.remove("ac").expect("ac");
    ac.drain();
    let (s, mut a2) = spec("a", &["peer1"]);
    reg.replace(vec![s]).expect("replaced");
    a2.drain();
    assert_eq!(a2.table, followers["a"].table);
    assert_eq!(reg.names(), ["a"]);
    p.updates(0, withdraw(0..(PREFIXES as u32)));
    p.settle().expect("settled");
    a2.drain();
    assert!(a2.table.is_empty(), "{mode:?}");
    assert!(ac.rx.try_recv().is_err(), "{mode:?}: ac was replaced away");
    followers.insert("ac".into(), ac);
    p.shutdown();
    followers.into_iter().map(|(k, f)| (k, f.table)).collect()
}

#[test]
fn views_agree_in_every_pipeline_mode() {
    let first = run(MODES[0]);
    for m in &MODES[1..] {
        assert_eq!(run(*m), first, "{m:?} against {:?}", MODES[0]);
    }
}
