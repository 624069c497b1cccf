//! Handing each session what its Adj-RIB-Out has queued: packed UPDATEs,
//! and the markers that must bracket them (End-of-RIB after the initial
//! table, RFC 4724 §2; BoRR and EoRR around the routes re-sent for an
//! enhanced route refresh, RFC 7313 §4).
//!
//! With the RIB split over several parts each part flushes its own
//! prefixes; the markers are ordered across parts by the
//! [`FlushBarrier`](crate::msg::FlushBarrier) that came with the session's
//! Up or ROUTE-REFRESH. The core only encodes them and names the barrier
//! ([`Markers`]); the runtime passes the barrier and hands the bytes over
//! in one step under the session's lock ([`crate::PeerStatus::hand_over`]).

use base::Instant;
use bgp_rib::PeerId;

use crate::core::{
    route_refresh, route_refresh_msg, OutQueue, RibCore, CROWDED_SESSIONS, DRAIN_STEP,
    OUT_QUEUE_LIMIT,
};
use crate::outbox::{Marker, Markers, Outbox, Output, Stage};
use bgp_rib::{ExportBatch, RibShard, UpdateEncoder};
use bytes::Bytes;
use std::collections::HashMap;

/// A batch drained this flush, its encoding and its message count.
type Shared = (ExportBatch, Bytes, usize);

/// A session's encoded bytes leave the flush in buffers of about this
/// size: each is freed as soon as the writer has written it, and an
/// exact-size copy holds no spare capacity (a `Vec` grown by doubling and
/// handed over whole held up to twice what it carried).
pub(crate) const ENCODE_CHUNK: usize = 64 << 10;

/// Moves what `scratch` holds into `body` as one exact-size buffer; the
/// scratch keeps its capacity for the next encoding.
fn seal(scratch: &mut Vec<u8>, body: &mut Vec<Bytes>) {
    if !scratch.is_empty() {
        body.push(Bytes::copy_from_slice(scratch));
        scratch.clear();
    }
}

/// Appends `batch`'s UPDATEs of `safi` to `out`; returns the messages.
fn encode(
    enc: &mut UpdateEncoder,
    s: &RibShard,
    batch: &ExportBatch,
    safi: base::Safi,
    out: &mut Vec<u8>,
) -> usize {
    if safi == base::Safi::Unicast {
        enc.encode(s, batch, out)
    } else {
        enc.encode_safi(s, batch, safi, out)
    }
}

impl RibCore {
    /// Hands every Established session whose queue of encoded bytes is
    /// below [`RibCore::refill_below`] what its Adj-RIB-Out has queued, up
    /// to the room left in that queue ([`OUT_QUEUE_LIMIT`]): the rest stays queued as prefixes and is
    /// encoded by a later flush, once the session's writer has drained
    /// (it wakes the RIB below [`crate::OUT_QUEUE_LOW`]; the periodic
    /// tick retries too). BoRR goes out with the first part of a refresh's
    /// routes, End-of-RIB and EoRR with the last.
    pub(crate) fn flush(&mut self, now: Instant, out: &mut Outbox) {
        // One encoding per update group (issue 17): per (table, RIB shard,
        // group, encoding class), the batches drained this flush, by step,
        // with their encoding. Another member whose step drains an equal
        // batch gets the same buffer.
        let mut share: HashMap<(usize, usize, usize, u64), Vec<Shared>> = HashMap::new();
        // Many busy sessions (bytes unwritten or changes pending): each
        // part fills only its share of a session's room.
        let mut busy = 0;
        for (i, e) in self.peers.iter().enumerate() {
            let Some(e) = e.as_ref().filter(|e| e.up.is_some()) else {
                continue;
            };
            let id = PeerId(i as u16);
            if e.status.queued_bytes() > 0
                || [&self.rib, &self.mcast]
                    .iter()
                    .any(|r| r.shards().iter().any(|s| s.pending_updates(id) > 0))
            {
                busy += 1;
            }
        }
        self.busy_sessions = busy;
        let parts = if busy > CROWDED_SESSIONS {
            self.part.count.max(1)
        } else {
            1
        };
        for i in 0..self.peers.len() {
            let id = PeerId(i as u16);
            let Some(Some(entry)) = self.peers.get_mut(i) else {
                continue;
            };
            let Some(up) = entry.up.as_mut() else {
                continue;
            };
            let queued = entry.status.queued_bytes();
            // Coalescing: a session with unwritten bytes above the refill
            // mark gets nothing new until its writer drains below it (and
            // wakes the RIB): its changes wait as prefixes meanwhile.
            if queued >= OUT_QUEUE_LIMIT.min(self.refill_below) {
                continue;
            }
            let marked = !up.eor_owed.is_empty() || !up.refresh_owed.is_empty();
            if now.since(up.last_flush) < entry.meta.mrai && !marked && !up.backlog {
                continue;
            }
            // Each RIB part (shard thread) flushes on its own against the
            // one count: two parts that see the same queue may each fill
            // the room. Splitting it (each part its share) cut (c30)'s
            // peak RSS further but doubled the refills of a fast reader:
            // (a)'s convergence 0.94 -> 1.8 s, (c10)'s 6.3 -> 9.7 s (ADR
            // 0004 addendum); so only with more than `CROWDED_SESSIONS`
            // busy sessions, which share the sockets' bandwidth anyway.
            let room = (OUT_QUEUE_LIMIT - queued) as usize / parts;
            let te = self.meter.now_ns();
            self.scratch.clear();
            let mut body: Vec<Bytes> = Vec::new();
            let mut size = 0;
            let mut msgs = 0;
            // Unicast, then multicast routes from their own table with
            // SAFI 2 (RFC 4760 §6), each part a step at a time until the
            // room is used.
            let tables = [
                (&mut self.rib, base::Safi::Unicast),
                (&mut self.mcast, base::Safi::Multicast),
            ];
            let mut left = 0;
            for (t, (rib, safi)) in tables.into_iter().enumerate() {
                for (k, s) in rib.shards_mut().iter_mut().enumerate() {
                    let group = self
                        .share_encodings
                        .then(|| s.update_group_of(id))
                        .flatten();
                    let mut step = 0;
                    while size < room {
                        let batch = s.drain_updates_max(id, DRAIN_STEP);
                        if batch.is_empty() {
                            break;
                        }
                        let Some(g) = group else {
                            // Alone: encoded into this flush's own buffer,
                            // handed on in chunks of about `ENCODE_CHUNK`.
                            let before = self.scratch.len();
                            msgs += encode(&mut up.encoder, s, &batch, safi, &mut self.scratch);
                            size += self.scratch.len() - before;
                            self.counters.encodings += 1;
                            self.counters.encoding_sends += 1;
                            if self.scratch.len() >= ENCODE_CHUNK {
                                seal(&mut self.scratch, &mut body);
                            }
                            continue;
                        };
                        // What this member encoded alone goes first.
                        seal(&mut self.scratch, &mut body);
                        // An update-group member: the same batch at the
                        // same step of this flush, drained by a member
                        // whose session encodes alike, is the same bytes.
                        let key = (t, k, g, up.enc_class);
                        let seen = share.entry(key).or_default();
                        let (bytes, n) = match seen.get(step).filter(|e| e.0 == batch) {
                            Some((_, b, n)) => (b.clone(), *n),
                            None => {
                                let n = encode(&mut up.encoder, s, &batch, safi, &mut self.scratch);
                                // An exact-size copy: the scratch keeps its
                                // capacity, the queue holds no spare half.
                                let b = Bytes::copy_from_slice(&self.scratch);
                                self.scratch.clear();
                                self.counters.encodings += 1;
                                if seen.len() == step {
                                    seen.push((batch, b.clone(), n));
                                }
                                (b, n)
                            }
                        };
                        step += 1;
                        self.counters.encoding_sends += 1;
                        msgs += n;
                        size += bytes.len();
                        if !bytes.is_empty() {
                            body.push(bytes);
                        }
                    }
                    left += s.pending_updates(id);
                }
            }
            seal(&mut self.scratch, &mut body);
            up.backlog = left > 0;
            let heads_owed = up.refresh_heads_sent < up.refresh_owed.len();
            let tails_due = marked && left == 0;
            let markers = if heads_owed || tails_due {
                let ctx = up.negotiated.parse_ctx();
                let mut m = Markers::default();
                // RFC 7313 §4: BoRR, the re-sent routes, then EoRR. The
                // BoRR goes with the first output after the request.
                for (af, b) in up.refresh_owed.iter().skip(up.refresh_heads_sent) {
                    let mut bytes = Vec::new();
                    let _ = route_refresh_msg(*af, route_refresh::BORR).encode(ctx, &mut bytes);
                    m.head.push(Marker {
                        bytes,
                        barrier: b.clone(),
                    });
                }
                up.refresh_heads_sent = up.refresh_owed.len();
                if tails_due {
                    // RFC 4724 §2: End-of-RIB after the initial table.
                    if !up.eor_owed.is_empty() {
                        let mut bytes = Vec::new();
                        for af in up.eor_owed.drain(..) {
                            up.encoder.end_of_rib(af, &mut bytes);
                        }
                        m.tail.push(Marker {
                            bytes,
                            barrier: up.eor_barrier.take(),
                        });
                    }
                    for (af, b) in up.refresh_owed.drain(..) {
                        let mut bytes = Vec::new();
                        let _ = route_refresh_msg(af, route_refresh::EORR).encode(ctx, &mut bytes);
                        m.tail.push(Marker { bytes, barrier: b });
                    }
                    up.refresh_heads_sent = 0;
                }
                Some(m)
            } else {
                if body.is_empty() {
                    continue;
                }
                None
            };
            up.last_flush = now;
            self.counters.updates_sent += msgs as u64;
            self.counters.bytes_sent += size as u64;
            out.out.push(Output::Send {
                peer: id,
                bytes: body,
                markers,
            });
            if msgs > 0 {
                let dt = self.ns().saturating_sub(te);
                out.sample(Stage::Export, dt, msgs as u64);
            }
        }
    }
}
