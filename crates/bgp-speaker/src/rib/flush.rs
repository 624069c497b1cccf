//! Handing each session what its Adj-RIB-Out has queued: packed UPDATEs,
//! and the markers that must bracket them (End-of-RIB after the initial
//! table, RFC 4724 §2; BoRR and EoRR around the routes re-sent for an
//! enhanced route refresh, RFC 7313 §4).
//!
//! With the RIB split over shard threads each shard flushes its own
//! prefixes; the markers are ordered across shards by the
//! [`FlushBarrier`] that came with the session's Up or ROUTE-REFRESH: the
//! first shard through writes the BoRR, the last the End-of-RIB / EoRR,
//! each under the session's `out_lock` so the session's queue sees them in
//! that order.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use base::AfiSafi;
use bgp_rib::PeerId;

use super::{route_refresh, route_refresh_msg, RibState, OUT_QUEUE_LIMIT};
use crate::msg::{FlushBarrier, SessionCmd};
use crate::stages::Stage;

fn passes_first(b: Option<&Arc<FlushBarrier>>) -> bool {
    b.is_none_or(|b| b.first())
}
fn passes_last(b: Option<&Arc<FlushBarrier>>) -> bool {
    b.is_none_or(|b| b.last())
}

impl RibState {
    pub(super) fn flush(&mut self) {
        let now = std::time::Instant::now();
        for i in 0..self.peers.len() {
            let id = PeerId(i as u16);
            let Some(Some(entry)) = self.peers.get_mut(i) else {
                continue;
            };
            let Some(up) = entry.up.as_mut() else {
                continue;
            };
            if entry.status.out_queued_bytes.load(Ordering::Relaxed) > OUT_QUEUE_LIMIT {
                continue;
            }
            let markers = !up.eor_owed.is_empty() || !up.refresh_owed.is_empty();
            if now.duration_since(up.last_flush) < entry.meta.mrai && !markers {
                continue;
            }
            let te = std::time::Instant::now();
            self.scratch.clear();
            let mut msgs = 0;
            for s in self.rib.shards_mut() {
                let batch = s.drain_updates(id);
                if !batch.is_empty() {
                    msgs += up.encoder.encode(s, &batch, &mut self.scratch);
                }
            }
            if msgs > 0 {
                crate::stages::record_n(Stage::Export, te, msgs as u64);
            }
            let buf = if markers {
                // The session's lock is held from the barrier checks until
                // the bytes are in its queue.
                let _order = entry
                    .status
                    .out_lock
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let ctx = up.negotiated.parse_ctx();
                let mut buf = Vec::with_capacity(self.scratch.len() + 64);
                // RFC 7313 §4: BoRR, the re-sent routes, then EoRR.
                for (af, b) in &up.refresh_owed {
                    if passes_first(b.as_ref()) {
                        let _ = route_refresh_msg(*af, route_refresh::BORR).encode(ctx, &mut buf);
                    }
                }
                buf.extend_from_slice(&self.scratch);
                // RFC 4724 §2: End-of-RIB after the initial table.
                if !up.eor_owed.is_empty() {
                    let barrier = up.eor_barrier.take();
                    let eor: Vec<AfiSafi> = up.eor_owed.drain(..).collect();
                    if passes_last(barrier.as_ref()) {
                        for af in eor {
                            up.encoder.end_of_rib(af, &mut buf);
                        }
                    }
                }
                for (af, b) in up.refresh_owed.drain(..) {
                    if passes_last(b.as_ref()) {
                        let _ = route_refresh_msg(af, route_refresh::EORR).encode(ctx, &mut buf);
                    }
                }
                if buf.is_empty() {
                    continue;
                }
                entry
                    .status
                    .out_queued_bytes
                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                up.last_flush = now;
                self.counters.updates_sent += msgs as u64;
                self.counters.bytes_sent += buf.len() as u64;
                let _ = entry.cmd.send(SessionCmd::Send(buf));
                continue;
            } else {
                if self.scratch.is_empty() {
                    continue;
                }
                std::mem::take(&mut self.scratch)
            };
            up.last_flush = now;
            self.counters.updates_sent += msgs as u64;
            self.counters.bytes_sent += buf.len() as u64;
            entry
                .status
                .out_queued_bytes
                .fetch_add(buf.len() as u64, Ordering::Relaxed);
            let _ = entry.cmd.send(SessionCmd::Send(buf));
        }
    }
}
