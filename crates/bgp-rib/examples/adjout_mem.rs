//! What each exporting peer costs in the RIB (issue 17, scenario c30 of
//! `tessera bench` in process): GEN generator peers each announce PER
//! unique IPv4 prefixes (synthetic attributes, a third of them with a
//! MED, which the eBGP propagation rules strip: a rewritten set), and the
//! RIB exports to a monitor peer only (`monitor`) or to every peer, the
//! generators included (`all`), as `tessera bench --export all` does.
//! Everything queued is drained after each batch (readers as fast as the
//! RIB), so what stays is the Adj-RIB-Out itself.
//!
//! Prints the process RSS growth and, per exporting peer, the heap bytes
//! its Adj-RIB-Out holds by itself (`RibShard::adj_out_heap_bytes`) and
//! the bytes shared by all peers of an update group
//! (`RibShard::shared_adj_out_heap_bytes`), from table capacities.
//!
//! Usage: `cargo run -p bgp-rib --example adjout_mem -- [all|monitor]
//! [GEN] [PER] [SHARDS]` (defaults: all 30 10000 2). With
//! `ADJOUT_PRIVATE=1` in the environment the policy names no update group,
//! so every peer keeps its own table (the representation before groups).

use std::net::{IpAddr, Ipv4Addr};

use base::Prefix;
use bgp_rib::{
    AcceptAll, AttrSet, AttrsBuilder, BestPathConfig, ExportPolicy, ExportVerdict, PeerConfig,
    PeerId, PeerRole, Propagation, Rib,
};
use bgp_wire::{AsPath, AttrValue, Community, NextHop, Nlri, PathAttr};
use sim::{EntryBuf, SynthConfig, SynthRib};

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Export everything (`all`) or to the monitor only, as the bench's
/// tesserad configuration does (`export = "accept"` or `"reject"` on the
/// generator peers).
struct Bench {
    all: bool,
    private: bool,
    monitor: PeerId,
}

impl ExportPolicy for Bench {
    fn export(&mut self, to: PeerId, _: &Prefix, _: PeerId, _: &AttrSet) -> ExportVerdict {
        if self.rejects_all(to) {
            ExportVerdict::Reject
        } else {
            ExportVerdict::Accept
        }
    }
    fn prefix_independent(&self, _: PeerId) -> bool {
        true
    }
    fn rejects_all(&self, to: PeerId) -> bool {
        !self.all && to != self.monitor
    }
    /// Peers exported to form one group, the others another (with
    /// `private`, none: every peer keeps its own table, as before update
    /// groups).
    fn export_group(&self, to: PeerId) -> Option<u64> {
        (!self.private).then_some(u64::from(self.rejects_all(to)))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all = args.first().is_none_or(|a| a != "monitor");
    let private = std::env::var_os("ADJOUT_PRIVATE").is_some();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (gens, per, shards) = (num(1, 30), num(2, 10_000), num(3, 2));
    let synth = SynthRib::generate(&SynthConfig {
        peers: 1,
        prefixes_v4: gens * per,
        prefixes_v6: 0,
        all_peers_all_prefixes: true,
        seed: 1,
    });
    let monitor = PeerId(gens as u16);
    let mut rib = Rib::new(shards, BestPathConfig::default());
    let mut roles = Vec::new();
    for i in 0..=gens {
        let bgp_id = Ipv4Addr::new(198, 18, (i >> 8) as u8, (i & 0xff) as u8 + 1);
        rib.add_peer(
            PeerId(i as u16),
            PeerConfig {
                asn: base::Asn(4_200_000_000 + i as u32),
                bgp_id,
                addr: IpAddr::V4(bgp_id),
                ebgp: true,
                keep_pre_policy: false,
                export: true,
            },
        );
        roles.push(Some(PeerRole {
            ebgp: true,
            confed: false,
            rr_client: false,
            rs_client: false,
            role: None,
            bgp_id,
        }));
    }
    let mut policy = Propagation {
        router_id: Ipv4Addr::new(198, 18, 255, 1),
        cluster_id: Ipv4Addr::new(198, 18, 255, 1),
        roles,
        inner: Bench {
            all,
            monitor,
            private,
        },
    };
    let rss0 = status_kib("VmRSS:");
    let mut buf = EntryBuf::default();
    let mut changed = Vec::new();
    let mut sent = 0usize;
    let ids: Vec<PeerId> = (0..=gens).map(|i| PeerId(i as u16)).collect();
    for (chunk, idx) in (0..synth.prefixes.len())
        .collect::<Vec<_>>()
        .chunks(1000)
        .enumerate()
    {
        for &i in idx {
            synth.entries(i, &mut buf);
            let Some(r) = buf.routes().next() else {
                continue;
            };
            let from = PeerId(((chunk * 1000 + i) % gens) as u16);
            let mut v = vec![
                PathAttr::new(AttrValue::Origin(r.origin)),
                PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
                    std::iter::once(4_200_000_000 + u32::from(from.0))
                        .chain(r.as_path.iter().copied())
                        .map(base::Asn)
                        .collect(),
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
            let mut b = AttrsBuilder::from_attrs(v);
            b.set_next_hop(NextHop::V4(Ipv4Addr::new(198, 18, 0, 1 + from.0 as u8)));
            rib.apply_update(
                from,
                &[Nlri::new(synth.prefixes[i])],
                Some(&b),
                &[],
                &mut AcceptAll,
                &mut changed,
            )
            .expect("registered peer");
        }
        for s in rib.shards_mut() {
            s.export_changes(&changed, &mut policy);
            for &to in &ids {
                let b = s.drain_updates(to);
                sent += b.announce.iter().map(|(_, v)| v.len()).sum::<usize>();
            }
        }
        changed.clear();
    }
    let rss1 = status_kib("VmRSS:");
    let exporting = if all { gens + 1 } else { 1 };
    let (mut own, mut pending) = (0usize, 0usize);
    let shared: usize = rib
        .shards()
        .iter()
        .map(|s| s.shared_adj_out_heap_bytes())
        .sum();
    for s in rib.shards() {
        for &to in &ids {
            let (a, b) = s.adj_out_heap_bytes(to);
            own += a;
            pending += b;
        }
    }
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    println!(
        "{} prefixes from {gens} generators, {shards} shard(s), export to {}: {sent} announcements",
        rib.prefix_count(),
        if all { "all" } else { "the monitor only" }
    );
    println!(
        "RSS growth {:.1} MiB; Adj-RIB-Out of each peer alone: {:.2} MiB sent + {:.3} MiB pending per exporting peer ({exporting})",
        (rss1.saturating_sub(rss0)) as f64 / 1024.0,
        mib(own) / exporting as f64,
        mib(pending) / exporting as f64,
    );
    let groups: Vec<usize> = (rib.shards().first().map(|s| s.update_groups()))
        .unwrap_or_default()
        .iter()
        .map(Vec::len)
        .collect();
    println!(
        "update groups (members each, shard 0): {groups:?}; their shared tables {:.2} MiB",
        mib(shared)
    );
    let mut h = bgp_rib::HeapBytes::default();
    for s in rib.shards() {
        let b = s.heap_bytes();
        h.loc_rib += b.loc_rib;
        h.interner += b.interner;
        h.adj_in += b.adj_in;
        h.adj_out_private += b.adj_out_private;
        h.groups += b.groups;
        h.pending += b.pending;
    }
    println!(
        "heap by structure (MiB, from capacities): Loc-RIB {:.1}, interner {:.1}, Adj-RIB-In {:.1}, private Adj-RIB-Out {:.1}, group tables {:.1}, pending {:.1}; peak RSS {:.1} MiB",
        mib(h.loc_rib),
        mib(h.interner),
        mib(h.adj_in),
        mib(h.adj_out_private),
        mib(h.groups),
        mib(h.pending),
        status_kib("VmHWM:") as f64 / 1024.0,
    );
}
