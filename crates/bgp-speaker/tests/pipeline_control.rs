//! What needs every shard of a split RIB, checked against the sequential
//! RIB on the same input: the CLI's `show route`, `show route count` and
//! `show protocols` answers (fanned out to every RIB thread and merged),
//! and `/metrics` (merged counts, the per-stage histograms of seed 000
//! Table 4.2, and a valid exposition).

use std::sync::Arc;

use bgp_speaker::daemon::control::{Control, ReloadFn};
use bgp_speaker::daemon::metrics::Metrics;
use bgp_speaker::pipeline::{Locks, Mode};
use mgmt::metrics::{MetricsSource, MetricsWriter};
use mgmt::proto::{Data, Request, Response};
use mgmt::server::ControlHandler;
use testkit::inproc::{FakePeer, InProc};

use testkit::inproc::announce_24s as update;

struct Answers {
    routes: Data,
    count: Data,
    protocols: Data,
    metrics: String,
}

fn ask(c: &Control, r: Request) -> Data {
    match c.handle(r) {
        Response::Ok(d) => d,
        e => panic!("control error: {e:?}"),
    }
}

fn run(mode: Mode) -> Answers {
    let peers: Vec<FakePeer> = (0..3).map(FakePeer::nth).collect();
    let ip = InProc::start(mode, &peers).expect("start");
    for i in 0..peers.len() {
        ip.up(i);
    }
    // Peer 0: 300 prefixes, long paths; peer 1: the first 200 again,
    // shorter (it wins those); peer 2: 50 of its own.
    ip.updates(0, vec![update(0, peers[0].asn, 0, 300, 3)]);
    ip.updates(1, vec![update(1, peers[1].asn, 0, 200, 1)]);
    ip.updates(2, vec![update(2, peers[2].asn, 1000, 50, 2)]);
    ip.settle().expect("settle");
    let reload: Arc<ReloadFn> = Arc::new(|_| Err("no reload here".into()));
    let control = Arc::new(Control::new(
        ip.senders().to_vec(),
        reload,
        Default::default(),
    ));
    let routes = ask(
        &control,
        Request::ShowRoute {
            prefix: None,
            all: false,
            protocol: None,
            count_only: false,
            multicast: false,
            longest_match: false,
        },
    );
    let count = ask(
        &control,
        Request::ShowRoute {
            prefix: None,
            all: false,
            protocol: None,
            count_only: true,
            multicast: false,
            longest_match: false,
        },
    );
    let protocols = ask(
        &control,
        Request::ShowProtocols {
            all: false,
            name: None,
        },
    );
    let m = Metrics {
        control,
        latency: Default::default(),
    };
    let mut w = MetricsWriter::new();
    m.render(&mut w);
    for i in 0..peers.len() {
        let _ = ip.take_output(i);
    }
    ip.shutdown();
    Answers {
        routes,
        count,
        protocols,
        metrics: w.into_string(),
    }
}

fn routes_without_times(d: &Data) -> Vec<mgmt::proto::RouteInfo> {
    let Data::Routes(r) = d else {
        panic!("not routes")
    };
    let mut r = r.clone();
    for p in r.iter_mut().flat_map(|x| x.paths.iter_mut()) {
        p.since_ms = 0;
    }
    r
}

fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let samples = mgmt::metrics::check::parse(text).expect("valid exposition");
    mgmt::metrics::check::value(&samples, name, labels)
}

#[test]
fn cli_and_metrics_merge_shards() {
    let base = run(Mode::Sequential);
    let Data::Routes(r) = &base.routes else {
        panic!("routes")
    };
    assert_eq!(r.len(), 350, "sequential show route");
    for mode in [
        Mode::Sharded(2),
        Mode::Sharded(3),
        Mode::PerPeer(Locks::Stripes),
        Mode::WorkerPool(2, Locks::Stripes),
        Mode::PerPeer(Locks::Fine),
        Mode::WorkerPool(2, Locks::Fine),
    ] {
        let a = run(mode);
        // Paths carry the time their session came up, which differs
        // between runs; everything else must match.
        assert!(
            routes_without_times(&a.routes) == routes_without_times(&base.routes),
            "{mode:?}: show route differs from sequential"
        );
        // Within one run every shard shows the same time for a peer.
        let Data::Routes(r) = &a.routes else {
            panic!("routes")
        };
        let mut since = std::collections::BTreeMap::new();
        for p in r.iter().flat_map(|x| &x.paths) {
            let t = *since.entry(p.from.clone()).or_insert(p.since_ms);
            assert_eq!(t, p.since_ms, "{mode:?}: {} up since two times", p.from);
        }
        assert_eq!(a.count, base.count, "{mode:?}: show route count");
        // Protocol rows carry times (since_ms); compare the counts.
        let (Data::Protocols(p), Data::Protocols(q)) = (&a.protocols, &base.protocols) else {
            panic!("protocols")
        };
        assert_eq!(p.len(), q.len());
        for (x, y) in p.iter().zip(q) {
            assert_eq!(
                (&x.name, x.routes),
                (&y.name, y.routes),
                "{mode:?}: show protocols"
            );
        }
        for (name, labels) in [
            ("tessera_rib_threads", vec![]),
            ("tessera_rib_prefixes", vec![("table", "master4")]),
        ] {
            let got = sample(&a.metrics, name, &labels);
            let want = if name == "tessera_rib_threads" {
                Some(mode.shards() as f64)
            } else {
                sample(&base.metrics, name, &labels)
            };
            assert!(got.is_some(), "{mode:?}: {name} missing");
            assert_eq!(got, want, "{mode:?}: {name}");
        }
        // Every RIB-side stage has samples (the session-side ones need
        // sockets), under the documented family name.
        for stage in ["policy", "rib_update", "best_path", "export"] {
            let n = sample(
                &a.metrics,
                "tessera_update_stage_seconds_count",
                &[("stage", stage)],
            );
            assert!(n.is_some_and(|n| n > 0.0), "{mode:?}: stage {stage}: {n:?}");
        }
        assert!(
            sample(
                &a.metrics,
                "tessera_update_stage_seconds_count",
                &[("stage", "socket_read")]
            )
            .is_some(),
            "socket_read stage missing"
        );
    }
}

/// `router.pipeline`/`router.threads` reach the daemon's spec; the modes
/// each get the mode they name.
#[test]
fn pipeline_config_modes() {
    let spec = |extra: &str| {
        let text = format!("[router]\nid = \"192.0.2.1\"\nasn = 64500\n{extra}");
        let c = config::parse(&text, "t.toml").expect("valid configuration");
        bgp_speaker::daemon::Spec::from_config(c)
    };
    let default = spec("").expect("default accepted");
    assert_eq!(
        default.mode,
        Mode::Sharded(bgp_speaker::pipeline::default_threads())
    );
    let s = spec("pipeline = \"sharded\"\nthreads = 3\n").expect("sharded");
    assert_eq!(s.mode, Mode::Sharded(3));
    assert_eq!(s.mode.shards(), 3);
    let s = spec("pipeline = \"sequential\"\nthreads = 3\n").expect("sequential");
    assert_eq!(s.mode.shards(), 1);
    for bad in ["threads = 0\n", "threads = 65\n"] {
        let text = format!("[router]\nid = \"192.0.2.1\"\nasn = 64500\n{bad}");
        let e = config::parse(&text, "t.toml").expect_err("refused");
        assert!(e.to_string().contains("router.threads"), "{e}");
    }
    let s = spec("pipeline = \"per-peer\"\nthreads = 3\n").expect("per-peer");
    assert_eq!(s.mode, Mode::PerPeer(Locks::Stripes));
    assert_eq!(s.mode.threads(), None, "one thread per peer");
    assert_eq!(s.mode.shards(), bgp_speaker::striped::STRIPES);
    let s = spec("pipeline = \"worker-pool\"\nthreads = 3\n").expect("worker-pool");
    assert_eq!(s.mode, Mode::WorkerPool(3, Locks::Stripes));
    assert_eq!(s.mode.threads(), Some(3));
    assert_eq!(s.mode.shards(), bgp_speaker::striped::STRIPES);
    // router.locks: fine gives the 64 nodes, in both locked modes.
    let s = spec("pipeline = \"per-peer\"\nlocks = \"fine\"\n").expect("per-peer fine");
    assert_eq!(s.mode, Mode::PerPeer(Locks::Fine));
    assert_eq!(s.mode.shards(), bgp_speaker::striped::FINE_NODES);
    let s = spec("pipeline = \"worker-pool\"\nthreads = 2\nlocks = \"fine\"\n")
        .expect("worker-pool fine");
    assert_eq!(s.mode, Mode::WorkerPool(2, Locks::Fine));
    assert_eq!(s.mode.shards(), bgp_speaker::striped::FINE_NODES);
    let s = spec("pipeline = \"worker-pool\"\nlocks = \"stripes\"\n").expect("stripes");
    assert_eq!(s.mode.locks(), Some(Locks::Stripes));
    // Refused: a locking the other pipelines do not have, and a typo.
    for bad in [
        "pipeline = \"sharded\"\nlocks = \"fine\"\n",
        "locks = \"fine\"\n",
        "pipeline = \"sequential\"\nlocks = \"stripes\"\n",
        "pipeline = \"per-peer\"\nlocks = \"per-node\"\n",
    ] {
        let text = format!("[router]\nid = \"192.0.2.1\"\nasn = 64500\n{bad}");
        let e = config::parse(&text, "t.toml").expect_err("refused");
        assert!(e.to_string().contains("router.locks"), "{bad}: {e}");
    }
}
