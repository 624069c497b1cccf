//! Sessions with their own AS numbers, as a DUT sees them: a listener on
//! loopback plays the DUT (the replay crate's own passive handshake,
//! accepting any AS) and records, per session, the AS in the OPEN and the
//! AS_PATH of every UPDATE up to End-of-RIB.
//!
//! 1. `--peer-as recorded` on Route Views jinx's RIB dump (first 2000
//!    prefixes, three recorded peers): each session's OPEN carries its
//!    recorded peer's AS, and every path arrives as recorded: the same
//!    path the default mode sends minus the AS that mode prepends.
//! 2. `--local-as-step 1` on a synthetic table: peer i opens as
//!    local_as + i and its paths start with that AS.
//!
//! Loopback only (127.0.0.0/8), an ephemeral port; every wait is bounded.

use base::Asn;
use bgp_wire::{Message, PathAttribute};
use replay::feed::FeedParams;
use replay::mrt_input::{load, recorded_ases, InputOptions, ParamsFn};
use replay::session::{handshake, MsgReader, SessionConfig};
use replay::workload::send_ctx;
use replay::{source_addresses, start, step_ases, ReplayConfig, Sharing, SyntheticSpec, Workload};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const DUT_AS: u32 = 4_200_000_000;
const LOCAL_AS: u32 = 4_200_000_001;

/// What the DUT saw on one session.
struct Seen {
    source: IpAddr,
    open_as: Asn,
    /// The AS_PATH of every UPDATE, in order (End-of-RIB excluded).
    paths: Vec<Vec<u32>>,
    /// Kept open until the replay has been joined.
    _stream: TcpStream,
}

/// Accepts `n` sessions; each is read up to its first End-of-RIB.
fn fake_dut(n: usize) -> (SocketAddr, JoinHandle<Vec<Seen>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let h = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut sessions = Vec::new();
        while sessions.len() < n {
            assert!(
                Instant::now() < deadline,
                "only {} sessions",
                sessions.len()
            );
            match l.accept() {
                Ok((s, peer)) => {
                    s.set_nonblocking(false).unwrap();
                    sessions.push(std::thread::spawn(move || read_session(s, peer, deadline)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
        sessions.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (addr, h)
}

fn read_session(mut s: TcpStream, peer: SocketAddr, deadline: Instant) -> Seen {
    let mut rd = MsgReader::new();
    let cfg = SessionConfig {
        source: None,
        target: peer,
        local_as: Asn(DUT_AS),
        peer_as: None,
        bgp_id: Ipv4Addr::new(127, 0, 0, 1),
        hold_time: 30,
        connect_timeout: Duration::from_secs(5),
        open_timeout: Duration::from_secs(5),
        graceful_restart: false,
    };
    let neg = handshake(&mut s, &mut rd, &cfg).expect("handshake");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut paths = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "no End-of-RIB from {peer}");
        let Some(m) = rd.next(&mut s, neg.ctx, replay::Phase::Accept).unwrap() else {
            continue;
        };
        let Ok((Message::Update(u), _)) = Message::parse(rd.bytes(m), send_ctx()) else {
            continue; // KEEPALIVE
        };
        let mut path = None;
        for a in u.attributes() {
            if let PathAttribute::AsPath(p) = a.unwrap().typed(send_ctx()).unwrap() {
                path = Some(p.segments().flat_map(|g| g.asns().map(|a| a.0)).collect());
            }
        }
        match path {
            Some(p) => paths.push(p),
            // IPv4 End-of-RIB: an UPDATE with nothing in it.
            None if u.nlri().count() == 0 && u.withdrawn().count() == 0 => break,
            None => panic!("an UPDATE without AS_PATH from {peer}"),
        }
    }
    Seen {
        source: peer.ip(),
        open_as: neg.peer_as,
        paths,
        _stream: s,
    }
}

/// Replays `w` into a fake DUT; what it saw, by source address.
fn replay_into_fake_dut(w: Workload, session_as: Vec<Asn>) -> HashMap<IpAddr, Seen> {
    let n = w.feeds.len();
    let (addr, dut) = fake_dut(n);
    let sources = source_addresses("127.0.0.2".parse().unwrap(), n).unwrap();
    let mut cfg = ReplayConfig::new(addr, Asn(DUT_AS), Asn(LOCAL_AS), sources);
    cfg.connect_timeout = Duration::from_secs(5);
    cfg.open_timeout = Duration::from_secs(5);
    cfg.session_as = session_as;
    let r = start(&cfg, Arc::new(w)).expect("replay starts");
    let seen = dut.join().expect("fake DUT");
    let results = r.join();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    seen.into_iter().map(|s| (s.source, s)).collect()
}

fn nh(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, 2 + i as u8)
}

fn jinx() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt/routeviews.route-views.jinx.ribs.1401487200.bz2");
    assert!(
        p.exists(),
        "{} is missing: the shared MRT data set is needed",
        p.display()
    );
    p
}

#[test]
fn recorded_peers_open_with_their_own_as_and_send_paths_as_recorded() {
    let t0 = Instant::now();
    let opts = InputOptions {
        peers: Some(vec![0, 1, 2]),
        max_prefixes: Some(2000),
        ..InputOptions::default()
    };
    let recorded: ParamsFn = Arc::new(|i| FeedParams {
        as_recorded: true,
        ..FeedParams::ebgp(Asn(LOCAL_AS), nh(i))
    });
    let local: ParamsFn = Arc::new(|i| FeedParams::ebgp(Asn(LOCAL_AS), nh(i)));
    let (w, sums) = load(&[jinx()], &opts, &recorded).unwrap();
    let (wl, _) = load(&[jinx()], &opts, &local).unwrap();
    let ases = recorded_ases(&sums);
    assert_eq!(ases.len(), 3);
    assert_eq!(
        ases,
        sums[0].peers.iter().map(|p| p.asn).collect::<Vec<_>>()
    );
    let n = w.feeds.len();
    let got = replay_into_fake_dut(w, ases.clone());
    let got_local = replay_into_fake_dut(wl, Vec::new());
    let mut led_by_peer = 0;
    for (i, asn) in ases.iter().enumerate() {
        let src = IpAddr::V4(nh(i));
        let (s, l) = (&got[&src], &got_local[&src]);
        assert_eq!(s.open_as, *asn, "session {i} opens as its recorded peer");
        assert_eq!(l.open_as, Asn(LOCAL_AS), "default: --local-as");
        assert!(!s.paths.is_empty());
        assert_eq!(s.paths.len(), l.paths.len());
        for (p, pl) in s.paths.iter().zip(&l.paths) {
            // The default mode prepends --local-as to the recorded path;
            // recorded mode sends the recorded path itself.
            assert_eq!(pl.first(), Some(&LOCAL_AS));
            assert_eq!(p[..], pl[1..], "session {i}");
            assert_ne!(p.first(), Some(&LOCAL_AS));
            led_by_peer += usize::from(p.first() == Some(&asn.0));
        }
    }
    // Recorded paths start with the recorded peer's AS (a route server
    // peer might not prepend its own; these three do).
    let total: usize = got.values().map(|s| s.paths.len()).sum();
    assert_eq!(led_by_peer, total, "{n} sessions");
    assert!(t0.elapsed() < Duration::from_secs(60));
}

#[test]
fn local_as_step_gives_each_generator_its_own_as() {
    let first = Asn(LOCAL_AS);
    let ases = step_ases(first, 1, 3).unwrap();
    assert_eq!(ases, [Asn(LOCAL_AS), Asn(LOCAL_AS + 1), Asn(LOCAL_AS + 2)]);
    assert!(step_ases(Asn(u32::MAX - 1), 1, 3).is_err(), "past 2^32 - 1");
    let params: Vec<FeedParams> = (0..3).map(|i| FeedParams::ebgp(ases[i], nh(i))).collect();
    let spec = SyntheticSpec {
        peers: 3,
        prefixes: 500,
        sharing: Sharing::Shared,
        seed: 1,
    };
    let w = Workload::synthetic(&spec, &params).unwrap();
    let got = replay_into_fake_dut(w, ases.clone());
    for (i, asn) in ases.iter().enumerate() {
        let s = &got[&IpAddr::V4(nh(i))];
        assert_eq!(s.open_as, *asn, "peer {i}");
        assert!(!s.paths.is_empty());
        assert!(
            s.paths.iter().all(|p| p.first() == Some(&asn.0)),
            "peer {i}: paths start with its own AS"
        );
    }
}
