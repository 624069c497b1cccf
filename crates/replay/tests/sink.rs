//! Replay into the in-process sink: every prefix and End-of-RIB arrives,
//! sessions come from distinct 127.0.0.x sources, and stopping closes
//! everything within bounded time.

use base::Asn;
use replay::{
    source_addresses, start, FeedParams, Mix, Pacing, ReplayConfig, SenderVariant, Sharing, Sink,
    SinkConfig, SyntheticSpec, Workload,
};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn sink() -> Sink {
    Sink::start(SinkConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        local_as: Asn(65000),
        bgp_id: Ipv4Addr::new(127, 0, 0, 1),
        hold_time: 30,
        open_timeout: Duration::from_secs(5),
    })
    .expect("sink binds")
}

fn config(target: SocketAddr, peers: usize, variant: SenderVariant) -> ReplayConfig {
    ReplayConfig {
        target,
        target_as: Asn(65000),
        local_as: Asn(65001),
        sources: source_addresses("127.0.0.2".parse().unwrap(), peers).unwrap(),
        hold_time: 30,
        connect_timeout: Duration::from_secs(5),
        open_timeout: Duration::from_secs(5),
        variant,
        mix: replay::Mix::Normal,
        pacing: replay::Pacing::Fast,
        seed: 1,
        session_as: Vec::new(),
    }
}

fn workload(cfg: &ReplayConfig, peers: usize, prefixes: usize, sharing: Sharing) -> Workload {
    let params: Vec<FeedParams> = cfg
        .sources
        .iter()
        .map(|s| FeedParams {
            local_as: cfg.local_as,
            as_recorded: false,
            ibgp: false,
            next_hop: match s {
                IpAddr::V4(a) => *a,
                IpAddr::V6(_) => unreachable!(),
            },
            next_hop6: None,
        })
        .collect();
    let spec = SyntheticSpec {
        peers,
        prefixes,
        sharing,
        seed: 1,
    };
    Workload::synthetic(&spec, &params).unwrap()
}

#[test]
fn sink_counts_exactly_what_replay_sent() {
    let t0 = Instant::now();
    let sink = sink();
    for (sharing, peers, variant, mix) in [
        (
            Sharing::Shared,
            3,
            SenderVariant::ThreadPerPeer,
            Mix::Normal,
        ),
        (Sharing::Unique, 2, SenderVariant::ThreadPerPeer, Mix::Worst),
        (Sharing::Unique, 3, SenderVariant::TraceOrder, Mix::Normal),
        (
            Sharing::Shared,
            4,
            SenderVariant::RoundRobin { batch: 4 },
            Mix::Mix3,
        ),
    ] {
        let before = sink.stats().snapshot();
        let mut cfg = config(sink.local_addr(), peers, variant);
        cfg.mix = mix;
        let w = Arc::new(workload(&cfg, peers, 20_000, sharing));
        let (want_prefixes, want_updates) = (w.total_prefixes(), w.total_messages());
        assert_eq!(want_prefixes, peers as u64 * 20_000);
        let r = start(&cfg, w).expect("replay starts");
        let eors = before.end_of_rib + peers as u64;
        assert!(
            sink.wait_end_of_rib(eors, Duration::from_secs(15)),
            "End-of-RIB from every peer; sink {:?}, last error {:?}, replay {:?}",
            sink.stats().snapshot(),
            sink.stats().last_error(),
            r.stats().snapshot()
        );
        let snap = r.stats().snapshot();
        assert_eq!(snap.eor_sent, peers);
        assert_eq!(snap.up, peers);
        assert_eq!(snap.prefixes_sent, want_prefixes);
        assert_eq!(snap.updates_sent, want_updates);
        let got = sink.stats().snapshot();
        assert_eq!(got.prefixes - before.prefixes, want_prefixes);
        // Every UPDATE plus one End-of-RIB per peer.
        assert_eq!(got.updates - before.updates, want_updates + peers as u64);
        assert_eq!(got.withdrawn, 0, "{variant:?} {mix:?}");
        assert_eq!(got.malformed, 0);
        assert!(r.stats().send_window().is_some());
        let results = r.join();
        assert!(results.iter().all(Result::is_ok), "{results:?}");
    }
    assert_eq!(sink.stats().snapshot().sessions_failed, 0);
    assert!(t0.elapsed() < Duration::from_secs(30));
}

#[test]
fn bad_pacing_and_unreachable_targets_fail_clearly() {
    let mut cfg = config("127.0.0.1:1".parse().unwrap(), 1, SenderVariant::TraceOrder);
    cfg.pacing = Pacing::Trace { speed: 1.0 };
    let w = Arc::new(workload(&cfg, 1, 10, Sharing::Unique));
    let e = start(&cfg, w.clone())
        .err()
        .expect("synthetic input has no times");
    assert!(e.to_string().contains("timestamps"), "{e}");

    // Nothing listens on port 1: refused until the connect timeout.
    let mut cfg = config(
        "127.0.0.1:1".parse().unwrap(),
        1,
        SenderVariant::ThreadPerPeer,
    );
    cfg.connect_timeout = Duration::from_millis(500);
    let t0 = Instant::now();
    let r = start(&cfg, w).unwrap();
    while !r.finished() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "connect must be bounded"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let res = r.join();
    let e = res[0].expect_err("connection refused");
    assert!(e.to_string().contains("connecting"), "{e}");
}

#[test]
fn wrong_peer_as_is_reported() {
    let sink = sink();
    let mut cfg = config(sink.local_addr(), 1, SenderVariant::ThreadPerPeer);
    cfg.target_as = Asn(64999);
    let w = Arc::new(workload(&cfg, 1, 10, Sharing::Unique));
    let r = start(&cfg, w).unwrap();
    let t0 = Instant::now();
    while !r.finished() {
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = r.join()[0].expect_err("AS mismatch");
    assert_eq!(
        e,
        replay::ReplayError::WrongPeerAs {
            expected: 64999,
            got: 65000
        }
    );
}
