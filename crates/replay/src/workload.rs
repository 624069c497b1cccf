//! Workloads: what each replayed peer sends, pre-encoded as wire bytes.
//!
//! Encode once, write many: every peer's UPDATEs are built before any
//! session opens, so the send loop is nothing but `write` calls on
//! ready-made buffers and the measured rate is the DUT's, not the
//! encoder's. Routes are packed by attribute set (RFC 4271 §4.3: one UPDATE
//! carries one set of path attributes and any number of NLRI), as a real
//! speaker dumping its Adj-RIB-Out would.
//!
//! Synthetic workloads come from [`sim::SynthRib`], so prefix lengths and
//! AS-path lengths follow real tables. MRT-driven workloads (issue 5) will
//! produce the same [`Feed`] type.

use crate::error::ReplayError;
use base::{Asn, Prefix, Prefix4};
use bgp_wire::{
    AsPath, AttrValue, Community, LargeCommunity, Nlri, ParseCtx, PathAttr, HEADER_LEN, MARKER,
};
use sim::{EntryBuf, RouteView, SynthConfig, SynthRib};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// RFC 4271 §4: without extended messages (RFC 8654) a message is at most
/// 4096 octets. Replay never negotiates extended messages, so every DUT
/// can take what we send.
pub const MAX_MESSAGE: usize = 4096;

/// Target size of one write: big enough that syscalls are not the
/// bottleneck, small enough that the per-second report moves smoothly.
const CHUNK_BYTES: usize = 64 * 1024;

/// How the peers' prefix sets relate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Every peer announces the same prefixes, each with its own AS path,
    /// MED and communities, so best-path selection competes on every prefix.
    Shared,
    /// Peers announce disjoint prefix sets.
    Unique,
}

/// A synthetic workload: `peers` peers, `prefixes` IPv4 prefixes each.
#[derive(Copy, Clone, Debug)]
pub struct SyntheticSpec {
    pub peers: usize,
    pub prefixes: usize,
    pub sharing: Sharing,
    pub seed: u64,
}

/// Per-peer session facts that change the encoded attributes.
#[derive(Copy, Clone, Debug)]
pub struct FeedParams {
    /// The AS this replayed peer speaks as.
    pub local_as: Asn,
    /// iBGP: the path is sent as learned (no own AS prepended) with
    /// LOCAL_PREF (RFC 4271 §5.1.5); eBGP: our AS leads the path (§5.1.2).
    pub ibgp: bool,
    /// NEXT_HOP (RFC 4271 §5.1.3); normally the session's source address.
    pub next_hop: Ipv4Addr,
}

/// A run of whole messages inside [`Feed::bytes`], written with one call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// End offset (exclusive) in `bytes`; the chunk starts where the
    /// previous one ended.
    pub end: usize,
    pub messages: u32,
    pub prefixes: u32,
}

/// One peer's pre-encoded announcements, End-of-RIB not included.
#[derive(Clone, Debug, Default)]
pub struct Feed {
    pub bytes: Vec<u8>,
    pub chunks: Vec<Chunk>,
    pub messages: u64,
    pub prefixes: u64,
    /// Distinct attribute sets, i.e. how well the routes packed.
    pub attr_sets: usize,
}

impl Feed {
    /// The chunks with their byte ranges.
    pub fn chunk_slices(&self) -> impl Iterator<Item = (&[u8], Chunk)> + '_ {
        let mut start = 0;
        self.chunks.iter().map(move |c| {
            let s = self.bytes.get(start..c.end).unwrap_or(&[]);
            start = c.end;
            (s, *c)
        })
    }
}

/// What every peer sends.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub feeds: Vec<Feed>,
}

impl Workload {
    pub fn total_prefixes(&self) -> u64 {
        self.feeds.iter().map(|f| f.prefixes).sum()
    }

    pub fn total_messages(&self) -> u64 {
        self.feeds.iter().map(|f| f.messages).sum()
    }

    /// Builds a synthetic workload; `params` has one entry per peer.
    pub fn synthetic(spec: &SyntheticSpec, params: &[FeedParams]) -> Result<Workload, ReplayError> {
        if spec.peers == 0 || spec.peers > usize::from(u16::MAX) {
            return Err(ReplayError::Config("peer count must be 1..=65535"));
        }
        if params.len() != spec.peers {
            return Err(ReplayError::Config("one FeedParams per peer"));
        }
        let total = match spec.sharing {
            Sharing::Shared => spec.prefixes,
            Sharing::Unique => spec
                .prefixes
                .checked_mul(spec.peers)
                .ok_or(ReplayError::Config("too many prefixes"))?,
        };
        // The generator draws from roughly 3.4 billion unicast addresses
        // and mostly /24s; far beyond what one run can hold, but say so
        // rather than send fewer than asked.
        if total > 50_000_000 {
            return Err(ReplayError::Config("at most 50M distinct prefixes"));
        }
        let cfg = SynthConfig {
            peers: spec.peers,
            prefixes_v4: total,
            prefixes_v6: 0,
            // Unique mode also generates every peer's route for each prefix
            // and keeps one: wasteful but keeps the per-peer attribute mix
            // the same in both modes.
            all_peers_all_prefixes: true,
            seed: spec.seed,
        };
        let rib = SynthRib::generate(&cfg);
        if rib.prefixes.len() != total {
            return Err(ReplayError::Config(
                "generator could not find enough distinct prefixes",
            ));
        }
        let mut packers: Vec<Packer> = params.iter().map(|p| Packer::new(*p)).collect();
        let mut buf = EntryBuf::default();
        for (idx, prefix) in rib.prefixes.iter().enumerate() {
            let Prefix::V4(p4) = *prefix else { continue };
            rib.entries(idx, &mut buf);
            match spec.sharing {
                Sharing::Shared => {
                    for r in buf.routes() {
                        if let Some(pk) = packers.get_mut(usize::from(r.peer)) {
                            pk.add(p4, &r);
                        }
                    }
                }
                Sharing::Unique => {
                    let owner = idx % spec.peers;
                    if let (Some(r), Some(pk)) = (
                        buf.routes().find(|r| usize::from(r.peer) == owner),
                        packers.get_mut(owner),
                    ) {
                        pk.add(p4, &r);
                    }
                }
            }
        }
        let feeds = packers
            .into_iter()
            .map(Packer::finish)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Workload { feeds })
    }
}

/// The IPv4 unicast End-of-RIB marker: an UPDATE with no withdrawn routes,
/// no attributes and no NLRI (RFC 4724 §2).
pub fn end_of_rib_v4() -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 4);
    let s = begin(&mut out);
    out.extend_from_slice(&[0, 0, 0, 0]);
    finish(&mut out, s);
    out
}

/// The context our UPDATEs are encoded in: 4-octet ASNs (required of the
/// peer at OPEN), no extended messages, no ADD-PATH.
pub const fn send_ctx() -> ParseCtx {
    ParseCtx::legacy().with_four_octet_asn(true)
}

/// Groups one peer's routes by encoded attribute bytes, then frames them.
struct Packer {
    params: FeedParams,
    index: HashMap<Vec<u8>, usize>,
    groups: Vec<(Vec<u8>, Vec<Prefix4>)>,
    scratch: Vec<u8>,
}

impl Packer {
    fn new(params: FeedParams) -> Packer {
        Packer {
            params,
            index: HashMap::new(),
            groups: Vec::new(),
            scratch: Vec::with_capacity(256),
        }
    }

    fn add(&mut self, prefix: Prefix4, r: &RouteView<'_>) {
        self.scratch.clear();
        encode_attrs(&self.params, r, &mut self.scratch);
        // Look up by slice so that only a new attribute set allocates.
        let gi = match self.index.get(self.scratch.as_slice()) {
            Some(&gi) => gi,
            None => {
                let gi = self.groups.len();
                self.groups.push((self.scratch.clone(), Vec::new()));
                self.index.insert(self.scratch.clone(), gi);
                gi
            }
        };
        if let Some(g) = self.groups.get_mut(gi) {
            g.1.push(prefix);
        }
    }

    fn finish(self) -> Result<Feed, ReplayError> {
        let mut feed = Feed {
            attr_sets: self.groups.len(),
            ..Feed::default()
        };
        let mut chunk = Chunk {
            end: 0,
            messages: 0,
            prefixes: 0,
        };
        let mut nlri = Vec::with_capacity(MAX_MESSAGE);
        for (attrs, prefixes) in &self.groups {
            // Header, withdrawn length, attribute length, attributes.
            let fixed = HEADER_LEN + 2 + 2 + attrs.len();
            let room = MAX_MESSAGE
                .checked_sub(fixed)
                .filter(|r| *r >= 5)
                .ok_or(ReplayError::Encode)?;
            let mut rest = prefixes.as_slice();
            while !rest.is_empty() {
                nlri.clear();
                let mut n = 0usize;
                for p in rest {
                    let e = Nlri::new(Prefix::V4(*p));
                    if nlri.len() + e.encoded_len() > room {
                        break;
                    }
                    e.encode(&mut nlri);
                    n += 1;
                }
                rest = rest.get(n..).unwrap_or(&[]);
                let s = begin(&mut feed.bytes);
                feed.bytes.extend_from_slice(&[0, 0]);
                let alen = u16::try_from(attrs.len()).map_err(|_| ReplayError::Encode)?;
                feed.bytes.extend_from_slice(&alen.to_be_bytes());
                feed.bytes.extend_from_slice(attrs);
                feed.bytes.extend_from_slice(&nlri);
                finish(&mut feed.bytes, s);
                chunk.messages += 1;
                chunk.prefixes += n as u32;
                feed.messages += 1;
                feed.prefixes += n as u64;
                if feed.bytes.len() - chunk.end >= CHUNK_BYTES {
                    chunk.end = feed.bytes.len();
                    feed.chunks.push(chunk);
                    chunk.messages = 0;
                    chunk.prefixes = 0;
                }
            }
        }
        if feed.bytes.len() > chunk.end {
            chunk.end = feed.bytes.len();
            feed.chunks.push(chunk);
        }
        Ok(feed)
    }
}

/// Appends the path attributes of one route in type-code order
/// (RFC 4271 §5 does not require an order, but sorted is what most
/// speakers send and what BIRD expects for fast paths).
fn encode_attrs(p: &FeedParams, r: &RouteView<'_>, out: &mut Vec<u8>) {
    let ctx = send_ctx();
    PathAttr::new(AttrValue::Origin(r.origin)).encode(ctx, out);
    // The generator's first ASN is its own idea of the neighbour; on eBGP
    // the neighbour is us, so our AS replaces it (RFC 4271 §5.1.2). iBGP
    // carries the path as learned from outside.
    let asns: Vec<Asn> = if p.ibgp {
        r.as_path.iter().map(|&a| Asn(a)).collect()
    } else {
        std::iter::once(p.local_as)
            .chain(r.as_path.iter().skip(1).map(|&a| Asn(a)))
            .collect()
    };
    PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(asns))).encode(ctx, out);
    PathAttr::new(AttrValue::NextHop(p.next_hop)).encode(ctx, out);
    if let Some(med) = r.med {
        PathAttr::new(AttrValue::Med(med)).encode(ctx, out);
    }
    if p.ibgp {
        PathAttr::new(AttrValue::LocalPref(100)).encode(ctx, out);
    }
    if !r.communities.is_empty() {
        let c = r.communities.iter().map(|&c| Community(c)).collect();
        PathAttr::new(AttrValue::Communities(c)).encode(ctx, out);
    }
    if !r.large_communities.is_empty() {
        let l = r
            .large_communities
            .iter()
            .map(|&[g, a, b]| LargeCommunity {
                global_admin: g,
                local_data1: a,
                local_data2: b,
            })
            .collect();
        PathAttr::new(AttrValue::LargeCommunities(l)).encode(ctx, out);
    }
}

/// Starts an UPDATE (RFC 4271 §4.1 header); returns its offset.
fn begin(out: &mut Vec<u8>) -> usize {
    let s = out.len();
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(&[0, 0, bgp_wire::consts::msg_type::UPDATE]);
    s
}

/// Patches the length of the message begun at `s` (callers keep it within
/// [`MAX_MESSAGE`]).
fn finish(out: &mut [u8], s: usize) {
    let len = (out.len() - s).min(MAX_MESSAGE) as u16;
    if let Some(l) = out.get_mut(s + 16..s + 18) {
        l.copy_from_slice(&len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bgp_wire::{Message, PathAttribute};
    use std::collections::HashSet;

    fn params(n: usize, ibgp: bool) -> Vec<FeedParams> {
        (0..n)
            .map(|i| FeedParams {
                local_as: Asn(65001),
                ibgp,
                next_hop: Ipv4Addr::new(127, 0, 0, 2 + i as u8),
            })
            .collect()
    }

    /// Parses every message of a feed; returns (prefixes per message set,
    /// first AS of each path).
    fn decode(feed: &Feed) -> (Vec<Prefix>, HashSet<u32>, HashSet<Ipv4Addr>) {
        let mut prefixes = Vec::new();
        let mut first_as = HashSet::new();
        let mut next_hops = HashSet::new();
        let mut b = feed.bytes.as_slice();
        let mut messages = 0;
        while !b.is_empty() {
            let (m, n) = Message::parse(b, send_ctx()).expect("valid message");
            b = &b[n..];
            messages += 1;
            let Message::Update(u) = m else {
                panic!("not an UPDATE")
            };
            assert!(u.nlri().count() > 0, "no empty UPDATEs before End-of-RIB");
            for a in u.attributes() {
                match a.unwrap().typed(send_ctx()).unwrap() {
                    PathAttribute::AsPath(p) => {
                        first_as.insert(p.segments().next().unwrap().asns().next().unwrap().0);
                    }
                    PathAttribute::NextHop(h) => {
                        next_hops.insert(h);
                    }
                    _ => {}
                }
            }
            prefixes.extend(u.nlri().map(|n| n.unwrap().prefix));
        }
        assert_eq!(messages, feed.messages);
        (prefixes, first_as, next_hops)
    }

    #[test]
    fn shared_feeds_announce_the_same_prefixes_with_different_paths() {
        let spec = SyntheticSpec {
            peers: 3,
            prefixes: 5_000,
            sharing: Sharing::Shared,
            seed: 9,
        };
        let w = Workload::synthetic(&spec, &params(3, false)).unwrap();
        assert_eq!(w.total_prefixes(), 15_000);
        let mut sets = Vec::new();
        for (i, f) in w.feeds.iter().enumerate() {
            assert!(f.bytes.len() >= f.messages as usize * (HEADER_LEN + 4));
            assert!(f.messages < f.prefixes, "routes must pack");
            assert_eq!(f.chunks.last().map(|c| c.end), Some(f.bytes.len()));
            let sum: u64 = f.chunks.iter().map(|c| u64::from(c.prefixes)).sum();
            assert_eq!(sum, f.prefixes);
            let (p, first, nh) = decode(f);
            assert_eq!(p.len(), 5_000);
            assert_eq!(first, HashSet::from([65001]));
            assert_eq!(nh, HashSet::from([Ipv4Addr::new(127, 0, 0, 2 + i as u8)]));
            let set: HashSet<Prefix> = p.into_iter().collect();
            assert_eq!(set.len(), 5_000, "no prefix twice in one feed");
            sets.push(set);
        }
        assert_eq!(sets[0], sets[1]);
        assert_eq!(sets[1], sets[2]);
        assert_ne!(w.feeds[0].bytes, w.feeds[1].bytes, "paths must differ");
    }

    #[test]
    fn unique_feeds_are_disjoint_and_ibgp_keeps_the_learned_path() {
        let spec = SyntheticSpec {
            peers: 4,
            prefixes: 2_000,
            sharing: Sharing::Unique,
            seed: 2,
        };
        let w = Workload::synthetic(&spec, &params(4, true)).unwrap();
        let mut all = HashSet::new();
        for f in &w.feeds {
            let (p, first, _) = decode(f);
            assert_eq!(p.len(), 2_000);
            assert!(!first.contains(&65001), "iBGP must not prepend our AS");
            for x in p {
                assert!(all.insert(x), "prefix {x:?} in two feeds");
            }
        }
        assert_eq!(all.len(), 8_000);
    }

    #[test]
    fn end_of_rib_is_the_empty_update() {
        let m = end_of_rib_v4();
        let (Message::Update(u), n) = Message::parse(&m, send_ctx()).unwrap() else {
            panic!("not an UPDATE")
        };
        assert_eq!(n, 23);
        assert_eq!(u.end_of_rib(), Some(base::AfiSafi::IPV4_UNICAST));
    }
}
