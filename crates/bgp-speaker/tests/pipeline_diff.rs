//! Differential test of the UPDATE pipeline modes (Tessera issue 5): every
//! mode gets the same inputs, through the same RIB threads, session-side
//! split and control fan-out the daemon runs ([`testkit::inproc`]), and
//! must end with the same Loc-RIB and the same Adj-RIB-Out towards every
//! peer (decoded from the UPDATE bytes the peer was handed, so packing may
//! differ but the routes may not). Also checked in every mode: one
//! End-of-RIB per family, after the whole initial table (RFC 4724 §2), and
//! BoRR / re-sent routes / EoRR in that order (RFC 7313 §4).
//!
//! Inputs: a synthetic mix (peers announcing shared prefixes with competing
//! AS paths and MEDs, multi-prefix UPDATEs spanning shards, withdrawals,
//! re-announcements, a session reset) and the first UPDATEs of the real
//! trace `updates.20190101.0000.gz`, spread over its first peers.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

use base::{AfiSafi, Asn, Prefix, Prefix4, Prefix6};
use bgp_core::decode::{decode_update, Decoded};
use bgp_rib::AttrsBuilder;
use bgp_speaker::msg::DecodedUpdate;
use bgp_speaker::msg::{RawUpdates, StreamLink};
use bgp_speaker::pipeline::{Locks, Mode};
use bgp_wire::consts::msg_type;
use bgp_wire::{
    AsPath, AttrValue, Community, NextHop, Nlri, Origin, ParseCtx, PathAttr, UpdateView,
};
use testkit::inproc::{negotiated, FakePeer, InProc, LocRoute};

const MODES: [Mode; 12] = [
    Mode::Sequential,
    Mode::Sharded(1),
    Mode::Sharded(2),
    Mode::Sharded(4),
    Mode::PerPeer(Locks::Stripes),
    Mode::WorkerPool(2, Locks::Stripes),
    Mode::WorkerPool(4, Locks::Stripes),
    Mode::PerPeer(Locks::Fine),
    Mode::WorkerPool(2, Locks::Fine),
    Mode::WorkerPool(4, Locks::Fine),
    // Per-worker streams: in the MRT test the workers parse the raw
    // UPDATEs (the synthetic tests hand them decoded inputs).
    Mode::WorkerStreams(2, Locks::Stripes),
    Mode::WorkerStreams(4, Locks::Fine),
];

/// What one peer was sent, replayed: its Adj-RIB-Out as the peer sees it
/// (prefix -> attributes rendered without the MP_REACH NLRI, so packing
/// does not matter), and the markers in arrival order with the number of
/// routes announced before each.
#[derive(Debug, Default, PartialEq, Eq)]
struct PeerView {
    routes: BTreeMap<Prefix, String>,
    /// ("EoR v4" / "BoRR v4" / ..., distinct prefixes announced since
    /// the previous marker).
    markers: Vec<(String, usize)>,
    /// Prefixes announced since the last marker.
    since: BTreeSet<Prefix>,
}

fn family(afi: u16) -> &'static str {
    if afi == 2 {
        "v6"
    } else {
        "v4"
    }
}

impl PeerView {
    fn apply(&mut self, bufs: &[Vec<u8>], ctx: ParseCtx) {
        for buf in bufs {
            let mut rest: &[u8] = buf;
            while let Ok(Some(f)) = bgp_wire::frame(rest, ctx) {
                match f.header.msg_type {
                    msg_type::UPDATE => self.update(f.body, ctx),
                    msg_type::ROUTE_REFRESH => {
                        let afi = u16::from_be_bytes([f.body[0], f.body[1]]);
                        let name = match f.body[2] {
                            1 => "BoRR",
                            2 => "EoRR",
                            _ => "RR",
                        };
                        let n = std::mem::take(&mut self.since).len();
                        self.markers.push((format!("{name} {}", family(afi)), n));
                    }
                    t => panic!("unexpected message type {t} sent to a peer"),
                }
                rest = &rest[f.len..];
            }
            assert!(rest.is_empty(), "a hand-over ended inside a message");
        }
    }

    fn update(&mut self, body: &[u8], ctx: ParseCtx) {
        let u = UpdateView::parse(body, ctx).expect("we send valid UPDATEs");
        if let Some(af) = u.end_of_rib() {
            let name = format!("EoR {}", family(af.afi.to_u16()));
            let n = std::mem::take(&mut self.since).len();
            self.markers.push((name, n));
            return;
        }
        let owned = u.to_owned().expect("valid");
        let mut key = String::new();
        for a in &owned.attributes {
            match &a.value {
                AttrValue::MpReach(m) => key.push_str(&format!("nh={:?};", m.next_hop)),
                AttrValue::MpUnreach(_) => {}
                v => key.push_str(&format!("{v:?};")),
            }
        }
        for n in u.withdrawn() {
            self.routes.remove(&n.expect("valid").prefix);
        }
        if let Some(Ok(w)) = u.mp_unreach() {
            for n in w.withdrawn() {
                self.routes.remove(&n.expect("valid").prefix);
            }
        }
        let mut announce = |n: Nlri| {
            self.since.insert(n.prefix);
            self.routes.insert(n.prefix, key.clone());
        };
        for n in u.nlri() {
            announce(n.expect("valid"));
        }
        if let Some(Ok(r)) = u.mp_reach() {
            for n in r.nlri() {
                announce(n.expect("valid"));
            }
        }
    }
}

/// Everything compared between modes.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    loc_rib: Vec<LocRoute>,
    peers: Vec<BTreeMap<Prefix, String>>,
    /// Per peer: the markers in order, each with the distinct prefixes
    /// announced since the previous marker where that is fixed by the
    /// input (the whole table before an End-of-RIB or between BoRR and
    /// EoRR), else None. Distinct prefixes, not announcements: how often
    /// a prefix that changed twice was sent depends on how the RIB
    /// batched its wake-ups and on what waited for the session's queue
    /// to drain (pull export coalesces, ADR 0004).
    markers: Vec<Vec<(String, Option<usize>)>>,
}

fn marker_spans(m: &[(String, usize)]) -> Vec<(String, Option<usize>)> {
    let mut prev: Option<&str> = None;
    m.iter()
        .map(|(name, n)| {
            let fixed = match prev {
                None => name.starts_with("EoR"),
                Some(p) => p.starts_with("EoR") && name.starts_with("EoR") || p.starts_with("BoRR"),
            };
            prev = Some(name);
            (name.clone(), fixed.then_some(*n))
        })
        .collect()
}

fn attrs(path: &[u32], med: Option<u32>, nh: NextHop, comm: Option<u32>) -> AttrsBuilder {
    let mut b = AttrsBuilder::new();
    b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
    let asns = path.iter().map(|&a| Asn(a)).collect();
    b.set(PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
        asns,
    ))));
    b.set_next_hop(nh);
    if let Some(m) = med {
        b.set_med(m);
    }
    if let Some(c) = comm {
        b.set(PathAttr::new(AttrValue::Communities(vec![Community(c)])));
    }
    b.mark_clean();
    b
}

// Neighbouring i land in different shard blocks (`bgp_rib::shard_for`
// keys on the /20 and /32 around a prefix), so that multi-prefix UPDATEs
// span shards and the split is exercised.
fn v4(i: u32) -> Prefix {
    let a = 0x0a00_0000 | ((i & 7) << 20) | ((i >> 3) << 8);
    Prefix::V4(Prefix4::new(a, 24).expect("valid"))
}
fn v6(i: u32) -> Prefix {
    let a = Ipv6Addr::new(
        0x2001,
        0xdb8 + (i & 7) as u16,
        (i >> 16) as u16,
        i as u16,
        0,
        0,
        0,
        0,
    );
    Prefix::V6(Prefix6::new(u128::from(a), 64).expect("valid"))
}

fn announce(prefixes: &[Prefix], a: AttrsBuilder) -> DecodedUpdate {
    DecodedUpdate {
        attrs: Some(std::sync::Arc::new(a)),
        announce: prefixes.iter().map(|p| Nlri::new(*p)).collect(),
        withdraw: Vec::new(),
        end_of_rib: None,
        multicast: Default::default(),
    }
}
fn withdraw(prefixes: &[Prefix]) -> DecodedUpdate {
    DecodedUpdate {
        attrs: None,
        announce: Vec::new(),
        withdraw: prefixes.iter().map(|p| Nlri::new(*p)).collect(),
        end_of_rib: None,
        multicast: Default::default(),
    }
}

/// Peer `p`'s UPDATEs for one round: `round` varies the attributes so a
/// re-announcement really changes something. Prefixes are shared: peer p
/// announces every prefix i with i % (p + 2) != 1, in UPDATEs of 1..=17
/// prefixes (so most span shards).
fn synthetic_round(p: usize, peer_asn: u32, round: u32) -> Vec<DecodedUpdate> {
    let nh4 = NextHop::V4(Ipv4Addr::new(10, 255, 0, p as u8 + 1));
    let nh6 = NextHop::V6(Ipv6Addr::new(
        0x2001,
        0xdb8,
        0xffff,
        0,
        0,
        0,
        0,
        p as u16 + 1,
    ));
    let mut out = Vec::new();
    let mut i = 0u32;
    let mut k = 0u32;
    while i < 1500 {
        let n = 1 + (k * 7 + p as u32) % 17;
        let set: Vec<Prefix> = (i..(i + n).min(1500))
            .filter(|x| x % (p as u32 + 2) != 1)
            .map(|x| if x % 10 == 9 { v6(x) } else { v4(x) })
            .collect();
        i += n;
        k += 1;
        if set.is_empty() {
            continue;
        }
        // Path lengths 1..4 and MEDs vary with the UPDATE and the peer,
        // so best-path selection goes several ways.
        let len = 1 + (k + p as u32 + round) % 4;
        let mut path = vec![peer_asn];
        path.extend((0..len).map(|j| 64900 + (j * 13 + k) % 50));
        let med = (!(k + round).is_multiple_of(3)).then_some((k * 31 + p as u32 * 7 + round) % 200);
        // Mixed families in one UPDATE cannot share a next hop; split.
        let (s4, s6): (Vec<Prefix>, Vec<Prefix>) =
            set.iter().partition(|p| matches!(p, Prefix::V4(_)));
        let comm = k.is_multiple_of(5).then_some((65000 << 16) | k);
        if !s4.is_empty() {
            out.push(announce(&s4, attrs(&path, med, nh4, comm)));
        }
        if !s6.is_empty() {
            out.push(announce(&s6, attrs(&path, med, nh6, comm)));
        }
    }
    out
}

thread_local! {
    /// What a script had peers read before the end, by peer ([`read_now`]).
    static READ: std::cell::RefCell<BTreeMap<usize, Vec<Vec<u8>>>> = Default::default();
}

/// Peer `i` reads what it was sent so far, as a session that keeps up
/// does: what the RIB held back for its queue (pull export, ADR 0004)
/// goes out now, before the script's next input, in every mode. The
/// bytes are kept for [`run`]'s view of the peer.
fn read_now(ip: &InProc, i: usize) {
    let got = ip.take_output(i);
    READ.with(|r| r.borrow_mut().entry(i).or_default().extend(got));
}

/// Runs `script` against `mode` with `peers`, then reads everything back.
fn run(mode: Mode, peers: &[FakePeer], script: &dyn Fn(&InProc)) -> Outcome {
    READ.with(|r| r.borrow_mut().clear());
    let ip = InProc::start(mode, peers).expect("start pipeline");
    script(&ip);
    ip.settle().expect("settle");
    let loc_rib = ip.loc_rib().expect("loc rib");
    let mut views = Vec::new();
    for (i, p) in peers.iter().enumerate() {
        let ctx = negotiated(p).parse_ctx();
        let mut v = PeerView::default();
        let mut bufs = READ.with(|r| r.borrow_mut().remove(&i)).unwrap_or_default();
        bufs.extend(ip.take_output(i));
        v.apply(&bufs, ctx);
        views.push(v);
    }
    ip.shutdown();
    Outcome {
        loc_rib,
        peers: views.iter().map(|v| v.routes.clone()).collect(),
        markers: views.iter().map(|v| marker_spans(&v.markers)).collect(),
    }
}

fn compare_modes(name: &str, peers: &[FakePeer], script: &dyn Fn(&InProc)) -> Outcome {
    let base = run(Mode::Sequential, peers, script);
    for mode in &MODES[1..] {
        let o = run(*mode, peers, script);
        assert_eq!(
            o.loc_rib.len(),
            base.loc_rib.len(),
            "{name}: {mode:?} Loc-RIB size differs from sequential"
        );
        for (a, b) in o.loc_rib.iter().zip(&base.loc_rib) {
            assert_eq!(a, b, "{name}: {mode:?} Loc-RIB differs from sequential");
        }
        for (i, (a, b)) in o.peers.iter().zip(&base.peers).enumerate() {
            assert_eq!(
                a.len(),
                b.len(),
                "{name}: {mode:?} Adj-RIB-Out of peer {i} has a different size"
            );
            assert!(a == b, "{name}: {mode:?} Adj-RIB-Out of peer {i} differs");
        }
        assert_eq!(
            o.markers, base.markers,
            "{name}: {mode:?} End-of-RIB / refresh markers differ"
        );
    }
    base
}

#[test]
fn synthetic_mix_same_in_every_mode() {
    let peers: Vec<FakePeer> = (0..6).map(FakePeer::nth).collect();
    let script = |ip: &InProc| {
        // Peers 0..4 up and loaded; peer 5 comes up afterwards (its
        // initial table is then the whole Loc-RIB).
        for i in 0..5 {
            ip.up(i);
        }
        // Where the End-of-RIB falls depends on what else the RIB took in
        // the same wake-up; settle so that it is the same in every run.
        ip.settle().expect("settle");
        for round in 0..2 {
            for (i, p) in peers.iter().enumerate().take(5) {
                let ups = synthetic_round(i, p.asn, round);
                for chunk in ups.chunks(64) {
                    ip.updates(i, chunk.to_vec());
                }
            }
        }
        // Withdrawals from two peers, one prefix in both lists.
        let w: Vec<Prefix> = (0..1500).step_by(3).map(v4).collect();
        ip.updates(0, vec![withdraw(&w)]);
        let w: Vec<Prefix> = (0..1500).step_by(7).map(v4).collect();
        ip.updates(3, vec![withdraw(&w)]);
        // Peer 2 resets and comes back with half its table. What it was
        // sent before is gone with the session (a real session drops it).
        ip.settle().expect("settle");
        let _ = ip.take_output(2);
        ip.down(2);
        ip.up(2);
        ip.settle().expect("settle");
        // Peer 2 reads its initial table (and End-of-RIB) before it
        // announces: otherwise what its queue held back would go out
        // coalesced with the changes its own routes cause, by mode.
        read_now(ip, 2);
        let half: Vec<DecodedUpdate> = synthetic_round(2, peers[2].asn, 5)
            .into_iter()
            .step_by(2)
            .collect();
        ip.updates(2, half);
        let _ = ip.settle();
        ip.up(5);
        let _ = ip.settle();
        // Peer 1 asks for everything again (enhanced: BoRR .. EoRR).
        ip.route_refresh(1, AfiSafi::IPV4_UNICAST);
    };
    let o = compare_modes("synthetic", &peers, &script);
    // The inputs really competed, and the monitor got the whole table.
    assert!(o.loc_rib.len() > 1200, "Loc-RIB has {}", o.loc_rib.len());
    let multi = o.loc_rib.iter().filter(|r| r.paths.len() >= 3).count();
    assert!(multi > 500, "only {multi} prefixes with 3+ paths");
    let best_from: std::collections::BTreeSet<u16> = o
        .loc_rib
        .iter()
        .filter_map(|r| r.best.as_ref().map(|b| b.0))
        .collect();
    assert!(best_from.len() >= 4, "best paths from {best_from:?} only");
    let monitor = &o.peers[5];
    assert_eq!(monitor.len(), o.loc_rib.len(), "monitor table size");
    // One End-of-RIB per family for the late peer, after the whole table.
    let m = &o.markers[5];
    let whole = Some(o.loc_rib.len());
    assert_eq!(
        m,
        &[
            ("EoR v4".to_string(), whole),
            ("EoR v6".to_string(), Some(0))
        ],
        "late peer: one End-of-RIB per family, after the whole table"
    );
    // Peer 1: EoR pair at its Up, then BoRR, the re-sent table, EoRR.
    let m = &o.markers[1];
    let names: Vec<&str> = m.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["EoR v4", "EoR v6", "BoRR v4", "EoRR v4"], "{m:?}");
    assert_eq!(
        m[3].1,
        Some(o.peers[1].len()),
        "peer 1's whole table between BoRR and EoRR: {m:?}"
    );
}

fn mrt_path() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt/updates.20190101.0000.gz");
    assert!(
        p.exists(),
        "{} is missing: the shared MRT data set is needed (see /work/shared/data/mrt/README.md)",
        p.display()
    );
    p
}

/// One UPDATE of the trace: fake peer index, decoded, its body and the
/// parse context it was decoded with.
type TraceUpdate = (usize, DecodedUpdate, bytes::Bytes, ParseCtx);

/// The first `limit` UPDATEs of the trace, in trace order: the trace's peers are spread over `npeers` fake
/// peers (the n-th peer seen goes to n % npeers), which take the AS and
/// address of the first trace peer each gets.
fn mrt_excerpt(npeers: usize, limit: usize) -> (Vec<FakePeer>, Vec<TraceUpdate>) {
    let mut r = mrt::MrtReader::open(mrt_path()).expect("open MRT file");
    let mut peers: Vec<(IpAddr, u32)> = Vec::new();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let Ok(rec) = rec else { continue };
        let mrt::Body::Message(m) = rec.body else {
            continue;
        };
        if m.bgp_type() != Some(msg_type::UPDATE) || m.is_add_path() {
            continue;
        }
        let key = (m.peering.peer_ip, m.peering.peer_as.0);
        let i = match peers.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                peers.push(key);
                peers.len() - 1
            }
        } % npeers;
        let ctx = ParseCtx {
            four_octet_asn: m.is_as4(),
            ..ParseCtx::legacy()
        };
        let Some(body) = m.message.get(bgp_wire::HEADER_LEN..) else {
            continue;
        };
        if let Decoded::Ok(d, _) = decode_update(body, ctx, true) {
            out.push((i, d, bytes::Bytes::copy_from_slice(body), ctx));
        }
        if out.len() >= limit {
            break;
        }
    }
    let fakes = peers
        .iter()
        .take(npeers)
        .map(|&(addr, asn)| FakePeer { asn, addr })
        .collect();
    (fakes, out)
}

#[test]
fn mrt_trace_excerpt_same_in_every_mode() {
    let (mut peers, updates) = mrt_excerpt(6, 30_000);
    assert!(
        peers.len() >= 3,
        "only {} peers in the excerpt",
        peers.len()
    );
    // A monitor that sends nothing.
    peers.push(FakePeer {
        asn: 64999,
        addr: IpAddr::V4(Ipv4Addr::new(10, 255, 255, 1)),
    });
    let n = peers.len();
    let script = move |ip: &InProc| {
        for i in 0..n {
            ip.up(i);
        }
        ip.settle().expect("settle");
        // Batches as a session would make them: consecutive UPDATEs of one
        // peer (and one parse context), up to 256. Modes with per-worker
        // streams get them raw, as their sessions hand them over.
        let raw = ip.sender().parses_raw();
        let links: Vec<_> = (0..n).map(|i| stream_link(i as u64 + 1)).collect();
        let mut batch: Vec<&TraceUpdate> = Vec::new();
        let send = |batch: &mut Vec<&TraceUpdate>| {
            let Some(&&(from, _, _, ctx)) = batch.first() else {
                return;
            };
            let b = std::mem::take(batch);
            if raw {
                let r = RawUpdates {
                    bodies: b.iter().map(|u| u.2.clone()).collect(),
                    ctx,
                    rx: bgp_core::decode::Receiver::of(true),
                    link: links[from].0.clone(),
                };
                assert!(ip.sender().blocking_send_raw(InProc::id(from), r));
            } else {
                ip.updates(from, b.iter().map(|u| u.1.clone()).collect());
            }
        };
        for u in &updates {
            if batch
                .first()
                .is_some_and(|f| f.0 != u.0 || f.3 != u.3 || batch.len() >= 256)
            {
                send(&mut batch);
            }
            batch.push(u);
        }
        send(&mut batch);
        for (_, rx) in &links {
            let mut rx = rx.lock().expect("lock");
            assert!(rx.try_recv().is_err(), "no UPDATE of the trace resets");
        }
    };
    let o = compare_modes("mrt", &peers, &script);
    assert!(o.loc_rib.len() > 5000, "Loc-RIB has {}", o.loc_rib.len());
    let monitor = &o.peers[n - 1];
    assert!(
        monitor.len() > 5000,
        "monitor Adj-RIB-Out has {}",
        monitor.len()
    );
}

/// Every peer fed from its own thread at once (as sessions do): in
/// `per-peer` the feeders apply to the locked stripes concurrently, in
/// `worker-pool` several workers hold batches of one peer at the same
/// time. The end state must not depend on the interleaving.
#[test]
fn concurrent_feeders_same_in_every_mode() {
    let peers: Vec<FakePeer> = (0..5).map(FakePeer::nth).collect();
    let script = |ip: &InProc| {
        for i in 0..peers.len() {
            ip.up(i);
        }
        ip.settle().expect("settle");
        std::thread::scope(|s| {
            // Peer 4 is the monitor: it sends nothing.
            for (i, p) in peers.iter().enumerate().take(4) {
                let tx = ip.sender();
                s.spawn(move || {
                    let send = |updates: Vec<DecodedUpdate>| {
                        tx.blocking_send(bgp_speaker::msg::RibInput::Updates {
                            peer: InProc::id(i),
                            updates,
                        })
                    };
                    for round in 0..3 {
                        // Small batches, so that one peer has several in
                        // flight.
                        for chunk in synthetic_round(i, p.asn, round).chunks(8) {
                            assert!(send(chunk.to_vec()), "RIB gone");
                        }
                    }
                    // Withdraw what was just (re-)announced, in part.
                    let w: Vec<Prefix> = (0..1500).step_by(i + 3).map(v4).collect();
                    assert!(send(vec![withdraw(&w)]), "RIB gone");
                });
            }
        });
    };
    let o = compare_modes("concurrent", &peers, &script);
    assert!(o.loc_rib.len() > 1200, "Loc-RIB has {}", o.loc_rib.len());
    assert_eq!(o.peers[4].len(), o.loc_rib.len(), "monitor table size");
}

/// Stress for the lock protocols (fine nodes: traversal + modify locks,
/// busy nodes skipped and come back to; worker turns per peer and part):
/// 8 feeders, batches of 2 UPDATEs so that one peer has many batches on
/// several workers at once, withdrawals racing re-announcements, repeated
/// 3 times per mode; every run must end as sequential does.
#[test]
fn lock_protocols_under_contention() {
    let peers: Vec<FakePeer> = (0..9).map(FakePeer::nth).collect();
    let script = |ip: &InProc| {
        for i in 0..peers.len() {
            ip.up(i);
        }
        ip.settle().expect("settle");
        std::thread::scope(|s| {
            for (i, p) in peers.iter().enumerate().take(8) {
                let tx = ip.sender();
                s.spawn(move || {
                    let send = |updates: Vec<DecodedUpdate>| {
                        tx.blocking_send(bgp_speaker::msg::RibInput::Updates {
                            peer: InProc::id(i),
                            updates,
                        })
                    };
                    for round in 0..2 {
                        for chunk in synthetic_round(i, p.asn, round).chunks(2) {
                            assert!(send(chunk.to_vec()), "RIB gone");
                        }
                        let w: Vec<Prefix> = (0..1500).step_by(i + 2).map(v4).collect();
                        for chunk in w.chunks(16) {
                            assert!(send(vec![withdraw(chunk)]), "RIB gone");
                        }
                    }
                });
            }
        });
    };
    let base = run(Mode::Sequential, &peers, &script);
    assert!(
        base.loc_rib.len() > 500,
        "Loc-RIB has {}",
        base.loc_rib.len()
    );
    for mode in [
        Mode::PerPeer(Locks::Fine),
        Mode::WorkerPool(4, Locks::Fine),
        Mode::WorkerStreams(3, Locks::Fine),
        Mode::PerPeer(Locks::Stripes),
    ] {
        for k in 0..3 {
            let o = run(mode, &peers, &script);
            assert!(
                o.loc_rib == base.loc_rib,
                "{mode:?} run {k}: Loc-RIB differs"
            );
            assert!(
                o.peers == base.peers,
                "{mode:?} run {k}: Adj-RIB-Out differs"
            );
        }
    }
}

/// A connection's link for per-worker streams, and the session's end of
/// the reset channel.
type ResetRx = std::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<(u64, bgp_fsm::Event)>>;
fn stream_link(session: u64) -> (std::sync::Arc<StreamLink>, ResetRx) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let status = std::sync::Arc::new(bgp_speaker::msg::PeerStatus::default());
    (
        StreamLink::new(session, format!("peer{session}"), status, tx),
        std::sync::Mutex::new(rx),
    )
}

/// Per-worker streams and a malformed UPDATE: the worker that parses it
/// applies the UPDATEs before it, drops the rest of its batch, tells the
/// session (once) which event resets it, and every later batch of that
/// connection is dropped even when another worker parsed it first. The
/// Loc-RIB is then what sequential parsing gives for the UPDATEs before
/// the malformed one.
#[test]
fn per_worker_streams_reset_drops_what_follows() {
    let (mut peers, updates) = mrt_excerpt(1, 3000);
    let ctx = updates[0].3;
    let good: Vec<&TraceUpdate> = updates.iter().filter(|u| u.3 == ctx).collect();
    assert!(good.len() > 1000, "{} UPDATEs", good.len());
    peers.push(FakePeer::nth(1));
    // Withdrawn Routes Length 5 with nothing after it (RFC 4271 §6.3,
    // RFC 7606 §3 c: the session is reset).
    let bad = bytes::Bytes::from_static(&[0, 5]);
    let (head, tail) = good.split_at(300);
    let expected = {
        let ip = InProc::start(Mode::Sequential, &peers).expect("start");
        ip.up(0);
        ip.up(1);
        ip.updates(0, head.iter().map(|u| u.1.clone()).collect());
        ip.settle().expect("settle");
        let r = ip.loc_rib().expect("loc rib");
        ip.shutdown();
        r
    };
    assert!(expected.len() > 100, "{} routes", expected.len());
    for mode in [
        Mode::WorkerStreams(2, Locks::Stripes),
        Mode::WorkerStreams(4, Locks::Fine),
        // Without streams the raw batch is decoded on the caller: the
        // same outcome.
        Mode::WorkerPool(2, Locks::Stripes),
    ] {
        let ip = InProc::start(mode, &peers).expect("start");
        ip.up(0);
        ip.up(1);
        ip.settle().expect("settle");
        let (link, rx) = stream_link(7);
        let raw = |bodies: Vec<bytes::Bytes>| RawUpdates {
            bodies,
            ctx,
            rx: bgp_core::decode::Receiver::of(true),
            link: link.clone(),
        };
        // Batch 1: the first 100, batch 2: 200 more, the malformed one,
        // 50 more; then many small batches that the workers parse while
        // batch 2 is parsed.
        let tx = ip.sender();
        let id = InProc::id(0);
        assert!(tx.blocking_send_raw(id, raw(head[..100].iter().map(|u| u.2.clone()).collect())));
        let mut b2: Vec<bytes::Bytes> = head[100..].iter().map(|u| u.2.clone()).collect();
        b2.push(bad.clone());
        b2.extend(tail[..50].iter().map(|u| u.2.clone()));
        assert!(tx.blocking_send_raw(id, raw(b2)));
        for chunk in tail[50..].chunks(4) {
            assert!(tx.blocking_send_raw(id, raw(chunk.iter().map(|u| u.2.clone()).collect())));
        }
        ip.settle().expect("settle");
        let got = ip.loc_rib().expect("loc rib");
        ip.shutdown();
        let mut rx = rx.lock().expect("lock");
        let (session, ev) = rx.try_recv().expect("the session is told to reset");
        assert_eq!(session, 7, "{mode:?}");
        assert_eq!(
            ev.kind(),
            bgp_fsm::EventKind::UpdateMsgErr,
            "{mode:?}: {ev:?}"
        );
        assert!(rx.try_recv().is_err(), "{mode:?}: told once");
        assert!(link.is_dead(), "{mode:?}");
        assert_eq!(got.len(), expected.len(), "{mode:?}: Loc-RIB size");
        assert!(got == expected, "{mode:?}: Loc-RIB differs from sequential");
    }
}
