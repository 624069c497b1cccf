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

use crate::core::{route_refresh, route_refresh_msg, OutQueue, RibCore, OUT_QUEUE_LIMIT};
use crate::outbox::{Marker, Markers, Outbox, Output, Stage};

impl RibCore {
    pub(crate) fn flush(&mut self, now: Instant, out: &mut Outbox) {
        for i in 0..self.peers.len() {
            let id = PeerId(i as u16);
            let Some(Some(entry)) = self.peers.get_mut(i) else {
                continue;
            };
            let Some(up) = entry.up.as_mut() else {
                continue;
            };
            if entry.status.queued_bytes() > OUT_QUEUE_LIMIT {
                continue;
            }
            let marked = !up.eor_owed.is_empty() || !up.refresh_owed.is_empty();
            if now.since(up.last_flush) < entry.meta.mrai && !marked {
                continue;
            }
            let te = self.meter.now_ns();
            self.scratch.clear();
            let mut msgs = 0;
            for s in self.rib.shards_mut() {
                let batch = s.drain_updates(id);
                if !batch.is_empty() {
                    msgs += up.encoder.encode(s, &batch, &mut self.scratch);
                }
            }
            // Multicast routes, from their own table, with SAFI 2 (RFC
            // 4760 §6).
            for s in self.mcast.shards_mut() {
                let batch = s.drain_updates(id);
                if !batch.is_empty() {
                    let safi = base::Safi::Multicast;
                    msgs += up.encoder.encode_safi(s, &batch, safi, &mut self.scratch);
                }
            }
            let markers = if marked {
                let ctx = up.negotiated.parse_ctx();
                let mut m = Markers::default();
                // RFC 7313 §4: BoRR, the re-sent routes, then EoRR.
                for (af, b) in &up.refresh_owed {
                    let mut bytes = Vec::new();
                    let _ = route_refresh_msg(*af, route_refresh::BORR).encode(ctx, &mut bytes);
                    m.head.push(Marker {
                        bytes,
                        barrier: b.clone(),
                    });
                }
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
