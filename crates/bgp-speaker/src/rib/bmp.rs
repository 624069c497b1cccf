//! The RIB thread's half of BMP: post-policy Adj-RIB-In, Loc-RIB and
//! Adj-RIB-Out (RFC 8671) changes as they happen, the table dumps a
//! connecting collector asks for, and the counts of the Statistics
//! Reports. Everything is encoded
//! here, on the thread that owns the routes, and handed to the hub
//! ([`crate::bmp`]); the daemon wires the dump and the counts to the hub
//! as [`crate::bmp::RibAccess`].

use std::collections::BTreeMap;
use std::net::IpAddr;

use ::bmp::encode;
use ::bmp::route;
use base::{AfiSafi, Prefix, Safi};
use bgp_core::RibInput;
use bgp_rib::PeerId;

use super::RibState;
use crate::bmp::{now_ts, BmpHub, Kind, Msg, Views};

/// Dump chunks handed back to the collector task: about this many octets.
const CHUNK: usize = 256 << 10;

/// (prefix, path id) of every unicast route an input touches, for the
/// post-policy messages after it is applied.
pub(crate) fn touched(input: &RibInput) -> Option<(PeerId, Vec<(Prefix, u32)>)> {
    let RibInput::Updates { peer, updates } = input else {
        return None;
    };
    let mut v = Vec::new();
    for u in updates {
        for n in u.announce.iter().chain(u.withdraw.iter()) {
            v.push((n.prefix, n.path_id.unwrap_or(0)));
        }
    }
    Some((*peer, v))
}

/// Appends a Route Monitoring for one path (or its withdrawal).
fn monitor(
    h: &::bmp::PeerHeader,
    prefix: &Prefix,
    path_id: Option<u32>,
    attrs: Option<&[u8]>,
    upd: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    upd.clear();
    match attrs {
        Some(a) => {
            if !route::announce(prefix, Safi::Unicast, path_id, a, upd) {
                return;
            }
        }
        None => route::withdraw(prefix, Safi::Unicast, path_id, upd),
    }
    encode::route_monitoring(h, upd, out);
}

fn pid_for(add_path_rx: &[AfiSafi], prefix: &Prefix, pid: u32) -> Option<u32> {
    let fam = AfiSafi {
        afi: prefix.afi(),
        safi: Safi::Unicast,
    };
    add_path_rx.contains(&fam).then_some(pid)
}

/// Route Monitoring messages of one live stream, handed to the hub in
/// shared buffers of about [`CHUNK`] octets (the collector writes each
/// whole); [`Stream::finish`] hands over the rest.
struct Stream<'a> {
    hub: &'a BmpHub,
    kind: Kind,
    upd: Vec<u8>,
    out: Vec<u8>,
}

impl<'a> Stream<'a> {
    fn new(hub: &'a BmpHub, kind: Kind) -> Self {
        Stream {
            hub,
            kind,
            upd: Vec::new(),
            out: Vec::new(),
        }
    }

    fn add(
        &mut self,
        h: &::bmp::PeerHeader,
        prefix: &Prefix,
        path_id: Option<u32>,
        attrs: Option<&[u8]>,
    ) {
        monitor(h, prefix, path_id, attrs, &mut self.upd, &mut self.out);
        if self.out.len() >= CHUNK {
            let m = Msg::from(std::mem::take(&mut self.out));
            self.hub.emit(self.kind, &m);
        }
    }

    fn finish(self) {
        if !self.out.is_empty() {
            self.hub.emit(self.kind, &Msg::from(self.out));
        }
    }
}

impl RibState {
    fn peer_addr(&self, id: PeerId) -> Option<IpAddr> {
        Some(self.core.peer(id)?.up.as_ref()?.remote_addr.ip())
    }

    /// After `peer`'s UPDATEs were applied: the post-policy state of every
    /// route they touched (RFC 7854 §2, the L flag).
    pub(crate) fn bmp_post(&self, hub: &BmpHub, peer: PeerId, keys: &[(Prefix, u32)]) {
        let Some(rec) = self
            .peer_addr(peer)
            .and_then(|a| hub.rib_header(a, Kind::Post, now_ts()))
        else {
            return;
        };
        let mut st = Stream::new(hub, Kind::Post);
        for (prefix, pid) in keys {
            let r = self.core.rib.lookup(prefix);
            let attrs = r.as_ref().and_then(|r| {
                r.iter()
                    .find(|(p, _)| p.peer == peer && p.path_id == *pid && !p.stale())
                    .map(|(_, s)| s.raw())
            });
            let id = pid_for(&rec.add_path_rx, prefix, *pid);
            st.add(&rec.header, prefix, id, attrs);
        }
        st.finish();
    }

    /// Best-route changes as the pre-policy Adj-RIB-Out of every
    /// established peer (RFC 8671 §5, O flag without L): the best route
    /// of each changed prefix as stored, before export policy and the
    /// session's rewriting (own AS, next hop), or its withdrawal. A
    /// peer's own routes are not offered back to it (split horizon);
    /// the other propagation rules (iBGP, route reflection, OTC) are
    /// part of the export step and not applied to this view.
    pub(crate) fn bmp_out_pre(&self, hub: &BmpHub, changed: &[bgp_core::BestChange]) {
        let ts = now_ts();
        // Each changed prefix's best route, looked up once for all peers.
        let lookups: Vec<_> = changed
            .iter()
            .map(|c| (c.prefix, self.core.rib.lookup(&c.prefix)))
            .collect();
        let mut st = Stream::new(hub, Kind::OutPre);
        for (id, e) in self.peer_iter() {
            let Some(u) = e.up.as_ref() else {
                continue;
            };
            let Some(rec) = hub.rib_header(u.remote_addr.ip(), Kind::OutPre, ts) else {
                continue;
            };
            for (prefix, r) in &lookups {
                let best = r
                    .as_ref()
                    .and_then(|r| r.best())
                    .filter(|(p, _)| p.peer != id);
                st.add(&rec.header, prefix, None, best.map(|(_, s)| s.raw()));
            }
        }
        st.finish();
    }

    /// A session came up: its pre-policy Adj-RIB-Out as it starts, the
    /// best route of every prefix this part holds that did not come from
    /// it (the collector already has the peer's Peer Up).
    pub(crate) fn bmp_out_pre_peer(&self, hub: &BmpHub, peer: PeerId) {
        let Some(rec) = self
            .peer_addr(peer)
            .and_then(|a| hub.rib_header(a, Kind::OutPre, now_ts()))
        else {
            return;
        };
        let mut st = Stream::new(hub, Kind::OutPre);
        for r in self.core.rib.iter() {
            if let Some((_, set)) = r.best().filter(|(p, _)| p.peer != peer) {
                st.add(&rec.header, &r.prefix, None, Some(set.raw()));
            }
        }
        st.finish();
    }

    /// Best-route changes: the Loc-RIB state of each prefix (RFC 9069).
    pub(crate) fn bmp_loc(&self, hub: &BmpHub, changed: &[bgp_core::BestChange]) {
        let h = hub.loc_header(now_ts());
        let mut st = Stream::new(hub, Kind::Loc);
        for c in changed {
            let r = self.core.rib.lookup(&c.prefix);
            let best = r.as_ref().and_then(|r| r.best());
            st.add(&h, &c.prefix, None, best.map(|(_, s)| s.raw()));
        }
        st.finish();
    }

    /// This shard's part of a table dump of the views asked for, as
    /// chunks of encoded Route Monitoring messages (RFC 7854 §5). The
    /// pre-policy view comes from the stored pre-policy Adj-RIB-In
    /// (`soft_reconfiguration_inbound`); peers without it are skipped
    /// (their UPDATEs still go out as they arrive).
    ///
    /// The Adj-RIB-Out views (RFC 8671): pre-policy, each prefix's best
    /// route for every established peer it did not come from; post-policy,
    /// what each peer's Adj-RIB-Out holds (the attributes export policy
    /// gave, before the session's own rewriting: the live messages are
    /// the UPDATEs exactly as sent).
    pub fn bmp_dump(&self, hub: &BmpHub, views: Views) -> Vec<Msg> {
        let Views {
            pre,
            post,
            loc,
            out_pre,
            out_post,
        } = views;
        let ts = now_ts();
        let mut chunks: Vec<Msg> = Vec::new();
        let (mut upd, mut out) = (Vec::new(), Vec::new());
        let flush = |out: &mut Vec<u8>, chunks: &mut Vec<Msg>| {
            if !out.is_empty() {
                chunks.push(Msg::from(std::mem::take(out)));
            }
        };
        // Established peers and their headers, once.
        let mut peers = BTreeMap::new();
        let mut outs = BTreeMap::new();
        for (id, e) in self.peer_iter() {
            if let Some(u) = e.up.as_ref() {
                let a = u.remote_addr.ip();
                if let (Some(pr), Some(po)) = (
                    hub.rib_header(a, Kind::Pre, ts),
                    hub.rib_header(a, Kind::Post, ts),
                ) {
                    peers.insert(id, (pr, po));
                }
                if let (Some(op), Some(oq)) = (
                    hub.rib_header(a, Kind::OutPre, ts),
                    hub.rib_header(a, Kind::OutPost, ts),
                ) {
                    outs.insert(id, (op, oq));
                }
            }
        }
        if pre {
            for (id, (rec, _)) in &peers {
                for s in self.core.rib.shards() {
                    s.for_each_pre_policy(*id, |prefix, pid, set| {
                        let p = pid_for(&rec.add_path_rx, prefix, pid);
                        monitor(&rec.header, prefix, p, Some(set.raw()), &mut upd, &mut out);
                        if out.len() >= CHUNK {
                            flush(&mut out, &mut chunks);
                        }
                    });
                }
            }
        }
        if post || loc || out_pre || out_post {
            let lh = hub.loc_header(ts);
            for r in self.core.rib.iter() {
                for (id, (op, oq)) in &outs {
                    if out_pre {
                        if let Some((_, set)) = r.best().filter(|(p, _)| p.peer != *id) {
                            monitor(
                                &op.header,
                                &r.prefix,
                                None,
                                Some(set.raw()),
                                &mut upd,
                                &mut out,
                            );
                        }
                    }
                    if out_post {
                        let shard = self
                            .core
                            .rib
                            .shards()
                            .get(self.core.rib.shard_of(&r.prefix));
                        for (pid, set) in shard
                            .map(|s| s.adj_out_paths(*id, &r.prefix))
                            .unwrap_or_default()
                        {
                            let p = (pid != 0).then_some(pid);
                            monitor(
                                &oq.header,
                                &r.prefix,
                                p,
                                Some(set.raw()),
                                &mut upd,
                                &mut out,
                            );
                        }
                    }
                }
                if post {
                    for (p, set) in r.iter() {
                        let Some((_, rec)) = peers.get(&p.peer) else {
                            continue;
                        };
                        if p.stale() {
                            continue;
                        }
                        let id = pid_for(&rec.add_path_rx, &r.prefix, p.path_id);
                        monitor(
                            &rec.header,
                            &r.prefix,
                            id,
                            Some(set.raw()),
                            &mut upd,
                            &mut out,
                        );
                    }
                }
                if loc {
                    if let Some((_, set)) = r.best() {
                        monitor(&lh, &r.prefix, None, Some(set.raw()), &mut upd, &mut out);
                    }
                }
                if out.len() >= CHUNK {
                    flush(&mut out, &mut chunks);
                }
            }
        }
        flush(&mut out, &mut chunks);
        chunks
    }

    /// Statistics of this shard: per established peer address, (paths in
    /// its post-policy Adj-RIB-In, best paths from it in the Loc-RIB).
    /// From the RIB's counters, kept as routes change (no walk of the
    /// table); peers without paths are left out.
    pub fn bmp_counts(&self) -> BTreeMap<IpAddr, (u64, u64)> {
        self.core
            .peer_iter()
            .filter_map(|(id, _)| {
                let c = self.core.rib.peer_counts(id)?;
                if c.accepted == 0 {
                    return None;
                }
                let addr = crate::sess::listener::canonical(self.peer_addr(id)?);
                Some((addr, (c.accepted, c.best)))
            })
            .collect()
    }
}
