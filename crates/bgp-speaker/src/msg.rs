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
    /// `worker-pool` with `streams = "per-worker"`: sessions hand over
    /// UPDATE bodies undecoded ([`RawUpdates`]) and the workers parse them.
    fn parses_raw(&self) -> bool {
        false
    }
    /// Hands `raw` over if there is room now; otherwise gives it back.
    /// Sessions use it only where [`Self::parses_raw`]; the other modes
    /// take raw input only through the waiting [`Self::send_raw`] and
    /// [`Self::blocking_send_raw`] (tests), and give it back here.
    fn try_send_raw(&self, peer: PeerId, raw: RawUpdates) -> Result<(), RawUpdates> {
        let _ = peer;
        Err(raw)
    }
    /// Hands `raw` over, waiting for room. False when the RIB is gone.
    /// Modes that do not parse on workers decode it here, on the caller's
    /// thread ([`RawUpdates::decode_here`]).
    fn send_raw(&self, peer: PeerId, raw: RawUpdates) -> BoxFuture<'_, bool> {
        let updates = raw.decode_here();
        self.send(RibInput::Updates { peer, updates })
    }
    /// [`Self::send_raw`] outside the async runtime (tests, benchmarks).
    fn blocking_send_raw(&self, peer: PeerId, raw: RawUpdates) -> bool {
        let updates = raw.decode_here();
        self.blocking_send(RibInput::Updates { peer, updates })
    }
}

/// One connection's side of per-worker parsing: where a worker reports
/// an UPDATE that resets the session, and from which input on the
/// connection's later UPDATEs are dropped.
#[derive(Debug)]
pub struct StreamLink {
    /// The session number ([`SessionUp::session`]) of the connection.
    pub session: u64,
    /// The peer's name, for the log.
    pub name: String,
    /// Decode time is counted here (`PeerStatus::decode_ns`).
    pub status: Arc<PeerStatus>,
    /// The session's end: (session number, the FSM event to drive).
    pub reset: UnboundedSender<(u64, bgp_fsm::Event)>,
    /// The per-peer input number of the batch holding the first UPDATE
    /// that reset the session; `u64::MAX`: none yet. Batches numbered
    /// after it are not applied (the session would not have read them).
    pub dead_from: std::sync::atomic::AtomicU64,
}

impl StreamLink {
    pub fn new(
        session: u64,
        name: String,
        status: Arc<PeerStatus>,
        reset: UnboundedSender<(u64, bgp_fsm::Event)>,
    ) -> Arc<StreamLink> {
        Arc::new(StreamLink {
            session,
            name,
            status,
            reset,
            dead_from: std::sync::atomic::AtomicU64::new(u64::MAX),
        })
    }

    /// Whether an UPDATE of this connection has reset the session.
    pub fn is_dead(&self) -> bool {
        self.dead_from.load(std::sync::atomic::Ordering::Acquire) != u64::MAX
    }

    /// Whether input number `seq` of this peer may still be applied.
    pub fn live(&self, seq: u64) -> bool {
        seq <= self.dead_from.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// UPDATE bodies of one peer, in the order received, not yet parsed (the
/// seed's per-thread streams, seed 001 §4.5: whichever worker takes them
/// parses them, so two batches of one peer are parsed at once).
#[derive(Debug)]
pub struct RawUpdates {
    /// UPDATE bodies, without the 19-octet header (checked by the session).
    pub bodies: Vec<bytes::Bytes>,
    /// The connection's negotiated parse context.
    pub ctx: bgp_wire::ParseCtx,
    /// What next-hop checks need of the connection.
    pub rx: bgp_core::decode::Receiver,
    pub link: Arc<StreamLink>,
}

impl RawUpdates {
    /// Parses the bodies into `out` (the worker's own stream buffer) up to
    /// the first that resets the session; returns that one's event.
    pub fn decode_into(&self, out: &mut Vec<DecodedUpdate>) -> Option<bgp_fsm::Event> {
        use bgp_core::decode::{decode_update_for, Decoded};
        for body in &self.bodies {
            let t0 = std::time::Instant::now();
            let decoded = decode_update_for(body, self.ctx, &self.rx);
            let ns = crate::stages::elapsed_ns(t0);
            self.link
                .status
                .decode_ns
                .fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
            crate::stages::STAGES.record_ns(crate::stages::Stage::Parse, ns);
            match decoded {
                Decoded::Ok(d, note) => {
                    if let Some((e, disp)) = note {
                        tracing::warn!(peer = %self.link.name, error = ?e, ?disp, "RFC 7606: malformed UPDATE handled without reset");
                    }
                    out.push(d);
                }
                Decoded::Reset(ev) => return Some(ev),
            }
        }
        None
    }

    /// Parses on the calling thread (modes without per-worker streams); a
    /// resetting UPDATE is reported to the session as a worker would, and
    /// what follows it in the batch is dropped.
    pub fn decode_here(&self) -> Vec<DecodedUpdate> {
        let mut out = Vec::with_capacity(self.bodies.len());
        if self.link.is_dead() {
            return out;
        }
        if let Some(ev) = self.decode_into(&mut out) {
            self.link
                .dead_from
                .store(0, std::sync::atomic::Ordering::Release);
            let _ = self.link.reset.send((self.link.session, ev));
        }
        out
    }
}

/// What sessions hold.
pub type RibTx = Arc<dyn RibSender>;

/// One batch through a [`RibPermit`]: decoded on the session, or raw for a
/// worker to parse (per-worker streams).
pub enum Batch {
    Decoded(Vec<DecodedUpdate>),
    Raw(RawUpdates),
}

/// Room reserved for one batch (see [`RibSender::reserve`]).
pub struct RibPermit(Box<dyn FnOnce(PeerId, Batch) + Send>);

impl RibPermit {
    /// A permit that sends decoded batches with `f` (a raw batch is
    /// decoded on the calling thread first, [`RawUpdates::decode_here`]).
    pub fn new(f: impl FnOnce(PeerId, Vec<DecodedUpdate>) + Send + 'static) -> RibPermit {
        RibPermit(Box::new(move |peer, b| match b {
            Batch::Decoded(u) => f(peer, u),
            Batch::Raw(r) => f(peer, r.decode_here()),
        }))
    }
    /// A permit that takes either kind of batch as it is (per-worker
    /// streams).
    pub fn any(f: impl FnOnce(PeerId, Batch) + Send + 'static) -> RibPermit {
        RibPermit(Box::new(f))
    }
    /// Sends one batch, split over the RIB's parts.
    pub fn send_updates(self, peer: PeerId, updates: Vec<DecodedUpdate>) {
        (self.0)(peer, Batch::Decoded(updates))
    }
    /// Sends one raw batch.
    pub fn send_raw(self, peer: PeerId, raw: RawUpdates) {
        (self.0)(peer, Batch::Raw(raw))
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
