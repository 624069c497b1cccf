//! The RIB thread's half of the periodic TABLE_DUMP_V2 snapshots (see
//! [`crate::rib_dump`] for the format and the writer thread): the peer
//! index table and one RIB record per prefix, encoded in chunks.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{SystemTime, UNIX_EPOCH};

use base::{Prefix, Safi};
use mrt::{MrtWriter, Peer, RibEntry};
use tracing::warn;

use super::{RibState, STATIC_PEER};
use crate::rib_dump::{table_dump_attrs, RibDumper, CHUNK};

/// Where one path's attributes sit in the per-prefix scratch buffer.
#[derive(Copy, Clone)]
struct EntryPos {
    peer_index: u16,
    originated: u32,
    path_id: u32,
    start: usize,
    end: usize,
}

fn secs(t: SystemTime) -> u32 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX))
}

impl RibState {
    /// Writes a snapshot now if one is due (called on every tick).
    pub(crate) fn maybe_dump_rib(&mut self) {
        let Some(mut d) = self.rib_dumper.take() else {
            return;
        };
        if let Some(at) = d.due(SystemTime::now()) {
            self.dump_rib(&mut d, at);
        }
        self.rib_dumper = Some(d);
    }

    /// Encodes the whole RIB into `d` as one snapshot stamped `at`.
    pub(crate) fn dump_rib(&self, d: &mut RibDumper, at: u64) {
        let ts = u32::try_from(at).unwrap_or(u32::MAX);
        // PEER_INDEX_TABLE: index 0 is this router (static routes), then
        // every configured neighbour; `index_of[peer id]` maps to it.
        let mut peers = vec![Peer::new(
            self.settings.router_id,
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            self.settings.local_asn,
        )];
        let mut index_of = vec![u16::MAX; self.peers.len().max(1)];
        let mut originated = vec![secs(self.started); self.peers.len().max(1)];
        if let Some(i) = index_of.get_mut(STATIC_PEER.0 as usize) {
            *i = 0;
        }
        for (id, p) in self.peer_iter() {
            let bgp_id =
                p.up.as_ref()
                    .map_or(Ipv4Addr::UNSPECIFIED, |u| u.negotiated.peer_bgp_id);
            let Ok(ix) = u16::try_from(peers.len()) else {
                break;
            };
            peers.push(Peer::new(bgp_id, p.meta.addr, p.meta.remote_asn));
            if let Some(slot) = index_of.get_mut(id.0 as usize) {
                *slot = ix;
            }
            if let (Some(o), Some(up)) = (originated.get_mut(id.0 as usize), p.up.as_ref()) {
                *o = secs(up.since);
            }
        }

        if !d.begin(at) {
            return;
        }
        let mut w = MrtWriter::new(Vec::with_capacity(CHUNK + (64 << 10)));
        let ok = w
            .write_peer_index_table(ts, self.settings.router_id, "tesserad", &peers)
            .is_ok();
        if !ok {
            warn!("MRT RIB dump: peer index table not encodable");
            d.end();
            return;
        }
        let mut attrs = Vec::new();
        let mut pos: Vec<EntryPos> = Vec::new();
        let mut seq: u32 = 0;
        let mut in_chunk = 0usize;
        for r in self.rib.iter() {
            attrs.clear();
            pos.clear();
            let mut add_path = false;
            for (p, set) in r.iter() {
                let Some(&peer_index) = index_of.get(p.peer.0 as usize) else {
                    continue;
                };
                if peer_index == u16::MAX {
                    continue;
                }
                let start = attrs.len();
                if !table_dump_attrs(set.raw(), &mut attrs) {
                    attrs.truncate(start);
                    continue;
                }
                add_path |= p.path_id != 0;
                pos.push(EntryPos {
                    peer_index,
                    originated: originated.get(p.peer.0 as usize).copied().unwrap_or(ts),
                    path_id: p.path_id,
                    start,
                    end: attrs.len(),
                });
            }
            if pos.is_empty() {
                continue;
            }
            let entries = pos.iter().map(|e| RibEntry {
                peer_index: e.peer_index,
                originated_time: e.originated,
                path_id: add_path.then_some(e.path_id),
                attributes: attrs.get(e.start..e.end).unwrap_or_default(),
            });
            let prefix: Prefix = r.prefix;
            if let Err(e) = w.write_rib_entries(ts, seq, prefix, Safi::Unicast, add_path, entries) {
                warn!(%prefix, "MRT RIB dump: record not encodable: {e}");
                continue;
            }
            seq = seq.wrapping_add(1);
            in_chunk += 1;
            // Records average well under 256 bytes; hand over roughly
            // CHUNK-sized pieces.
            if in_chunk >= CHUNK / 256 {
                in_chunk = 0;
                match std::mem::replace(
                    &mut w,
                    MrtWriter::new(Vec::with_capacity(CHUNK + (64 << 10))),
                )
                .finish()
                {
                    Ok(bytes) => {
                        if !d.chunk(bytes) {
                            return;
                        }
                    }
                    Err(e) => warn!("MRT RIB dump: {e}"),
                }
            }
        }
        if let Ok(bytes) = w.finish() {
            d.chunk(bytes);
        }
        d.end();
    }
}
