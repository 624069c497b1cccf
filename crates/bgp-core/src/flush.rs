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
    route_refresh, route_refresh_msg, OutQueue, RibCore, DRAIN_STEP, OUT_QUEUE_LIMIT,
};
use crate::outbox::{Marker, Markers, Outbox, Output, Stage};

impl RibCore {
    /// Hands every Established session what its Adj-RIB-Out has queued,
    /// up to the room left in its queue of encoded bytes
    /// ([`OUT_QUEUE_LIMIT`]): the rest stays queued as prefixes and is
    /// encoded by a later flush, once the session's writer has drained
    /// (it wakes the RIB below [`crate::OUT_QUEUE_LOW`]; the periodic
    /// tick retries too). BoRR goes out with the first part of a refresh's
    /// routes, End-of-RIB and EoRR with the last.
    pub(crate) fn flush(&mut self, now: Instant, out: &mut Outbox) {
        for i in 0..self.peers.len() {
            let id = PeerId(i as u16);
            let Some(Some(entry)) = self.peers.get_mut(i) else {
                continue;
            };
            let Some(up) = entry.up.as_mut() else {
                continue;
            };
            let queued = entry.status.queued_bytes();
            if queued >= OUT_QUEUE_LIMIT {
                continue;
            }
            let room = (OUT_QUEUE_LIMIT - queued) as usize;
            let marked = !up.eor_owed.is_empty() || !up.refresh_owed.is_empty();
            if now.since(up.last_flush) < entry.meta.mrai && !marked && !up.backlog {
                continue;
            }
            let te = self.meter.now_ns();
            self.scratch.clear();
            let mut msgs = 0;
            // Unicast, then multicast routes from their own table with
            // SAFI 2 (RFC 4760 §6), each part a step at a time until the
            // room is used.
            let tables = [
                (&mut self.rib, base::Safi::Unicast),
                (&mut self.mcast, base::Safi::Multicast),
            ];
            let mut left = 0;
            for (rib, safi) in tables {
                for s in rib.shards_mut() {
                    while self.scratch.len() < room {
                        let batch = s.drain_updates_max(id, DRAIN_STEP);
                        if batch.is_empty() {
                            break;
                        }
                        msgs += if safi == base::Safi::Unicast {
                            up.encoder.encode(s, &batch, &mut self.scratch)
                        } else {
                            up.encoder.encode_safi(s, &batch, safi, &mut self.scratch)
                        };
                    }
                    left += s.pending_updates(id);
                }
            }
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
                if self.scratch.is_empty() {
                    continue;
                }
                None
            };
            up.last_flush = now;
            self.counters.updates_sent += msgs as u64;
            self.counters.bytes_sent += self.scratch.len() as u64;
            let bytes = std::mem::take(&mut self.scratch);
            out.out.push(Output::Send {
                peer: id,
                bytes,
                markers,
            });
            if msgs > 0 {
                let dt = self.ns().saturating_sub(te);
                out.sample(Stage::Export, dt, msgs as u64);
            }
        }
    }
}
