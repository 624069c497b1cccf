//! MRT update dumps as workloads (RFC 6396 §4.4 BGP4MP, §4.5 BGP4MP_ET):
//! one replayed session per recorded peer, sending that peer's UPDATEs in
//! the order and, when paced, at the times the collector saw them.
//!
//! Stored bytes are sent as they are whenever they already fit our
//! session: MESSAGE_AS4 (4-octet AS_PATH, RFC 6793) without ADD-PATH and
//! within 4096 octets. Otherwise the UPDATE is re-encoded: MESSAGE
//! (2-octet AS_PATH) gets its AS_PATH widened and merged with AS4_PATH
//! (RFC 6793 §4.2.3); ADD-PATH forms (RFC 8050 §3) lose their path
//! identifiers, since our sessions do not negotiate ADD-PATH (RFC 7911).
//! Messages still too long are skipped and counted. The _LOCAL forms
//! were sent by the collector, not by the peer, and are skipped; so are
//! OPEN, KEEPALIVE and NOTIFICATION records.
//!
//! With [`UpdateOptions::next_hops`], every next hop is set to the
//! replaying session's own address ([`crate::nexthop`], patched in place):
//! recorded next hops are not reachable where the trace is replayed, and
//! DUTs differ in whether they keep such routes.
//!
//! STATE_CHANGE records become session events of the peer's feed: leaving
//! Established closes our session (the DUT flushes the peer's routes),
//! reaching Established opens it again.

use crate::error::{Phase, ReplayError};
use crate::feed::{Event, EventKind, Feed, MAX_MESSAGE};
use crate::nexthop::{set_next_hops, NhError};
use crate::workload::{send_ctx, Source, Step, Workload};
use base::Asn;
use bgp_wire::{merge_as4_path, AttrValue, Message, MpNlri, ParseCtx, UpdateMessage, UpdateView};
use mrt::bgp4mp::state;
use mrt::{Body, ErrorKind, MrtReader};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::Arc;

/// Session number -> (IPv4, IPv6) next hop; see [`UpdateOptions::next_hops`].
pub type NextHops = Arc<dyn Fn(usize) -> (Ipv4Addr, Ipv6Addr) + Send + Sync>;

/// Which parts of an update dump to replay.
#[derive(Clone, Default)]
pub struct UpdateOptions {
    /// Recorded peers to keep, by first-seen index; `None` keeps all.
    pub peers: Option<Vec<usize>>,
    /// Stop after this many UPDATEs (over all peers).
    pub max_messages: Option<u64>,
    /// Ignore STATE_CHANGE records (keep every session up).
    pub ignore_state_changes: bool,
    /// Session number -> (IPv4, IPv6) next hop to put in every UPDATE of
    /// that session; `None` keeps the recorded next hops.
    pub next_hops: Option<NextHops>,
}

impl std::fmt::Debug for UpdateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateOptions")
            .field("peers", &self.peers)
            .field("max_messages", &self.max_messages)
            .field("ignore_state_changes", &self.ignore_state_changes)
            .field("next_hops", &self.next_hops.as_ref().map(|_| "fn"))
            .finish()
    }
}

/// One replayed session of an update dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracePeer {
    /// First-seen index in the dump (see [`UpdateOptions::peers`]).
    pub dump_index: usize,
    pub ip: IpAddr,
    pub asn: Asn,
    pub messages: u64,
    pub state_changes: u64,
}

/// What reading the dump found besides the feeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UpdateSummary {
    pub peers: Vec<TracePeer>,
    /// UPDATEs kept byte for byte.
    pub stored_as_is: u64,
    /// UPDATEs re-encoded (2-octet AS_PATH or ADD-PATH).
    pub reencoded: u64,
    /// UPDATEs over 4096 octets after re-encoding (extended messages,
    /// RFC 8654, are not negotiated by replay).
    pub too_long: u64,
    /// Next hops set to the session's own (see [`UpdateOptions::next_hops`]).
    pub next_hops_rewritten: u64,
    /// MP_REACH next hops of other forms (RFC 8950, other families), kept.
    pub next_hops_kept: u64,
    /// OPEN, KEEPALIVE, NOTIFICATION, ROUTE-REFRESH and _LOCAL records.
    pub not_replayed: u64,
    /// Records or UPDATEs that did not decode.
    pub malformed: u64,
    pub truncated: bool,
}

struct PeerBuild {
    dump_index: usize,
    ip: IpAddr,
    asn: Asn,
    feed: Feed,
    state_changes: u64,
}

/// Reads an update dump into a workload with a global trace order.
pub fn update_workload(
    path: &Path,
    opts: &UpdateOptions,
) -> Result<(Workload, UpdateSummary), ReplayError> {
    let mut rd = MrtReader::open(path).map_err(|e| ReplayError::io(Phase::Input, &e))?;
    let mut sum = UpdateSummary::default();
    let mut index: HashMap<(IpAddr, Asn), usize> = HashMap::new();
    // Dump index -> session number (None: not selected).
    let mut session_of: Vec<Option<usize>> = Vec::new();
    let mut peers: Vec<PeerBuild> = Vec::new();
    let mut trace: Vec<Step> = Vec::new();
    let mut t0: Option<u64> = None;
    let mut scratch = Vec::with_capacity(MAX_MESSAGE);
    let mut kept: u64 = 0;
    loop {
        if opts.max_messages.is_some_and(|m| kept >= m) {
            break;
        }
        let rec = match rd.next_record() {
            None => break,
            Some(Ok(r)) => r,
            Some(Err(e)) if e.kind == ErrorKind::TruncatedStream => {
                sum.truncated = true;
                break;
            }
            Some(Err(e)) if e.is_fatal() => return Err(ReplayError::Mrt(e)),
            Some(Err(_)) => {
                sum.malformed += 1;
                continue;
            }
        };
        let us = u64::from(rec.header.timestamp) * 1_000_000
            + u64::from(rec.header.microseconds.unwrap_or(0));
        let t = us.saturating_sub(*t0.get_or_insert(us));
        let peering = match &rec.body {
            Body::Message(m) => m.peering,
            Body::StateChange(s) => s.peering,
            _ => continue,
        };
        let key = (peering.peer_ip, peering.peer_as);
        let next = index.len();
        let di = *index.entry(key).or_insert(next);
        if di == session_of.len() {
            let want = opts.peers.as_ref().is_none_or(|l| l.contains(&di));
            session_of.push(want.then_some(peers.len()));
            if want {
                peers.push(PeerBuild {
                    dump_index: di,
                    ip: peering.peer_ip,
                    asn: peering.peer_as,
                    feed: Feed {
                        label: format!("AS{} {}", peering.peer_as.0, peering.peer_ip),
                        ..Feed::default()
                    },
                    state_changes: 0,
                });
            }
        }
        let Some(Some(si)) = session_of.get(di).copied() else {
            continue;
        };
        let Some(p) = peers.get_mut(si) else { continue };
        match rec.body {
            Body::StateChange(s) => {
                p.state_changes += 1;
                if opts.ignore_state_changes {
                    continue;
                }
                let kind = if s.new_state == state::ESTABLISHED {
                    EventKind::Up
                } else if s.old_state == state::ESTABLISHED {
                    EventKind::Down
                } else {
                    continue;
                };
                let before = p.feed.msgs.len() as u32;
                p.feed.events.push(Event { before, kind });
            }
            Body::Message(m) => {
                if m.is_local() || m.bgp_type() != Some(bgp_wire::consts::msg_type::UPDATE) {
                    sum.not_replayed += 1;
                    continue;
                }
                let fits = m.is_as4() && !m.is_add_path() && m.message.len() <= MAX_MESSAGE;
                scratch.clear();
                if fits {
                    sum.stored_as_is += 1;
                    scratch.extend_from_slice(m.message);
                } else {
                    match reencode(m.message, m.is_as4(), m.is_add_path(), &mut scratch) {
                        Ok(()) if scratch.len() <= MAX_MESSAGE => sum.reencoded += 1,
                        Ok(()) => {
                            sum.too_long += 1;
                            continue;
                        }
                        Err(()) => {
                            sum.malformed += 1;
                            continue;
                        }
                    }
                }
                if let Some(nh) = &opts.next_hops {
                    let (nh4, nh6) = nh(si);
                    match set_next_hops(&mut scratch, nh4, nh6) {
                        Ok(d) => {
                            sum.next_hops_rewritten += u64::from(d.rewritten);
                            sum.next_hops_kept += u64::from(d.kept);
                        }
                        Err(NhError::Malformed) => {
                            sum.malformed += 1;
                            continue;
                        }
                    }
                }
                let msg: &[u8] = &scratch;
                let Some((ann, wd, v6)) = count(msg) else {
                    sum.malformed += 1;
                    continue;
                };
                p.feed.has_v6 |= v6;
                trace.push(Step {
                    peer: si as u32,
                    msg: p.feed.msgs.len() as u32,
                });
                p.feed.push_msg(msg, ann, wd, Some(t));
                kept += 1;
            }
            _ => {}
        }
    }
    if peers.iter().all(|p| p.feed.msgs.is_empty()) {
        return Err(ReplayError::Input(
            "no UPDATE messages for the selected peers in the dump",
        ));
    }
    let mut feeds = Vec::with_capacity(peers.len());
    for p in peers {
        sum.peers.push(TracePeer {
            dump_index: p.dump_index,
            ip: p.ip,
            asn: p.asn,
            messages: p.feed.messages,
            state_changes: p.state_changes,
        });
        feeds.push(p.feed);
    }
    Ok((
        Workload {
            feeds,
            trace,
            expected_prefixes: None,
            source: Source::UpdateTrace,
        },
        sum,
    ))
}

/// (announced, withdrawn, carries IPv6) of an UPDATE in our session's
/// context; `None` when it does not parse.
pub(crate) fn count(msg: &[u8]) -> Option<(u32, u32, bool)> {
    let (Message::Update(u), _) = Message::parse(msg, send_ctx()).ok()? else {
        return None;
    };
    Some(count_view(&u))
}

pub(crate) fn count_view(u: &UpdateView<'_>) -> (u32, u32, bool) {
    let mut ann = u.nlri().map_while(Result::ok).count();
    let mut wd = u.withdrawn().map_while(Result::ok).count();
    let mut v6 = false;
    if let Some(Ok(mp)) = u.mp_reach() {
        ann += mp.nlri().map_while(Result::ok).count();
        v6 |= mp.afi_safi.afi == base::Afi::Ipv6;
    }
    if let Some(Ok(mp)) = u.mp_unreach() {
        wd += mp.withdrawn().map_while(Result::ok).count();
        v6 |= mp.afi_safi.afi == base::Afi::Ipv6;
    }
    (ann as u32, wd as u32, v6)
}

/// Re-encodes a stored UPDATE for a 4-octet, no-ADD-PATH session.
fn reencode(msg: &[u8], as4: bool, add_path: bool, out: &mut Vec<u8>) -> Result<(), ()> {
    let mut ctx = ParseCtx::legacy()
        .with_four_octet_asn(as4)
        .with_extended_message(true);
    if add_path {
        ctx = ctx.with_add_path_all();
    }
    let (Message::Update(u), _) = Message::parse(msg, ctx).map_err(|_| ())? else {
        return Err(());
    };
    let mut o: UpdateMessage = u.to_owned().map_err(|_| ())?;
    if !as4 {
        widen(&mut o);
    }
    if add_path {
        for n in o.withdrawn.iter_mut().chain(o.nlri.iter_mut()) {
            n.path_id = None;
        }
        for a in &mut o.attributes {
            let list = match &mut a.value {
                AttrValue::MpReach(m) => &mut m.nlri,
                AttrValue::MpUnreach(m) => &mut m.withdrawn,
                _ => continue,
            };
            if let MpNlri::Prefixes(v) = list {
                for n in v {
                    n.path_id = None;
                }
            }
        }
    }
    o.encode(send_ctx().with_extended_message(true), out)
        .map_err(|_| ())
}

/// RFC 6793 §4.2.3: a NEW speaker receiving from an OLD one rebuilds the
/// path from AS_PATH and AS4_PATH (and AGGREGATOR from AS4_AGGREGATOR
/// when AGGREGATOR holds AS_TRANS), then drops the AS4 attributes.
fn widen(o: &mut UpdateMessage) {
    let as4_path = o.attributes.iter().find_map(|a| match &a.value {
        AttrValue::As4Path(p) => Some(p.clone()),
        _ => None,
    });
    let as4_agg = o.attributes.iter().find_map(|a| match &a.value {
        AttrValue::As4Aggregator(x) => Some(*x),
        _ => None,
    });
    let mut trans_agg = false;
    for a in &mut o.attributes {
        if let AttrValue::Aggregator(x) = &mut a.value {
            if x.asn.0 == 23456 {
                trans_agg = true;
                if let Some(n) = as4_agg {
                    *x = n;
                }
            }
        }
    }
    // §4.2.3: AS4_PATH is ignored when AGGREGATOR is present with a
    // 2-octet AS other than AS_TRANS.
    let agg_present = o
        .attributes
        .iter()
        .any(|a| matches!(a.value, AttrValue::Aggregator(_)));
    if let Some(p4) = as4_path.filter(|_| trans_agg || !agg_present) {
        for a in &mut o.attributes {
            if let AttrValue::AsPath(p) = &mut a.value {
                *p = merge_as4_path(p, &p4);
            }
        }
    }
    o.attributes
        .retain(|a| !matches!(a.value, AttrValue::As4Path(_) | AttrValue::As4Aggregator(_)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::{AfiSafi, Prefix};
    use bgp_wire::{AsPath, Nlri, PathAttr, PathAttribute};

    #[test]
    fn two_octet_updates_are_widened_and_add_path_ids_dropped() {
        let p: Prefix = "10.0.0.0/8".parse().unwrap();
        let m = UpdateMessage {
            withdrawn: vec![],
            attributes: vec![
                PathAttr::new(AttrValue::Origin(bgp_wire::Origin::Igp)),
                PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![
                    Asn(701),
                    Asn(23456),
                ]))),
                PathAttr::new(AttrValue::NextHop("192.0.2.1".parse().unwrap())),
                PathAttr::new(AttrValue::As4Path(AsPath::from_sequence(vec![Asn(
                    4_200_000_000,
                )]))),
            ],
            nlri: vec![Nlri::with_path_id(p, 7)],
        };
        let ctx = ParseCtx::legacy().with_add_path(AfiSafi::IPV4_UNICAST, true);
        let mut stored = Vec::new();
        m.encode(ctx, &mut stored).unwrap();
        let mut out = Vec::new();
        reencode(&stored, false, true, &mut out).unwrap();
        let (Message::Update(u), _) = Message::parse(&out, send_ctx()).unwrap() else {
            panic!("not an UPDATE")
        };
        let nlri: Vec<Nlri> = u.nlri().map(Result::unwrap).collect();
        assert_eq!(nlri, vec![Nlri::new(p)]);
        let mut asns = Vec::new();
        for a in u.attributes() {
            match a.unwrap().typed(send_ctx()).unwrap() {
                PathAttribute::AsPath(v) => {
                    asns.extend(v.segments().flat_map(|s| s.asns()).map(|a| a.0))
                }
                PathAttribute::As4Path(_) => panic!("AS4_PATH must go"),
                _ => {}
            }
        }
        assert_eq!(asns, vec![701, 4_200_000_000]);
        assert_eq!(count(&out), Some((1, 0, false)));
    }

    #[test]
    fn trace_next_hops_become_the_sessions_own() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mrt/updates.20190101.0000.gz");
        assert!(
            path.exists(),
            "{} is missing: the shared MRT data set is needed",
            path.display()
        );
        fn nh(i: usize) -> (std::net::Ipv4Addr, std::net::Ipv6Addr) {
            (
                std::net::Ipv4Addr::new(198, 18, 1, 1 + i as u8),
                "2001:2::2"
                    .parse()
                    .unwrap_or(std::net::Ipv6Addr::UNSPECIFIED),
            )
        }
        let opts = UpdateOptions {
            max_messages: Some(3000),
            ignore_state_changes: true,
            next_hops: Some(Arc::new(nh)),
            ..UpdateOptions::default()
        };
        let (w, sum) = update_workload(&path, &opts).expect("trace reads");
        assert!(sum.next_hops_rewritten > 1000, "{sum:?}");
        let (mut v4, mut v6) = (0, 0);
        for (i, f) in w.feeds.iter().enumerate() {
            let (own4, own6) = nh(i);
            for k in 0..f.msgs.len() {
                let msg = f.range(k, k + 1);
                let (Message::Update(u), _) = Message::parse(msg, send_ctx()).expect("parses")
                else {
                    panic!("not an UPDATE")
                };
                for a in u.attributes() {
                    if let bgp_wire::PathAttribute::NextHop(x) =
                        a.expect("frames").typed(send_ctx()).expect("valid")
                    {
                        assert_eq!(x, own4, "peer {i} message {k}");
                        v4 += 1;
                    }
                }
                if let Some(Ok(mp)) = u.mp_reach() {
                    if mp.afi_safi.afi == base::Afi::Ipv6 {
                        assert_eq!(
                            mp.next_hop(),
                            Some(bgp_wire::NextHop::V6(own6)),
                            "peer {i} message {k}"
                        );
                        v6 += 1;
                    }
                }
            }
        }
        assert!(v4 > 0 && v6 > 0, "both families seen: {v4} {v6}");
        assert_eq!(v4 + v6, sum.next_hops_rewritten, "{sum:?}");
    }
}
