//! The RIB thread's half of the periodic TABLE_DUMP_V2 snapshots (see
//! [`crate::rib_dump`] for the format and the writer thread): the peer
//! index table and one RIB record per prefix, encoded in chunks.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
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

/// The RIB dumper shared by the shard threads of a split RIB. A snapshot
/// is a round: the first shard to find it due writes the PEER_INDEX_TABLE,
/// then every shard appends its own prefixes' records (under the lock, so
/// records of two shards never interleave inside a chunk and sequence
/// numbers stay unique), and the last one ends the file.
pub struct SharedRibDump {
    parts: usize,
    inner: Mutex<Round>,
}

struct Round {
    dumper: RibDumper,
    /// Rounds started so far; a shard remembers the last it joined.
    number: u64,
    active: Option<Active>,
}

struct Active {
    at: u64,
    remaining: usize,
    seq: u32,
    index_of: Vec<u16>,
    originated: Vec<u32>,
}

impl SharedRibDump {
    pub fn new(dumper: RibDumper, parts: usize) -> Arc<SharedRibDump> {
        Arc::new(SharedRibDump {
            parts: parts.max(1),
            inner: Mutex::new(Round {
                dumper,
                number: 0,
                active: None,
            }),
        })
    }

    /// Snapshots started so far.
    pub fn dumps(&self) -> u64 {
        self.inner.lock().map_or(0, |g| g.dumper.dumps)
    }
}

impl RibState {
    /// Writes this shard's part of a snapshot if one is due or under way
    /// (called on every tick).
    pub(crate) fn maybe_dump_rib(&mut self) {
        let Some(shared) = self.rib_dumper.clone() else {
            return;
        };
        let Ok(mut g) = shared.inner.lock() else {
            return;
        };
        let round = &mut *g;
        if round.active.is_none() {
            let Some(at) = round.dumper.due(SystemTime::now()) else {
                return;
            };
            let Some((index_of, originated)) = self.dump_header(&mut round.dumper, at) else {
                return;
            };
            round.number += 1;
            round.active = Some(Active {
                at,
                remaining: shared.parts,
                seq: 0,
                index_of,
                originated,
            });
        }
        if self.dumped_round == round.number {
            return;
        }
        self.dumped_round = round.number;
        let Some(a) = round.active.as_mut() else {
            return;
        };
        let ok = self.dump_records(&mut round.dumper, a);
        a.remaining -= 1;
        if a.remaining == 0 || !ok {
            round.dumper.end();
            round.active = None;
        }
    }

    /// Starts a snapshot stamped `at` with the PEER_INDEX_TABLE; returns
    /// the peer id -> index map and the per-peer originated times.
    fn dump_header(&self, d: &mut RibDumper, at: u64) -> Option<(Vec<u16>, Vec<u32>)> {
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
            return None;
        }
        let mut w = MrtWriter::new(Vec::with_capacity(64 << 10));
        let ok = w
            .write_peer_index_table(ts, self.settings.router_id, "tesserad", &peers)
            .is_ok();
        let bytes = w.finish().ok().filter(|_| ok);
        if !bytes.is_some_and(|b| d.chunk(b)) {
            warn!("MRT RIB dump: peer index table not encodable");
            d.end();
            return None;
        }
        Some((index_of, originated))
    }

    /// Appends one RIB record per prefix of this shard; false when the
    /// writer is gone.
    fn dump_records(&self, d: &mut RibDumper, a: &mut Active) -> bool {
        let ts = u32::try_from(a.at).unwrap_or(u32::MAX);
        let (index_of, originated) = (&a.index_of, &a.originated);
        let mut w = MrtWriter::new(Vec::with_capacity(CHUNK + (64 << 10)));
        let mut attrs = Vec::new();
        let mut pos: Vec<EntryPos> = Vec::new();
        let mut seq: u32 = a.seq;
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
                            return false;
                        }
                    }
                    Err(e) => warn!("MRT RIB dump: {e}"),
                }
            }
        }
        a.seq = seq;
        match w.finish() {
            Ok(bytes) => d.chunk(bytes),
            Err(_) => true,
        }
    }
}
