//! The messages that cross threads in the runtime. The vocabulary itself
//! (session -> RIB [`RibInput`], RIB -> session [`SessionCmd`], the
//! shared [`PeerStatus`], [`FlushBarrier`]) lives in the pure `bgp-core`
//! and is re-exported here. This module adds how sessions reach the RIB,
//! [`RibSender`] (a trait: one implementation per pipeline mode, in
//! `pipeline` and `striped`, so this vocabulary names none), and the
//! connection's writer queue the RIB writes to ([`WriterSlot`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bgp_rib::PeerId;
use tokio::sync::mpsc::UnboundedSender;

pub use bgp_core::msg::{
    split_updates, state, DecodedUpdate, FlushBarrier, LinkAddrs, PeerStatus, RibInput, SessionCmd,
    SessionUp, MAX_SHARDS,
};

/// A boxed future that can move between threads.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How sessions hand their input to the RIB; one implementation per
/// pipeline mode: `pipeline::ChannelSender` (one bounded channel per RIB
/// thread: `sequential`, `sharded`), `striped::StripedSender` (`per-peer`:
/// the caller applies its input itself) and `striped::PoolSender`
/// (`worker-pool`). Bounded: a session that outruns the RIB waits here
/// (asynchronously, so its keepalives keep flowing). With several RIB
/// parts an UPDATE batch is split by [`bgp_rib::shard_for`] on the
/// session's thread, so each part gets only its own prefixes; the other
/// inputs go to every part.
pub trait RibSender: Send + Sync + std::fmt::Debug {
    /// Sends `input` where it belongs. False when the RIB is gone
    /// (shutting down).
    fn send(&self, input: RibInput) -> BoxFuture<'_, bool>;
    /// [`Self::send`] for a thread outside the async runtime (tests,
    /// benchmarks).
    fn blocking_send(&self, input: RibInput) -> bool;
    /// Hands `updates` over if there is room now; otherwise gives them
    /// back untouched.
    fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>>;
    /// Waits for room for one batch (cancel-safe: dropping the future
    /// releases what it reserved). None when the RIB is gone.
    fn reserve(&self) -> BoxFuture<'_, Option<RibPermit>>;
    /// `per-peer`: each session applies its own input, on a thread of its
    /// own.
    fn is_per_peer(&self) -> bool {
        false
    }
}

/// What sessions hold.
pub type RibTx = Arc<dyn RibSender>;

/// Room reserved for one batch (see [`RibSender::reserve`]).
pub struct RibPermit(Box<dyn FnOnce(PeerId, Vec<DecodedUpdate>) + Send>);

impl RibPermit {
    /// A permit that sends with `f`.
    pub fn new(f: impl FnOnce(PeerId, Vec<DecodedUpdate>) + Send + 'static) -> RibPermit {
        RibPermit(Box::new(f))
    }
    /// Sends one batch, split over the RIB's parts.
    pub fn send_updates(self, peer: PeerId, updates: Vec<DecodedUpdate>) {
        (self.0)(peer, updates)
    }
}

/// The writer queue of a session's current connection. The session
/// publishes it when it reaches Established (before the RIB hears of the
/// session) and withdraws it when it leaves, so a RIB thread hands encoded
/// UPDATEs straight to the connection's writer: one hop, not a relay
/// through the session task.
#[derive(Debug, Default)]
pub struct WriterSlot {
    inner: Mutex<Option<(u64, UnboundedSender<bytes::Bytes>)>>,
}

impl WriterSlot {
    /// Session number `session` (see `bgp_core::SessionUp::session`) now
    /// writes through `tx`.
    pub fn publish(&self, session: u64, tx: UnboundedSender<bytes::Bytes>) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Some((session, tx));
    }

    /// The session left Established: nothing more goes to its writer.
    pub fn withdraw(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Hands `buf`, encoded for session number `session`, to its writer
    /// (a refcounted buffer: update-group members share one); gives it
    /// back when that session is gone (the caller then uncounts it from
    /// the queued bytes).
    pub fn send(&self, session: u64, buf: bytes::Bytes) -> Result<(), bytes::Bytes> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some((s, tx)) if *s == session => tx.send(buf).map_err(|e| e.0),
            _ => Err(buf),
        }
    }
}
