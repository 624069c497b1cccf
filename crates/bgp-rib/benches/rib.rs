//! RIB benchmarks on synthetic tables from `sim`:
//! * insert: 1 peer × 500k prefixes, and 10 peers × 100k shared prefixes
//!   (different AS paths per peer), fed as UPDATEs packed by attribute set;
//! * best path: one selection among 10 paths, and reselecting 20k prefixes
//!   when their best peer goes down;
//! * export: queueing a 100k-prefix Loc-RIB to a peer and draining it packed
//!   by attribute set;
//! * parts: what two RIB parts cost on the import side without threads
//!   (issue 17): the 10 x 100k shared table into one shard, into one shard
//!   cut as two parts receive it, and into two shards on one thread.

use std::collections::HashMap;
use std::net::IpAddr;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use bgp_rib::bestpath::{select, Candidate};
use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, PeerConfig, PeerId, RibShard};
use bgp_wire::{AsPath, AttrValue, Community, LargeCommunity, NextHop, Nlri, PathAttr};
use sim::{EntryBuf, RouteView, SynthConfig, SynthRib};

fn builder(r: &RouteView<'_>) -> AttrsBuilder {
    let mut v = vec![
        PathAttr::new(AttrValue::Origin(r.origin)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            r.as_path.iter().map(|&a| base::Asn(a)).collect(),
        ))),
    ];
    if let Some(m) = r.med {
        v.push(PathAttr::new(AttrValue::Med(m)));
    }
    if !r.communities.is_empty() {
        v.push(PathAttr::new(AttrValue::Communities(
            r.communities.iter().map(|&c| Community(c)).collect(),
        )));
    }
    if !r.large_communities.is_empty() {
        v.push(PathAttr::new(AttrValue::LargeCommunities(
            r.large_communities
                .iter()
                .map(|l| LargeCommunity {
                    global_admin: l[0],
                    local_data1: l[1],
                    local_data2: l[2],
                })
                .collect(),
        )));
    }
    let mut b = AttrsBuilder::from_attrs(v);
    b.set_next_hop(match r.next_hop {
        IpAddr::V4(a) => NextHop::V4(a),
        IpAddr::V6(a) => NextHop::V6(a),
    });
    b.mark_clean();
    b
}

/// A workload: peers and UPDATEs (peer, attributes, prefixes), packed by
/// (peer, attribute set) as a peer would send them.
struct Workload {
    peers: Vec<PeerConfig>,
    updates: Vec<(PeerId, AttrsBuilder, Vec<Nlri>)>,
    paths: usize,
}

fn workload(peers: usize, prefixes: usize) -> Workload {
    let synth = SynthRib::generate(&SynthConfig {
        peers,
        prefixes_v4: prefixes,
        prefixes_v6: 0,
        all_peers_all_prefixes: true,
        seed: 7,
    });
    let mut buf = EntryBuf::default();
    let mut groups: HashMap<(u16, String), (AttrsBuilder, Vec<Nlri>)> = HashMap::new();
    let mut paths = 0;
    for (i, p) in synth.prefixes.iter().enumerate() {
        synth.entries(i, &mut buf);
        for r in buf.routes() {
            let key = format!(
                "{:?}",
                (
                    r.origin,
                    r.as_path,
                    r.med,
                    r.communities,
                    r.large_communities
                )
            );
            groups
                .entry((r.peer, key))
                .or_insert_with(|| (builder(&r), Vec::new()))
                .1
                .push(Nlri::new(*p));
            paths += 1;
        }
    }
    let mut updates: Vec<_> = groups
        .into_iter()
        .map(|((peer, _), (b, n))| (PeerId(peer), b, n))
        .collect();
    // Deterministic order; real UPDATEs carry at most a few hundred
    // prefixes, so split big groups.
    updates.sort_by(|a, b| (a.0, &a.2).cmp(&(b.0, &b.2)));
    let mut split = Vec::with_capacity(updates.len());
    for (p, b, n) in updates {
        for c in n.chunks(400) {
            split.push((p, b.clone(), c.to_vec()));
        }
    }
    let peers = synth
        .peers
        .iter()
        .map(|p| PeerConfig {
            asn: p.asn,
            bgp_id: p.bgp_id,
            addr: p.addr,
            ebgp: true,
            keep_pre_policy: false,
            export: false,
        })
        .collect();
    Workload {
        peers,
        updates: split,
        paths,
    }
}

/// An empty shard with `w`'s peers.
fn shard(w: &Workload) -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    for (i, p) in w.peers.iter().enumerate() {
        s.add_peer(PeerId(i as u16), p.clone());
    }
    s
}

fn load(w: &Workload) -> RibShard {
    let mut s = shard(w);
    let mut changed = Vec::new();
    for (peer, b, n) in &w.updates {
        changed.clear();
        s.apply_update(*peer, n, Some(b), &[], &mut AcceptAll, &mut changed)
            .expect("registered peer");
    }
    s
}

fn insert(c: &mut Criterion) {
    let mut g = c.benchmark_group("insert");
    g.sample_size(10);
    for (name, peers, prefixes) in [
        ("1peer_500k", 1usize, 500_000usize),
        ("10peers_100k_shared", 10, 100_000),
    ] {
        let w = workload(peers, prefixes);
        g.throughput(Throughput::Elements(w.paths as u64));
        g.bench_function(name, |b| {
            b.iter_with_large_drop(|| {
                let s = load(&w);
                assert_eq!(s.path_count(), w.paths);
                s
            })
        });
    }
    g.finish();
}

/// `w`'s UPDATEs cut by owning part of `parts` (`shard_for`), as the
/// sessions' split hands them over: (part, index into `w.updates`,
/// that part's prefixes), in arrival order.
fn cut(w: &Workload, parts: usize) -> Vec<(usize, usize, Vec<Nlri>)> {
    let mut out = Vec::new();
    let mut pieces: Vec<Vec<Nlri>> = vec![Vec::new(); parts];
    for (i, (_, _, n)) in w.updates.iter().enumerate() {
        for x in n {
            pieces[bgp_rib::shard_for(&x.prefix, parts)].push(*x);
        }
        for (k, p) in pieces.iter_mut().enumerate() {
            if !p.is_empty() {
                out.push((k, i, std::mem::take(p)));
            }
        }
    }
    out
}

/// One thread applies the pieces of [`cut`] into `tables` shards (a
/// piece of part `k` into shard `k % tables`).
fn load_cut(w: &Workload, pieces: &[(usize, usize, Vec<Nlri>)], tables: usize) -> Vec<RibShard> {
    let mut ss: Vec<RibShard> = (0..tables).map(|_| shard(w)).collect();
    let mut changed = Vec::new();
    for (k, i, n) in pieces {
        let (peer, b, _) = &w.updates[*i];
        changed.clear();
        ss[k % tables]
            .apply_update(*peer, n, Some(b), &[], &mut AcceptAll, &mut changed)
            .expect("registered peer");
    }
    ss
}

/// What two RIB parts cost on the import side without threads (issue
/// 17): the 10 x 100k shared table into one shard whole, into one shard
/// cut as two parts would get it (more, smaller UPDATEs), and into two
/// shards, one per part, on one thread.
fn parts(c: &mut Criterion) {
    let mut g = c.benchmark_group("parts");
    g.sample_size(10);
    let w = workload(10, 100_000);
    let pieces = cut(&w, 2);
    g.throughput(Throughput::Elements(w.paths as u64));
    g.bench_function("one_shard_whole", |b| b.iter_with_large_drop(|| load(&w)));
    for (name, tables) in [("one_shard_cut_in_two", 1), ("two_shards", 2)] {
        g.bench_function(name, |b| {
            b.iter_with_large_drop(|| {
                let ss = load_cut(&w, &pieces, tables);
                assert_eq!(ss.iter().map(RibShard::path_count).sum::<usize>(), w.paths);
                ss
            })
        });
    }
    g.finish();
}

fn bestpath(c: &mut Criterion) {
    let mut g = c.benchmark_group("bestpath");
    let w = workload(10, 20_000);
    let shard = load(&w);
    // One selection among the 10 paths of a prefix.
    let r = shard.iter().next().expect("non-empty");
    let summaries: Vec<_> = r.iter().map(|(p, a)| (p, *a.summary())).collect();
    let cands: Vec<Candidate<'_>> = summaries
        .iter()
        .map(|(p, s)| {
            let cfg = shard.peer(p.peer).expect("peer");
            Candidate {
                summary: s,
                ebgp: cfg.ebgp,
                peer_bgp_id: u32::from(cfg.bgp_id),
                peer_addr: cfg.addr,
                path_id: p.path_id,
                igp_cost: s.igp_metric(),
            }
        })
        .collect();
    let cfg = BestPathConfig::default();
    g.bench_function("select_10_paths", |b| b.iter(|| select(&cands, &cfg)));
    let det = BestPathConfig {
        deterministic_med: true,
        ..cfg
    };
    g.bench_function("select_10_paths_deterministic_med", |b| {
        b.iter(|| select(&cands, &det))
    });
    // Reselect every prefix whose best peer went down.
    let best_peer = r.best().expect("best").0.peer;
    drop(summaries);
    g.sample_size(10);
    g.throughput(Throughput::Elements(20_000));
    g.bench_function("peer_down_reselect_20k_prefixes", |b| {
        b.iter_batched(
            || load(&w),
            |mut s| {
                let mut changed = Vec::new();
                s.peer_down(best_peer, &mut changed).expect("peer");
                assert!(!changed.is_empty());
                s
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn export(c: &mut Criterion) {
    let mut g = c.benchmark_group("export");
    g.sample_size(10);
    let w = workload(1, 100_000);
    let mut s = load(&w);
    let to = PeerId(1);
    s.add_peer(
        to,
        PeerConfig {
            asn: base::Asn(64999),
            bgp_id: "192.0.2.99".parse().expect("addr"),
            addr: "192.0.2.99".parse().expect("addr"),
            ebgp: true,
            keep_pre_policy: false,
            export: true,
        },
    );
    g.throughput(Throughput::Elements(100_000));
    g.bench_function("full_table_100k_pack", |b| {
        b.iter(|| {
            // Reset the Adj-RIB-Out so every round sends the whole table.
            let mut changed = Vec::new();
            s.peer_down(to, &mut changed).expect("peer");
            s.export_full(to, &mut AcceptAll).expect("peer");
            let batch = s.drain_updates(to);
            assert!(batch.announce.len() < 100_000);
            batch.announce.len()
        })
    });
    g.finish();
}

criterion_group!(benches, insert, parts, bestpath, export);
criterion_main!(benches);
