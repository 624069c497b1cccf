//! What a RIB thread publishes for the readers that must not wait for it
//! (issue 17): `/metrics`, `show protocols`, `show neighbor`, `show route
//! count`, the BMP statistics reports and, through the CLI handler, the
//! gRPC API's peer list and the looking glass.
//!
//! Before, each of those sent a control job to every RIB thread and
//! waited for the answers, so during an import a scrape took as long as
//! the batch a thread was in (p50 0.19 s, up to 2 s in scenario (c10)).
//! Now each RIB thread builds a [`Published`] snapshot from its own state
//! and swaps it into its [`PublishSlot`]; a reader clones the `Arc` of
//! every slot and merges them, never touching a RIB thread.
//!
//! When a thread publishes ([`super::RibState`]): after a session event
//! (up, down, route refresh) or a tick at once; after a batch of
//! UPDATEs, a next-hop or RPKI change or an export round when
//! [`PUBLISH_EVERY`] has passed since the last snapshot; and when the
//! thread runs out of input and is about to wait, if the throttle held a
//! change back (the striped pipelines' worker threads have no such point:
//! the tick covers them). A control job that a caller waits for
//! ([`crate::pipeline::call_all`], `Control::call`) publishes before it
//! answers, so a command (`neighbor disable`, a reload) is visible to the
//! next read. So the counts a reader sees lag the RIB by at most the
//! message or export round the thread is in plus [`PUBLISH_EVERY`] of
//! applied input; an idle thread's snapshot is current.
//!
//! Cost on the apply path: none per route change (the counts are kept by
//! `bgp_rib`'s `counted.rs` as before); one clock read per batch; and per
//! snapshot one `Vec<ProtocolInfo>` and two `RouteCount`s, O(peers),
//! at most every [`PUBLISH_EVERY`] under load. The slot's mutex is held
//! only to swap or clone an `Arc`.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mgmt::proto::{ProtocolInfo, RouteCount};

use super::RibCounters;

/// The least time between two snapshots taken after UPDATE batches or
/// export rounds (other messages publish at once).
pub const PUBLISH_EVERY: Duration = Duration::from_millis(20);

/// One RIB thread's answers for the readers that do not wait for it.
#[derive(Clone, Debug, Default)]
pub struct Published {
    /// `show protocols all` of this thread's part (route counts of its
    /// prefixes only; parts are merged by [`crate::daemon::merge`]).
    pub protocols: Vec<ProtocolInfo>,
    /// `show route count` of the unicast tables.
    pub route_count: RouteCount,
    /// `show route count multicast`.
    pub mcast_count: RouteCount,
    /// The core's counters (`/metrics`).
    pub counters: RibCounters,
    /// Interned attribute sets (`/metrics`).
    pub attr_sets: usize,
    /// BMP statistics: per established peer address (paths in its
    /// post-policy Adj-RIB-In, best paths from it); empty without `[bmp]`.
    pub bmp: BTreeMap<IpAddr, (u64, u64)>,
    /// Snapshots taken by this thread so far (1 for the first).
    pub seq: u64,
}

/// The snapshot of one RIB thread's state, numbered `seq`: the same
/// answers the control jobs give (`daemon::query`), taken on that thread.
pub(super) fn snapshot(st: &super::RibState, seq: u64) -> Published {
    Published {
        protocols: crate::daemon::query::protocols(st, true, None),
        route_count: crate::daemon::query::route_count_of(st, false),
        mcast_count: crate::daemon::query::route_count_of(st, true),
        counters: st.core.counters.clone(),
        attr_sets: st.core.rib.attr_set_count(),
        bmp: if st.bmp.is_some() {
            st.bmp_counts()
        } else {
            Default::default()
        },
        seq,
    }
}

/// Where one RIB thread publishes its [`Published`] snapshot.
#[derive(Debug, Default)]
pub struct PublishSlot {
    cur: Mutex<Arc<Published>>,
}

impl PublishSlot {
    /// The last snapshot (an empty one before the first).
    pub fn get(&self) -> Arc<Published> {
        match self.cur.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces the snapshot; the old one is freed by its last reader.
    pub(crate) fn set(&self, p: Published) {
        let new = Arc::new(p);
        let old = match self.cur.lock() {
            Ok(mut g) => std::mem::replace(&mut *g, new),
            Err(p) => {
                let mut g = p.into_inner();
                std::mem::replace(&mut *g, new)
            }
        };
        // Dropped outside the lock.
        drop(old);
    }
}

/// The slots of a pipeline's RIB threads, read together.
pub type Slots = Vec<Arc<PublishSlot>>;

/// The current snapshot of every slot, in slot order.
pub fn read_all(slots: &[Arc<PublishSlot>]) -> Vec<Arc<Published>> {
    slots.iter().map(|s| s.get()).collect()
}
