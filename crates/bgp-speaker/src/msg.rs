//! The messages that cross threads in the runtime. The vocabulary itself
//! (session -> RIB [`RibInput`], RIB -> session [`SessionCmd`], the
//! shared [`PeerStatus`], [`FlushBarrier`]) lives in the pure `bgp-core`
//! and is re-exported here; this module adds what names the runtime's
//! threads: [`RibMsg`] (what a RIB thread's channel carries) and
//! [`RibSender`] (how sessions reach the RIB in each pipeline mode).

use std::sync::{Arc, Mutex};

use bgp_rib::PeerId;
use tokio::sync::mpsc::UnboundedSender;

pub use bgp_core::msg::{
    split_updates, state, DecodedUpdate, FlushBarrier, LinkAddrs, PeerStatus, RibInput, SessionCmd,
    SessionUp, MAX_SHARDS,
};

/// Everything the RIB thread receives, on one bounded channel so that it
/// can block on a single receiver.
pub enum RibMsg {
    Input(RibInput),
    /// Periodic wake-up (MRAI, back-pressure retries, timers).
    Tick,
    /// A control request (CLI, metrics, reload), run on the RIB thread.
    Control(crate::rib::ControlFn),
}

impl std::fmt::Debug for RibMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RibMsg::Input(i) => f.debug_tuple("Input").field(i).finish(),
            RibMsg::Tick => f.write_str("Tick"),
            RibMsg::Control(_) => f.write_str("Control(..)"),
        }
    }
}

/// The sending side sessions hold, over the RIB's shard threads (one
/// for the sequential pipeline), or over the locked stripes of the
/// `per-peer` and `worker-pool` pipelines ([`crate::striped`]). Bounded:
/// a session that outruns the RIB waits here (asynchronously, so its
/// keepalives keep flowing).
///
/// With several shards an UPDATE batch is split by
/// [`bgp_rib::shard_for`] here, on the session's thread, so each shard
/// thread gets only its own prefixes; the other inputs go to every shard.
#[derive(Clone, Debug)]
pub struct RibSender {
    backend: Backend,
}

#[derive(Clone, Debug)]
enum Backend {
    /// One channel per RIB thread (sequential, sharded).
    Channels(Arc<[tokio::sync::mpsc::Sender<RibMsg>]>),
    /// `per-peer`: the caller applies its input to the stripes itself.
    Striped(Arc<crate::striped::Stripes>),
    /// `worker-pool`: the input goes to the next worker's queue.
    Pool(Arc<crate::striped::Pool>),
}

/// Room reserved for one batch (see [`RibSender::reserve`]).
pub struct RibPermit {
    inner: PermitInner,
}

enum PermitInner {
    Channels(Vec<tokio::sync::mpsc::OwnedPermit<RibMsg>>),
    Striped(Arc<crate::striped::Stripes>),
    Pool(crate::striped::PoolPermit),
}

impl RibPermit {
    /// Sends one batch, split over the shards.
    pub fn send_updates(self, peer: PeerId, updates: Vec<DecodedUpdate>) {
        match self.inner {
            PermitInner::Channels(permits) => {
                let n = permits.len();
                if n == 1 {
                    if let Some(p) = permits.into_iter().next() {
                        p.send(RibMsg::Input(RibInput::Updates { peer, updates }));
                    }
                    return;
                }
                let parts = split_updates(updates, n);
                for (p, updates) in permits.into_iter().zip(parts) {
                    if !updates.is_empty() {
                        p.send(RibMsg::Input(RibInput::Updates { peer, updates }));
                    }
                }
            }
            PermitInner::Striped(s) => s.apply_input(RibInput::Updates { peer, updates }),
            PermitInner::Pool(p) => p.send(RibInput::Updates { peer, updates }),
        }
    }
}

/// [`bgp_core::fan_out`] as RIB thread messages.
pub fn fan_out(input: RibInput, n: usize) -> Vec<(usize, RibMsg)> {
    bgp_core::fan_out(input, n)
        .into_iter()
        .map(|(i, m)| (i, RibMsg::Input(m)))
        .collect()
}

impl RibSender {
    /// One RIB thread (the sequential pipeline, and tests).
    pub fn new(tx: tokio::sync::mpsc::Sender<RibMsg>) -> RibSender {
        RibSender::sharded(vec![tx])
    }

    /// One channel per shard thread, in shard order (the index
    /// [`bgp_rib::shard_for`] returns).
    pub fn sharded(txs: Vec<tokio::sync::mpsc::Sender<RibMsg>>) -> RibSender {
        RibSender {
            backend: Backend::Channels(Arc::from(txs)),
        }
    }

    /// The `per-peer` pipeline: senders apply their input themselves.
    pub fn striped(s: Arc<crate::striped::Stripes>) -> RibSender {
        RibSender {
            backend: Backend::Striped(s),
        }
    }

    /// The `worker-pool` pipeline.
    pub fn pool(p: Arc<crate::striped::Pool>) -> RibSender {
        RibSender {
            backend: Backend::Pool(p),
        }
    }

    /// The `per-peer` pipeline: each session gets its own thread.
    pub fn is_per_peer(&self) -> bool {
        matches!(self.backend, Backend::Striped(_))
    }

    /// Parts the RIB is split into (shards or stripes).
    pub fn shard_count(&self) -> usize {
        match &self.backend {
            Backend::Channels(c) => c.len(),
            Backend::Striped(s) => s.len(),
            Backend::Pool(p) => p.stripes().len(),
        }
    }

    /// Sends `input` where it belongs: UPDATEs split by shard, the rest to
    /// every shard. Returns false when the RIB is gone (shutting down).
    pub async fn send(&self, input: RibInput) -> bool {
        match &self.backend {
            Backend::Channels(txs) => {
                let mut ok = true;
                for (i, m) in fan_out(input, txs.len()) {
                    if let Some(tx) = txs.get(i) {
                        ok &= tx.send(m).await.is_ok();
                    }
                }
                ok
            }
            Backend::Striped(s) => {
                s.apply_input(input);
                true
            }
            Backend::Pool(p) => match p.reserve().await {
                Some(permit) => {
                    permit.send(input);
                    true
                }
                None => false,
            },
        }
    }

    /// [`Self::send`] for a thread outside the async runtime (benchmarks,
    /// in-process tests).
    pub fn blocking_send(&self, input: RibInput) -> bool {
        match &self.backend {
            Backend::Channels(txs) => {
                let mut ok = true;
                for (i, m) in fan_out(input, txs.len()) {
                    if let Some(tx) = txs.get(i) {
                        ok &= tx.blocking_send(m).is_ok();
                    }
                }
                ok
            }
            Backend::Striped(s) => {
                s.apply_input(input);
                true
            }
            Backend::Pool(p) => match p.blocking_reserve() {
                Some(permit) => {
                    permit.send(input);
                    true
                }
                None => false,
            },
        }
    }

    /// Hands `updates` over if every shard's channel has room now;
    /// otherwise gives them back untouched.
    pub fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>> {
        let inner = match &self.backend {
            Backend::Channels(txs) => {
                let mut permits = Vec::with_capacity(txs.len());
                for tx in txs.iter() {
                    match tx.clone().try_reserve_owned() {
                        Ok(p) => permits.push(p),
                        Err(_) => return Err(updates),
                    }
                }
                PermitInner::Channels(permits)
            }
            Backend::Striped(s) => PermitInner::Striped(s.clone()),
            Backend::Pool(p) => match p.try_reserve() {
                Some(permit) => PermitInner::Pool(permit),
                None => return Err(updates),
            },
        };
        RibPermit { inner }.send_updates(peer, updates);
        Ok(())
    }

    /// Waits for room on every shard's channel (cancel-safe: dropping the
    /// future releases what it reserved). None when the RIB is gone.
    pub async fn reserve(&self) -> Option<RibPermit> {
        let inner = match &self.backend {
            Backend::Channels(txs) => {
                let mut permits = Vec::with_capacity(txs.len());
                for tx in txs.iter() {
                    permits.push(tx.clone().reserve_owned().await.ok()?);
                }
                PermitInner::Channels(permits)
            }
            Backend::Striped(s) => PermitInner::Striped(s.clone()),
            Backend::Pool(p) => PermitInner::Pool(p.reserve().await?),
        };
        Some(RibPermit { inner })
    }
}

/// The writer queue of a session's current connection. The session
/// publishes it when it reaches Established (before the RIB hears of the
/// session) and withdraws it when it leaves, so a RIB thread hands encoded
/// UPDATEs straight to the connection's writer: one hop, not a relay
/// through the session task.
#[derive(Debug, Default)]
pub struct WriterSlot {
    inner: Mutex<Option<(u64, UnboundedSender<Vec<u8>>)>>,
}

impl WriterSlot {
    /// Session number `session` (see `bgp_core::SessionUp::session`) now
    /// writes through `tx`.
    pub fn publish(&self, session: u64, tx: UnboundedSender<Vec<u8>>) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Some((session, tx));
    }

    /// The session left Established: nothing more goes to its writer.
    pub fn withdraw(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Hands `buf`, encoded for session number `session`, to its writer;
    /// gives it back when that session is gone (the caller then uncounts
    /// it from the queued bytes).
    pub fn send(&self, session: u64, buf: Vec<u8>) -> Result<(), Vec<u8>> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match g.as_ref() {
            Some((s, tx)) if *s == session => tx.send(buf).map_err(|e| e.0),
            _ => Err(buf),
        }
    }
}
