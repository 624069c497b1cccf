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
//! AS-path lengths follow real tables. MRT RIB dumps ([`crate::mrt_rib`])
//! and update dumps ([`crate::mrt_updates`]) produce the same [`Feed`]s;
//! update dumps add per-message timestamps, session events and the global
//! trace order.

use crate::error::ReplayError;
pub use crate::feed::{Event, EventKind, Feed, FeedParams, MsgInfo, CHUNK_BYTES, MAX_MESSAGE};
use crate::pack::Packer;
use base::{Asn, Prefix};
use bgp_wire::emit;
use bgp_wire::{
    AsPath, AttrValue, Community, LargeCommunity, Message, ParseCtx, PathAttr, HEADER_LEN,
};
use sim::{RouteView, SynthConfig, SynthRib};
use std::collections::HashSet;

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

/// One message of the global send order: message `msg` of feed `peer`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub peer: u32,
    pub msg: u32,
}

/// Where a workload came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Synthetic,
    RibDump,
    UpdateTrace,
}

/// What every peer sends.
#[derive(Clone, Debug)]
pub struct Workload {
    pub feeds: Vec<Feed>,
    /// The input's own global order (update traces); empty otherwise.
    pub trace: Vec<Step>,
    /// Distinct prefixes the DUT should hold once everything is in (and
    /// export to a monitor); `None` for update traces, whose end state
    /// depends on withdrawals and session resets.
    pub expected_prefixes: Option<u64>,
    pub source: Source,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            feeds: Vec::new(),
            trace: Vec::new(),
            expected_prefixes: None,
            source: Source::Synthetic,
        }
    }
}

impl Workload {
    pub fn total_prefixes(&self) -> u64 {
        self.feeds.iter().map(|f| f.prefixes).sum()
    }

    pub fn total_withdrawn(&self) -> u64 {
        self.feeds.iter().map(|f| f.withdrawn).sum()
    }

    pub fn total_messages(&self) -> u64 {
        self.feeds.iter().map(|f| f.messages).sum()
    }

    pub fn total_bytes(&self) -> usize {
        self.feeds.iter().map(|f| f.bytes.len()).sum()
    }

    /// Whether every feed has per-message times (pacing by the trace's
    /// own timing is possible).
    pub fn is_timed(&self) -> bool {
        self.feeds.iter().all(|f| f.times_us.len() == f.msgs.len())
            && self.feeds.iter().any(|f| !f.msgs.is_empty())
    }

    /// Distinct prefixes the input leaves announced, i.e. what a DUT that
    /// accepts everything holds at the end: per peer, in order, each
    /// UPDATE's withdrawals then its announcements, a session event `Down`
    /// flushing the peer (the DUT drops its routes); then the union over
    /// the peers.
    pub fn final_prefixes(&self) -> u64 {
        let mut all: HashSet<Prefix> = HashSet::new();
        let mut held: HashSet<Prefix> = HashSet::new();
        for f in &self.feeds {
            held.clear();
            let mut events = f.events.iter().peekable();
            for k in 0..f.msgs.len() {
                while let Some(e) = events.next_if(|e| e.before as usize <= k) {
                    if e.kind == EventKind::Down {
                        held.clear();
                    }
                }
                apply_update(f.range(k, k + 1), &mut held);
            }
            if events.any(|e| e.kind == EventKind::Down) {
                held.clear();
            }
            all.extend(held.drain());
        }
        all.len() as u64
    }

    /// Paces the workload at `per_sec` messages per second over all peers:
    /// message j of `order` (which holds every message once, each peer's
    /// in order, as [`crate::schedule`] makes them) is due at j / per_sec
    /// seconds. Replaces recorded times; replay it with
    /// [`crate::Pacing::Trace`] at speed 1.
    pub fn pace_at_rate(&mut self, per_sec: f64, order: &[Step]) -> Result<(), ReplayError> {
        if !(per_sec.is_finite() && per_sec > 0.0) {
            return Err(ReplayError::Config("the rate must be a positive number"));
        }
        for f in &mut self.feeds {
            f.times_us = vec![0; f.msgs.len()];
        }
        for (j, s) in order.iter().enumerate() {
            let t = self
                .feeds
                .get_mut(s.peer as usize)
                .and_then(|f| f.times_us.get_mut(s.msg as usize));
            if let Some(t) = t {
                *t = (j as f64 * 1e6 / per_sec).round() as u64;
            }
        }
        Ok(())
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
        let mut buf = sim::EntryBuf::default();
        for (idx, prefix) in rib.prefixes.iter().enumerate() {
            let Prefix::V4(p4) = *prefix else { continue };
            rib.entries(idx, &mut buf);
            match spec.sharing {
                Sharing::Shared => {
                    for r in buf.routes() {
                        if let Some(pk) = packers.get_mut(usize::from(r.peer)) {
                            let params = pk.params;
                            encode_attrs(&params, &r, pk.scratch());
                            pk.add4(p4);
                        }
                    }
                }
                Sharing::Unique => {
                    let owner = idx % spec.peers;
                    if let (Some(r), Some(pk)) = (
                        buf.routes().find(|r| usize::from(r.peer) == owner),
                        packers.get_mut(owner),
                    ) {
                        let params = pk.params;
                        encode_attrs(&params, &r, pk.scratch());
                        pk.add4(p4);
                    }
                }
            }
        }
        let feeds = packers
            .into_iter()
            .map(Packer::finish)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Workload {
            feeds,
            trace: Vec::new(),
            expected_prefixes: Some(total as u64),
            source: Source::Synthetic,
        })
    }
}

/// Applies one UPDATE (withdrawals, then announcements) to a prefix set.
fn apply_update(msg: &[u8], held: &mut HashSet<Prefix>) {
    let Ok((Message::Update(u), _)) = Message::parse(msg, send_ctx()) else {
        return;
    };
    for n in u.withdrawn().map_while(Result::ok) {
        held.remove(&n.prefix);
    }
    if let Some(Ok(mp)) = u.mp_unreach() {
        for n in mp.withdrawn().map_while(Result::ok) {
            held.remove(&n.prefix);
        }
    }
    held.extend(u.nlri().map_while(Result::ok).map(|n| n.prefix));
    if let Some(Ok(mp)) = u.mp_reach() {
        held.extend(mp.nlri().map_while(Result::ok).map(|n| n.prefix));
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

/// The IPv6 unicast End-of-RIB marker: an UPDATE whose only attribute is
/// an empty MP_UNREACH_NLRI for AFI 2, SAFI 1 (RFC 4724 §2).
pub fn end_of_rib_v6() -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 10);
    let s = begin(&mut out);
    out.extend_from_slice(&[0, 0, 0, 6, 0x80, 15, 3, 0, 2, 1]);
    finish(&mut out, s);
    out
}

/// The context our UPDATEs are encoded in: 4-octet ASNs (required of the
/// peer at OPEN), no extended messages, no ADD-PATH.
pub const fn send_ctx() -> ParseCtx {
    ParseCtx::legacy().with_four_octet_asn(true)
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
    emit::begin_message(out, bgp_wire::consts::msg_type::UPDATE)
}

/// Patches the length of the message begun at `s` (callers keep it within
/// [`MAX_MESSAGE`]).
fn finish(out: &mut [u8], s: usize) {
    emit::set_message_len(out, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bgp_wire::{Message, PathAttribute};
    use std::collections::HashSet;
    use std::net::Ipv4Addr;

    fn params(n: usize, ibgp: bool) -> Vec<FeedParams> {
        (0..n)
            .map(|i| FeedParams {
                local_as: Asn(65001),
                as_recorded: false,
                ibgp,
                next_hop: Ipv4Addr::new(127, 0, 0, 2 + i as u8),
                next_hop6: None,
            })
            .collect()
    }

    /// Parses every message of a feed; returns (prefixes per message set,
    /// first AS of each path).
    pub(crate) fn decode(feed: &Feed) -> (Vec<Prefix>, HashSet<u32>, HashSet<Ipv4Addr>) {
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
            assert_eq!(f.msgs.last().map(|c| c.end), Some(f.bytes.len()));
            let sum: u64 = f.msgs.iter().map(|c| u64::from(c.prefixes)).sum();
            assert_eq!(sum, f.prefixes);
            assert_eq!(f.range(0, f.msgs.len()), &f.bytes[..]);
            let c = f.chunk_end(0, f.msgs.len());
            assert!(c >= 1 && f.start_of(c) <= CHUNK_BYTES + MAX_MESSAGE);
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
    fn final_prefixes_follow_withdrawals_and_session_downs() {
        use bgp_wire::{Nlri, UpdateMessage};
        let p = |s: &str| -> Prefix { s.parse().unwrap() };
        let upd = |ann: &[&str], wd: &[&str]| -> Vec<u8> {
            let attributes = if ann.is_empty() {
                vec![]
            } else {
                vec![
                    PathAttr::new(AttrValue::Origin(bgp_wire::Origin::Igp)),
                    PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(7)]))),
                    PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(127, 0, 0, 2))),
                ]
            };
            let m = UpdateMessage {
                withdrawn: wd.iter().map(|x| Nlri::new(p(x))).collect(),
                attributes,
                nlri: ann.iter().map(|x| Nlri::new(p(x))).collect(),
            };
            let mut out = Vec::new();
            m.encode(send_ctx(), &mut out).unwrap();
            out
        };
        let feed = |msgs: &[Vec<u8>], downs: &[u32]| {
            let mut f = Feed::default();
            for m in msgs {
                f.push_msg(m, 0, 0, None);
            }
            f.events = downs
                .iter()
                .map(|&before| Event {
                    before,
                    kind: EventKind::Down,
                })
                .collect();
            f
        };
        let w = Workload {
            feeds: vec![
                // Announces two, withdraws one.
                feed(
                    &[
                        upd(&["10.0.0.0/24", "10.0.1.0/24"], &[]),
                        upd(&[], &["10.0.1.0/24"]),
                    ],
                    &[],
                ),
                // Down before its second UPDATE flushes the first.
                feed(
                    &[upd(&["10.0.2.0/24"], &[]), upd(&["10.0.3.0/24"], &[])],
                    &[1],
                ),
                // Down after everything: nothing of it stays.
                feed(&[upd(&["10.0.0.0/24", "10.0.4.0/24"], &[])], &[1]),
            ],
            ..Workload::default()
        };
        assert_eq!(w.final_prefixes(), 2);
    }

    #[test]
    fn rate_pacing_spaces_the_global_order_evenly() {
        let spec = SyntheticSpec {
            peers: 3,
            prefixes: 2_000,
            sharing: Sharing::Shared,
            seed: 4,
        };
        let mut w = Workload::synthetic(&spec, &params(3, false)).unwrap();
        assert!(!w.is_timed());
        let order = crate::schedule(
            &w,
            crate::Order::RoundRobin {
                batch: 1,
                window: None,
            },
        );
        w.pace_at_rate(100.0, &order).unwrap();
        assert!(w.is_timed());
        // Step j at j * 10 ms; each peer's own times never go back.
        for (j, s) in order.iter().enumerate() {
            let f = &w.feeds[s.peer as usize];
            assert_eq!(f.times_us[s.msg as usize], j as u64 * 10_000);
        }
        for f in &w.feeds {
            assert!(f.times_us.windows(2).all(|p| p[0] <= p[1]));
        }
        assert!(w.pace_at_rate(0.0, &order).is_err());
        assert!(w.pace_at_rate(f64::NAN, &order).is_err());
    }

    #[test]
    fn end_of_rib_is_the_empty_update() {
        let m = end_of_rib_v4();
        let (Message::Update(u), n) = Message::parse(&m, send_ctx()).unwrap() else {
            panic!("not an UPDATE")
        };
        assert_eq!(n, 23);
        assert_eq!(u.end_of_rib(), Some(base::AfiSafi::IPV4_UNICAST));
        let m = end_of_rib_v6();
        let (Message::Update(u), _) = Message::parse(&m, send_ctx()).unwrap() else {
            panic!("not an UPDATE")
        };
        assert_eq!(u.end_of_rib(), Some(base::AfiSafi::IPV6_UNICAST));
    }
}
