//! Loads a synthetic table (default 10 peers × 100k shared IPv4 prefixes =
//! 1M paths, every peer announcing every prefix) into the RIB and prints
//! the memory it took per path, from /proc/self/status, for comparison with
//! BIRD (about 63 MiB peak RSS for the same 1M paths).
//!
//! Usage: `cargo run --release -p bgp-rib --example rib_mem -- [PEERS]
//! [PREFIXES] [SHARDS]`
//!
//! Routes are fed one UPDATE per path (the worst case for interning: every
//! path hashes its attribute set) through the full `apply_update` path
//! (import policy: accept all), straight from the generator, so that nothing
//! but the RIB grows between the two measurements.

use std::net::IpAddr;
use std::time::Instant;

use bgp_rib::{AcceptAll, AttrsBuilder, BestPathConfig, PeerConfig, PeerId, Rib};
use bgp_wire::{AsPath, AttrValue, Community, LargeCommunity, NextHop, Nlri, PathAttr};
use sim::{EntryBuf, RouteView, SynthConfig, SynthRib};

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

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

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let peers = args.first().copied().unwrap_or(10);
    let prefixes = args.get(1).copied().unwrap_or(100_000);
    let shards = args.get(2).copied().unwrap_or(1);
    let synth = SynthRib::generate(&SynthConfig {
        peers,
        prefixes_v4: prefixes,
        prefixes_v6: 0,
        all_peers_all_prefixes: true,
        seed: 1,
    });
    let mut rib = Rib::new(shards, BestPathConfig::default());
    for (i, p) in synth.peers.iter().enumerate() {
        rib.add_peer(
            PeerId(i as u16),
            PeerConfig {
                asn: p.asn,
                bgp_id: p.bgp_id,
                addr: p.addr,
                ebgp: true,
                keep_pre_policy: false,
                export: false,
            },
        );
    }
    let rss0 = status_kib("VmRSS:");
    let hwm0 = status_kib("VmHWM:");
    let t = Instant::now();
    let mut changed = Vec::new();
    let mut buf = EntryBuf::default();
    let mut updates = 0usize;
    for i in 0..synth.prefixes.len() {
        synth.entries(i, &mut buf);
        let nlri = [Nlri::new(synth.prefixes[i])];
        for r in buf.routes() {
            changed.clear();
            let b = builder(&r);
            rib.apply_update(
                PeerId(r.peer),
                &nlri,
                Some(&b),
                &[],
                &mut AcceptAll,
                &mut changed,
            )
            .expect("registered peer");
            updates += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let rss1 = status_kib("VmRSS:");
    let hwm1 = status_kib("VmHWM:");
    let paths = rib.path_count();
    assert_eq!(paths, updates);
    let per = |kib: u64| kib as f64 * 1024.0 / paths as f64;
    println!(
        "loaded {paths} paths ({} prefixes, {peers} peers, {shards} shard(s)) one UPDATE per path in {secs:.2} s = {:.2} M paths/s",
        rib.prefix_count(),
        paths as f64 / secs / 1e6
    );
    println!(
        "attribute sets: {} ({:.2} paths per set)",
        rib.attr_set_count(),
        paths as f64 / rib.attr_set_count().max(1) as f64
    );
    println!(
        "VmRSS  before {:>8} KiB after {:>8} KiB  delta {:>8} KiB = {:.1} bytes/path",
        rss0,
        rss1,
        rss1.saturating_sub(rss0),
        per(rss1.saturating_sub(rss0))
    );
    println!(
        "VmHWM  before {:>8} KiB after {:>8} KiB  (whole process peak)",
        hwm0, hwm1
    );
    let heap: usize = rib.shards().iter().map(|s| s.interner().heap_bytes()).sum();
    println!(
        "interner arena+index+TLVs (estimate, no malloc overhead): {:.1} bytes/path",
        heap as f64 / paths as f64
    );
}
