//! Loc-RIB best-route changes for a forwarding plane (the `fib` crate, or
//! anything else that wants to follow the best routes, as BIRD's `kernel`
//! protocol does).
//!
//! A subscriber is a bounded channel of batches. On subscription it gets
//! the whole Loc-RIB (in batches of [`SNAPSHOT_BATCH`]), then, after every
//! export round of the RIB thread, one batch with each prefix whose best
//! path changed, in the order the RIB saw them. The channel is bounded on
//! purpose: a forwarding plane that cannot keep up slows the RIB rather
//! than growing an unbounded queue; a subscriber that hangs up is dropped.
//!
//! Resolution of next hops to interfaces and MAC addresses is the
//! subscriber's business; here the next hop is the BGP NEXT_HOP as stored
//! (post-import-policy), with the IPv6 global address when a link-local one
//! is also present.

use std::sync::mpsc::{SyncSender, TrySendError};

pub use bgp_core::{best_next_hop, BestChange};

/// Routes per batch when the whole Loc-RIB is sent at subscription.
pub const SNAPSHOT_BATCH: usize = 4096;

/// The sending half of a subscription.
pub type BestSender = SyncSender<Vec<BestChange>>;

/// The subscribers of one RIB thread.
#[derive(Default)]
pub struct BestFeed {
    subs: Vec<BestSender>,
    batch: Vec<BestChange>,
}

impl BestFeed {
    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// Sends `snapshot` (the whole Loc-RIB) to `tx`, then registers it.
    pub fn subscribe(&mut self, snapshot: impl Iterator<Item = BestChange>, tx: BestSender) {
        let mut batch = Vec::with_capacity(SNAPSHOT_BATCH);
        for c in snapshot {
            batch.push(c);
            if batch.len() == SNAPSHOT_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(SNAPSHOT_BATCH));
                if tx.send(full).is_err() {
                    return;
                }
            }
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            return;
        }
        self.subs.push(tx);
    }

    /// Sends one export round's changes to every subscriber (blocking
    /// while a subscriber's channel is full); `batch` is left empty.
    pub fn publish(&mut self, batch: &mut Vec<BestChange>) {
        if self.subs.is_empty() || batch.is_empty() {
            batch.clear();
            return;
        }
        std::mem::swap(&mut self.batch, batch);
        batch.clear();
        let last = self.subs.len() - 1;
        let mut i = 0;
        while i < self.subs.len() {
            let b = if i == last {
                std::mem::take(&mut self.batch)
            } else {
                self.batch.clone()
            };
            let gone = match self.subs[i].try_send(b) {
                Ok(()) => false,
                Err(TrySendError::Full(b)) => self.subs[i].send(b).is_err(),
                Err(TrySendError::Disconnected(_)) => true,
            };
            if gone {
                self.subs.swap_remove(i);
                if self.subs.is_empty() {
                    break;
                }
            } else {
                i += 1;
            }
        }
    }
}
