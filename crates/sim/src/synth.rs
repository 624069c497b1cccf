//! A synthetic RIB: N peers announcing M prefixes with realistic prefix
//! lengths, AS paths, MEDs and communities, generated from a seed.
//!
//! The prefix set is stored (it must be duplicate-free); the routes of each
//! prefix are regenerated on demand from a per-prefix seed into a reusable
//! [`EntryBuf`], so a 10M-path workload costs no more memory than its
//! prefixes.

use crate::dist::{Discrete, AS_PATH_LEN, V4_PREFIX_LEN, V6_PREFIX_LEN};
use crate::Rng;
use base::{Asn, Prefix, Prefix4, Prefix6};
use bgp_wire::Origin;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    pub peers: usize,
    pub prefixes_v4: usize,
    pub prefixes_v6: usize,
    /// When true every peer announces every prefix (best-path selection
    /// competes on every prefix); otherwise peer 0 is a full feed and the
    /// others cover a random 30-95% share each (peer 3, the first IPv6
    /// session, is a full IPv6 feed).
    pub all_peers_all_prefixes: bool,
    pub seed: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            peers: 12,
            prefixes_v4: 90_000,
            prefixes_v6: 10_000,
            all_peers_all_prefixes: false,
            seed: 1,
        }
    }
}

/// One peer of the synthetic collector.
#[derive(Clone, Debug)]
pub struct PeerSpec {
    pub asn: Asn,
    pub bgp_id: Ipv4Addr,
    /// Session address; IPv6 peers carry IPv6 routes only.
    pub addr: IpAddr,
    /// Share of the prefixes this peer announces.
    pub coverage: f64,
}

/// One route, borrowing its variable-length parts from an [`EntryBuf`].
#[derive(Copy, Clone, Debug)]
pub struct RouteView<'a> {
    pub peer: u16,
    pub origin: Origin,
    pub as_path: &'a [u32],
    pub next_hop: IpAddr,
    pub med: Option<u32>,
    pub communities: &'a [u32],
    pub large_communities: &'a [[u32; 3]],
}

#[derive(Copy, Clone, Debug)]
struct Entry {
    peer: u16,
    origin: Origin,
    path: (u32, u32),
    comms: (u32, u32),
    large: (u32, u32),
    med: Option<u32>,
}

/// Reusable storage for the routes of one prefix.
#[derive(Default, Debug)]
pub struct EntryBuf {
    entries: Vec<Entry>,
    asns: Vec<u32>,
    comms: Vec<u32>,
    large: Vec<[u32; 3]>,
    next_hops: Vec<IpAddr>,
}

impl EntryBuf {
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn routes(&self) -> impl Iterator<Item = RouteView<'_>> + '_ {
        self.entries.iter().map(move |e| RouteView {
            peer: e.peer,
            origin: e.origin,
            as_path: &self.asns[e.path.0 as usize..e.path.1 as usize],
            next_hop: self.next_hops[e.peer as usize],
            med: e.med,
            communities: &self.comms[e.comms.0 as usize..e.comms.1 as usize],
            large_communities: &self.large[e.large.0 as usize..e.large.1 as usize],
        })
    }
}

/// The generated table.
#[derive(Clone, Debug)]
pub struct SynthRib {
    pub peers: Vec<PeerSpec>,
    pub prefixes: Vec<Prefix>,
    seed: u64,
    all: bool,
    path_len: Discrete,
}

/// Well-known transit ASNs used as the collector's peers, so output looks
/// familiar to operators.
const PEER_ASNS: &[u32] = &[
    3356, 1299, 174, 2914, 6939, 6453, 3257, 6762, 7018, 3491, 1239, 5511, 6461, 4637, 7473, 9002,
];

const TRANSIT_POOL: u32 = 3_000;
const ORIGIN_POOL: u32 = 60_000;

fn mix(a: u64, b: u64) -> u64 {
    (a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left(29)
}

impl SynthRib {
    pub fn generate(cfg: &SynthConfig) -> SynthRib {
        let mut rng = Rng::new(cfg.seed);
        let peers = (0..cfg.peers)
            .map(|i| {
                let asn = PEER_ASNS
                    .get(i)
                    .copied()
                    .unwrap_or(64_512 + (i as u32 % 1000));
                // Every fourth peer is an IPv6 session; the rest IPv4. Addresses
                // come from 198.18.0.0/15 and 2001:db8::/32 (documentation and
                // benchmarking ranges), never routable ones.
                let addr = if cfg.prefixes_v6 > 0 && i % 4 == 3 {
                    IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16 + 1))
                } else {
                    IpAddr::V4(Ipv4Addr::new(198, 18, (i >> 8) as u8, (i & 0xff) as u8 + 1))
                };
                // Peer 0 (the first IPv4 session) and peer 3 (the first IPv6
                // one) are full feeds, so every prefix has a route.
                let coverage = if cfg.all_peers_all_prefixes || i == 0 || i == 3 {
                    1.0
                } else {
                    0.30 + 0.65 * rng.below(1000) as f64 / 1000.0
                };
                PeerSpec {
                    asn: Asn(asn),
                    bgp_id: Ipv4Addr::new(198, 18, (i >> 8) as u8, (i & 0xff) as u8 + 1),
                    addr,
                    coverage,
                }
            })
            .collect();
        let mut prefixes = Vec::with_capacity(cfg.prefixes_v4 + cfg.prefixes_v6);
        gen_v4(&mut rng, cfg.prefixes_v4, &mut prefixes);
        gen_v6(&mut rng, cfg.prefixes_v6, &mut prefixes);
        // MRT RIB dumps list prefixes in order; sort so ours do too.
        prefixes.sort_unstable();
        SynthRib {
            peers,
            prefixes,
            seed: cfg.seed,
            all: cfg.all_peers_all_prefixes,
            path_len: Discrete::new(AS_PATH_LEN),
        }
    }

    /// Fills `buf` with the routes of prefix number `idx`, one per peer that
    /// announces it. Deterministic for a given seed and index.
    pub fn entries(&self, idx: usize, buf: &mut EntryBuf) {
        buf.entries.clear();
        buf.asns.clear();
        buf.comms.clear();
        buf.large.clear();
        buf.next_hops.clear();
        buf.next_hops.extend(self.peers.iter().map(|p| p.addr));
        let Some(prefix) = self.prefixes.get(idx) else {
            return;
        };
        let v6 = matches!(prefix, Prefix::V6(_));
        let mut rng = Rng::new(mix(self.seed, idx as u64 + 1));
        // Origin ASes are skewed: squaring a uniform variate gives a few
        // origins many prefixes, as in the real table.
        let u = rng.below(1 << 20) as f64 / (1 << 20) as f64;
        let origin_as = 1_000 + (u * u * ORIGIN_POOL as f64) as u32;
        let origin_as = if origin_as.is_multiple_of(7) {
            // Some origins have 4-octet ASNs (RFC 6793).
            196_608 + origin_as
        } else {
            origin_as
        };
        // Path length and prepending belong to the origin, like its
        // upstreams do.
        let mut orng = Rng::new(mix(self.seed ^ 0x5eed, origin_as as u64));
        let base_len = self.path_len.sample(&mut orng).max(1);
        let origin = match orng.below(100) {
            0..=89 => Origin::Igp,
            90 => Origin::Egp,
            _ => Origin::Incomplete,
        };
        let prepend = if orng.chance(0.04) {
            1 + orng.below(3)
        } else {
            0
        };
        for (pi, peer) in self.peers.iter().enumerate() {
            if v6 != matches!(peer.addr, IpAddr::V6(_)) {
                continue;
            }
            if !self.all && !rng.chance(peer.coverage) {
                continue;
            }
            // What a peer attaches depends on the (peer, origin AS) pair, not
            // on the prefix, so prefixes of one origin share attribute sets
            // as they do in real tables (about 3 routes per set).
            let mut prng = Rng::new(mix(mix(self.seed, origin_as as u64), pi as u64 + 17));
            let start = buf.asns.len() as u32;
            // Peers see the prefix over paths of slightly different lengths.
            let len = (base_len as i32 + prng.below(3) as i32 - 1).max(1) as u32;
            buf.asns.push(peer.asn.0);
            for hop in 1..len.saturating_sub(1) {
                let h = mix(
                    mix(self.seed, origin_as as u64),
                    ((hop as u64) << 8) | (pi as u64 % 3),
                );
                buf.asns.push(10_000 + (h % TRANSIT_POOL as u64) as u32);
            }
            if len >= 2 {
                buf.asns.push(origin_as);
            }
            for _ in 0..prepend {
                buf.asns.push(origin_as);
            }
            let path = (start, buf.asns.len() as u32);
            let cstart = buf.comms.len() as u32;
            for _ in 0..prng.below(4) {
                buf.comms
                    .push(((peer.asn.0 & 0xffff) << 16) | (prng.below(4000) as u32 + 1));
            }
            let lstart = buf.large.len() as u32;
            if prng.chance(0.1) {
                buf.large.push([peer.asn.0, 1, prng.below(100) as u32]);
            }
            let med = if pi % 3 == 1 {
                Some(prng.below(500) as u32)
            } else {
                None
            };
            buf.entries.push(Entry {
                peer: pi as u16,
                origin,
                path,
                comms: (cstart, buf.comms.len() as u32),
                large: (lstart, buf.large.len() as u32),
                med,
            });
        }
    }
}

/// Unicast IPv4 space, avoiding 0/8, 10/8, 127/8, 224/3 and the like.
fn gen_v4(rng: &mut Rng, n: usize, out: &mut Vec<Prefix>) {
    let lens = Discrete::new(V4_PREFIX_LEN);
    let mut seen = HashSet::with_capacity(n);
    let mut tries = 0usize;
    while seen.len() < n && tries < n * 20 + 1000 {
        tries += 1;
        let first = 1 + rng.below(222) as u32;
        if matches!(first, 10 | 100 | 127 | 169 | 172 | 192 | 198) {
            continue;
        }
        let addr = first << 24 | (rng.next_u32() & 0x00ff_ffff);
        let len = lens.sample(rng).max(8);
        let Ok(p) = Prefix4::new(addr, len) else {
            continue;
        };
        let p = p.masked();
        if seen.insert(p) {
            out.push(Prefix::V4(p));
        }
    }
}

/// Global unicast IPv6 space (2000::/3), outside the documentation prefix.
fn gen_v6(rng: &mut Rng, n: usize, out: &mut Vec<Prefix>) {
    let lens = Discrete::new(V6_PREFIX_LEN);
    let mut seen = HashSet::with_capacity(n);
    let mut tries = 0usize;
    while seen.len() < n && tries < n * 20 + 1000 {
        tries += 1;
        let hi = 0x2000u128 | (rng.below(0x0c00) as u128 + 0x0400);
        let addr = hi << 112 | (rng.next_u64() as u128) << 48;
        let Ok(p) = Prefix6::new(addr, lens.sample(rng).max(16)) else {
            continue;
        };
        let p = p.masked();
        if seen.insert(p) {
            out.push(Prefix::V6(p));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_realistic() {
        let cfg = SynthConfig {
            peers: 12,
            prefixes_v4: 20_000,
            prefixes_v6: 2_000,
            ..SynthConfig::default()
        };
        let a = SynthRib::generate(&cfg);
        let b = SynthRib::generate(&cfg);
        assert_eq!(a.prefixes, b.prefixes);
        assert_eq!(a.prefixes.len(), 22_000);
        let uniq: HashSet<_> = a.prefixes.iter().collect();
        assert_eq!(uniq.len(), a.prefixes.len(), "prefixes must be unique");

        let (mut buf, mut buf2) = (EntryBuf::default(), EntryBuf::default());
        let mut entries = 0usize;
        let mut path_total = 0usize;
        let mut v4_24 = 0usize;
        for i in 0..a.prefixes.len() {
            a.entries(i, &mut buf);
            b.entries(i, &mut buf2);
            assert_eq!(buf.len(), buf2.len());
            let v6 = matches!(a.prefixes[i], Prefix::V6(_));
            if !v6 {
                // Peer 0 is a full feed.
                assert_eq!(buf.routes().next().map(|r| r.peer), Some(0));
                if a.prefixes[i].len() == 24 {
                    v4_24 += 1;
                }
            }
            for r in buf.routes() {
                assert_eq!(r.as_path[0], a.peers[r.peer as usize].asn.0);
                assert_eq!(v6, r.next_hop.is_ipv6());
                path_total += r.as_path.len();
                entries += 1;
            }
        }
        let mean = path_total as f64 / entries as f64;
        assert!((3.5..5.5).contains(&mean), "mean AS path length {mean}");
        let share = v4_24 as f64 / 20_000.0;
        assert!((0.48..0.58).contains(&share), "/24 share {share}");
        assert!(entries > 22_000 * 3, "peers overlap: {entries} entries");
    }

    #[test]
    fn all_peers_all_prefixes_gives_every_peer_every_prefix_of_its_family() {
        let cfg = SynthConfig {
            peers: 4,
            prefixes_v4: 500,
            prefixes_v6: 0,
            all_peers_all_prefixes: true,
            seed: 3,
        };
        let r = SynthRib::generate(&cfg);
        let mut buf = EntryBuf::default();
        for i in 0..r.prefixes.len() {
            r.entries(i, &mut buf);
            assert_eq!(buf.len(), 4);
        }
    }
}
