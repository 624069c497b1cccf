//! The route counts each RIB thread publishes for the readers that never
//! wait for it (`rib/published.rs`, issue 17): `show route count`, `show
//! protocols`, `show neighbor` and `/metrics`.
//!
//! * `published_equal_the_walk`: after random sequences of announcements,
//!   withdrawals and session resets over the sequential, sharded and
//!   worker-pool pipelines, what each RIB thread last published equals a
//!   walk of its Loc-RIB, read on that thread right after the snapshot
//!   was taken (by the periodic tick, or by the control call that ends a
//!   settle), and the merged CLI answers equal the merged walk.
//! * `readers_answer_while_a_rib_thread_is_held`: one RIB thread is held
//!   in a job that does not return until the test lets it; meanwhile
//!   `show protocols`, `show neighbor`, `show route count` and `/metrics`
//!   answer at once with that thread's last published counts (before
//!   this change each of them waited for every RIB thread, here until
//!   their 30 s timeout, and failed).

use std::collections::BTreeMap;
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Duration;

use base::{Prefix, Prefix4};
use bgp_speaker::daemon::control::{Control, ReloadFn};
use bgp_speaker::daemon::metrics::Metrics;
use bgp_speaker::msg::DecodedUpdate;
use bgp_speaker::pipeline::{Locks, Mode};
use bgp_speaker::rib::{RibMsg, RibState};
use bgp_wire::Nlri;
use mgmt::metrics::{MetricsSource, MetricsWriter};
use mgmt::proto::{Data, Request, Response};
use mgmt::server::ControlHandler;
use proptest::prelude::*;
use testkit::inproc::{FakePeer, InProc};

const PEERS: usize = 3;

fn prefix(i: u32) -> Prefix {
    Prefix::V4(Prefix4::new(0x0a00_0000 | (i << 8), 24).expect("prefix"))
}

use testkit::inproc::announce_24s as announce;

fn withdraw(from: u32, n: u32) -> DecodedUpdate {
    DecodedUpdate {
        attrs: None,
        announce: Vec::new(),
        withdraw: (from..from + n).map(|i| Nlri::new(prefix(i))).collect(),
        end_of_rib: None,
        multicast: Default::default(),
    }
}

/// Counts as `show route count` and `show protocols` give them: prefixes
/// and paths (IPv4 unicast), and per protocol name (paths, best).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    prefixes: u64,
    paths: u64,
    per_peer: BTreeMap<String, (u64, u64)>,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.prefixes += o.prefixes;
        self.paths += o.paths;
        for (k, v) in &o.per_peer {
            let e = self.per_peer.entry(k.clone()).or_default();
            e.0 += v.0;
            e.1 += v.1;
        }
    }
}

/// A walk of one RIB thread's Loc-RIB, as `show route count` computed it
/// before the RIB kept counts.
fn walk(st: &RibState) -> Counts {
    let mut c = Counts::default();
    for (_, e) in st.peer_iter() {
        c.per_peer.insert(e.meta.name.clone(), (0, 0));
    }
    for r in st.rib.iter() {
        if !matches!(r.prefix, Prefix::V4(_)) {
            continue;
        }
        c.prefixes += 1;
        for (p, _) in r.iter() {
            c.paths += 1;
            if let Some(e) = st.peer(p.peer) {
                c.per_peer.entry(e.meta.name.clone()).or_default().0 += 1;
            }
        }
        if let Some((p, _)) = r.best() {
            if let Some(e) = st.peer(p.peer) {
                c.per_peer.entry(e.meta.name.clone()).or_default().1 += 1;
            }
        }
    }
    c
}

/// The counts of one published snapshot, from its `show route count`
/// and, per protocol, checked against its `show protocols all`.
fn of_published(p: &bgp_speaker::rib::published::Published) -> Counts {
    let mut c = Counts::default();
    let t = p
        .route_count
        .tables
        .iter()
        .find(|t| t.table == "master4")
        .expect("master4");
    c.prefixes = t.prefixes;
    c.paths = t.paths;
    for pc in &p.route_count.per_protocol {
        c.per_peer.insert(pc.protocol.clone(), (pc.paths, pc.best));
    }
    for pi in &p.protocols {
        let (paths, best) = c.per_peer.get(&pi.name).copied().unwrap_or_default();
        assert_eq!(
            (pi.routes.accepted, pi.routes.preferred),
            (paths, best),
            "{}: show protocols disagrees with show route count in one snapshot",
            pi.name
        );
    }
    c
}

/// Runs `f` on every RIB thread as a bare control job, which publishes
/// nothing itself (unlike `call_all`), so `f` sees the snapshot the
/// thread took last.
fn raw_all<R: Send + 'static>(
    ip: &InProc,
    f: impl Fn(&mut RibState) -> R + Send + Sync + 'static,
) -> Vec<R> {
    let f = Arc::new(f);
    let (tx, rx) = std_mpsc::channel();
    for (i, s) in ip.senders().iter().enumerate() {
        let (f, tx) = (f.clone(), tx.clone());
        let job: bgp_speaker::rib::ControlFn = Box::new(move |st: &mut RibState| {
            let _ = tx.send((i, f(st)));
        });
        s.blocking_send(RibMsg::Control(job)).expect("RIB thread");
    }
    drop(tx);
    let mut out: Vec<(usize, R)> = (0..ip.senders().len())
        .map(|_| rx.recv_timeout(Duration::from_secs(60)).expect("answer"))
        .collect();
    out.sort_by_key(|x| x.0);
    out.into_iter().map(|x| x.1).collect()
}

fn ask(c: &Control, r: Request) -> Data {
    match c.handle(r) {
        Response::Ok(d) => d,
        e => panic!("control error: {e:?}"),
    }
}

fn count_request() -> Request {
    Request::ShowRoute {
        prefix: None,
        all: false,
        protocol: None,
        count_only: true,
        multicast: false,
        longest_match: false,
    }
}

/// `show route count` and `show protocols` of `c`, as [`Counts`].
fn answered(c: &Control) -> Counts {
    let Data::RouteCount(rc) = ask(c, count_request()) else {
        panic!("not a route count")
    };
    let mut out = Counts::default();
    let t = rc
        .tables
        .iter()
        .find(|t| t.table == "master4")
        .expect("master4");
    out.prefixes = t.prefixes;
    out.paths = t.paths;
    for p in &rc.per_protocol {
        out.per_peer.insert(p.protocol.clone(), (p.paths, p.best));
    }
    let Data::Protocols(ps) = ask(
        c,
        Request::ShowProtocols {
            all: false,
            name: None,
        },
    ) else {
        panic!("not protocols")
    };
    for p in &ps {
        assert!(
            p.bgp.is_none(),
            "show protocols without all has a BGP block"
        );
        assert_eq!(
            (p.routes.accepted, p.routes.preferred),
            out.per_peer.get(&p.name).copied().unwrap_or_default(),
            "{}: show protocols disagrees with show route count",
            p.name
        );
    }
    out
}

#[derive(Clone, Debug)]
enum Op {
    Announce {
        peer: usize,
        from: u32,
        n: u32,
        len: u32,
    },
    Withdraw {
        peer: usize,
        from: u32,
        n: u32,
    },
    Reset {
        peer: usize,
    },
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..PEERS, 0u32..40, 1u32..20, 0u32..4)
            .prop_map(|(peer, from, n, len)| Op::Announce { peer, from, n, len }),
        2 => (0..PEERS, 0u32..40, 1u32..20).prop_map(|(peer, from, n)| Op::Withdraw { peer, from, n }),
        1 => (0..PEERS).prop_map(|peer| Op::Reset { peer }),
    ]
}

fn mode_of(i: usize) -> Mode {
    match i {
        0 => Mode::Sequential,
        1 => Mode::Sharded(2),
        2 => Mode::Sharded(3),
        _ => Mode::WorkerPool(2, Locks::Stripes),
    }
}

fn check(mode: Mode, ops: &[Op], by_tick: bool) {
    let peers: Vec<FakePeer> = (0..PEERS).map(FakePeer::nth).collect();
    let ip = InProc::start(mode, &peers).expect("start");
    for i in 0..PEERS {
        ip.up(i);
    }
    let reload: Arc<ReloadFn> = Arc::new(|_| Err("no reload here".into()));
    let control = Control::new(ip.senders().to_vec(), reload, Default::default());
    for op in ops {
        match *op {
            Op::Announce { peer, from, n, len } => {
                ip.updates(peer, vec![announce(peer, peers[peer].asn, from, n, len)])
            }
            Op::Withdraw { peer, from, n } => ip.updates(peer, vec![withdraw(from, n)]),
            Op::Reset { peer } => {
                ip.down(peer);
                ip.up(peer);
            }
        }
    }
    // Worker-pool threads apply input beside the control channel, so only
    // the channel pipelines are ordered for the tick.
    let by_tick = by_tick && matches!(mode, Mode::Sequential | Mode::Sharded(_));
    if by_tick {
        // The periodic tick publishes once everything before it is
        // applied (one channel per thread, in order).
        for s in ip.senders() {
            s.blocking_send(RibMsg::Tick).expect("tick");
        }
    } else {
        ip.settle().expect("settle");
    }
    // On each thread: its walk and the snapshot it took last.
    let parts = raw_all(&ip, |st| (walk(st), st.published_slot().get()));
    let mut whole = Counts::default();
    for (i, (w, p)) in parts.iter().enumerate() {
        assert!(p.seq > 0, "{mode:?}: part {i} never published");
        assert_eq!(&of_published(p), w, "{mode:?}: part {i}: published != walk");
        whole.add(w);
    }
    // The readers merge the snapshots without a RIB thread.
    assert_eq!(
        answered(&control),
        whole,
        "{mode:?}: merged answers != walk"
    );
    for i in 0..PEERS {
        let _ = ip.take_output(i);
    }
    ip.shutdown();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn published_equal_the_walk(
        mode in 0usize..4,
        by_tick in any::<bool>(),
        ops in prop::collection::vec(arb_op(), 1..24),
    ) {
        check(mode_of(mode), &ops, by_tick);
    }
}

#[test]
fn readers_answer_while_a_rib_thread_is_held() {
    let shards = 2;
    let peers: Vec<FakePeer> = (0..2).map(FakePeer::nth).collect();
    let ip = InProc::start(Mode::Sharded(shards), &peers).expect("start");
    ip.up(0);
    ip.up(1);
    ip.updates(0, vec![announce(0, peers[0].asn, 0, 100, 2)]);
    ip.settle().expect("settle");
    let reload: Arc<ReloadFn> = Arc::new(|_| Err("no reload here".into()));
    let control = Arc::new(Control::new(
        ip.senders().to_vec(),
        reload,
        Default::default(),
    ));
    let before = answered(&control);
    assert_eq!(before.prefixes, 100);

    // Hold RIB thread 0 in a job until the test lets it go (at most 60 s,
    // so that a failing test still ends).
    let (held_tx, held_rx) = std_mpsc::channel();
    let (go_tx, go_rx) = std_mpsc::channel::<()>();
    let job: bgp_speaker::rib::ControlFn = Box::new(move |_st: &mut RibState| {
        let _ = held_tx.send(());
        let _ = go_rx.recv_timeout(Duration::from_secs(60));
    });
    ip.senders()[0]
        .blocking_send(RibMsg::Control(job))
        .expect("RIB thread 0");
    held_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("RIB thread 0 is held");
    let seq0 = control.published().expect("published")[0].seq;

    // Peer 1 announces 50 new prefixes: thread 1 applies its share,
    // thread 0's share waits behind the job.
    ip.updates(1, vec![announce(1, peers[1].asn, 1000, 50, 1)]);
    let on0 = (1000..1050)
        .filter(|&i| bgp_rib::shard_for(&prefix(i), shards) == 0)
        .count() as u64;
    assert!(
        on0 > 0 && on0 < 50,
        "both threads own some of the new prefixes"
    );
    // Thread 1 publishes its share (control calls would wait for thread
    // 0, so poll its slot).
    let mut waited = 0;
    let now = loop {
        let c = answered(&control);
        if c.prefixes == 150 - on0 || waited >= 600 {
            break c;
        }
        std::thread::sleep(Duration::from_millis(50));
        waited += 1;
    };
    assert_eq!(
        now.prefixes,
        150 - on0,
        "show route count while thread 0 is held: thread 0's last counts plus thread 1's"
    );
    assert_eq!(now.per_peer.get("peer2").map(|c| c.0), Some(50 - on0));
    // show neighbor and /metrics answer too, with the same counts.
    let Data::Protocols(n) = ask(
        &control,
        Request::ShowNeighbor {
            addr: peers[1].addr.to_string(),
        },
    ) else {
        panic!("not protocols")
    };
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].routes.accepted, 50 - on0);
    assert!(n[0].bgp.is_some(), "show neighbor has the BGP block");
    let m = Metrics {
        control: control.clone(),
        latency: Default::default(),
    };
    let mut w = MetricsWriter::new();
    m.render(&mut w);
    let samples = mgmt::metrics::check::parse(&w.into_string()).expect("valid exposition");
    assert_eq!(
        mgmt::metrics::check::value(&samples, "tessera_rib_prefixes", &[("table", "master4")]),
        Some((150 - on0) as f64),
        "/metrics while thread 0 is held"
    );
    // Thread 0 published nothing meanwhile: it is still in the job.
    assert_eq!(control.published().expect("published")[0].seq, seq0);

    // Let go: thread 0 applies its share, and the counts catch up.
    go_tx.send(()).expect("release");
    ip.settle().expect("settle");
    let after = answered(&control);
    assert_eq!(after.prefixes, 150);
    assert_eq!(after.per_peer.get("peer2").map(|c| c.0), Some(50));
    for i in 0..2 {
        let _ = ip.take_output(i);
    }
    ip.shutdown();
}
