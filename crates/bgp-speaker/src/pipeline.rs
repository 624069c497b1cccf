//! The UPDATE pipeline modes (`router.pipeline`, Tessera issue 5) and the
//! threads that run them.
//!
//! * `sequential`: one RIB thread owns the whole RIB (the baseline, like
//!   the Quagga the seeds started from). Sessions still read and decode on
//!   the session runtime's threads.
//! * `sharded` (the default): prefixes are hashed by
//!   [`bgp_rib::shard_for`] to S shards, S = `router.threads`; each shard is
//!   a [`RibState`] owned by exactly one thread, so the RIB takes no locks.
//!   Sessions split each decoded batch by shard on their own thread
//!   ([`RibSender`]) and send each part over that shard's bounded channel.
//!   A shard keeps its own copy of the peer table, policies, Adj-RIB-Out
//!   and UPDATE encoders, and exports and encodes its prefixes for every
//!   peer in parallel with the other shards (so "update groups" are
//!   implicit: each shard packs per attribute set for each peer).
//!   What needs all shards: End-of-RIB and BoRR/EoRR order
//!   ([`crate::msg::FlushBarrier`]), the max-prefix total
//!   (`PeerStatus::rib_received`), control requests ([`call_all`], answers
//!   merged by the caller), RIB dumps ([`crate::rib::SharedRibDump`]) and
//!   the best-route feed (each shard publishes its own prefixes on a clone
//!   of the subscriber's channel: the snapshot is the union of the shards'
//!   snapshots).
//! * `per-peer` (the seeds' PBTS) and `worker-pool` (DTS): one shared RIB
//!   of locked parts, [`crate::striped::STRIPES`] coarse stripes or, with
//!   `router.locks = "fine"`, [`crate::striped::FINE_NODES`] nodes under
//!   the seeds' traversal and modify locks ([`Locks`]); the same parts as
//!   `sharded` with that many shards, so the same results. No thread owns
//!   a part. In `per-peer` each session applies its own input, on its
//!   own thread (the daemon gives every session an OS thread with its own
//!   runtime, so its socket readiness is its own); in `worker-pool` N
//!   workers (`router.threads`) take inputs round-robin from per-worker
//!   queues. A master thread runs ticks, control requests and export
//!   rounds. With `router.streams = "per-worker"` (the seeds' per-thread
//!   streams, [`Mode::WorkerStreams`]) sessions hand over UPDATE bodies
//!   undecoded and the worker that takes a batch parses it, so two
//!   batches of one peer are parsed at once. See [`crate::striped`].
//!
//! Limits: the shard count is fixed at start (`router.threads` changes
//! need a restart); a prefix's shard depends on S, so RIB dumps and
//! `show route` come out in a different (hash) order per S; interned
//! attribute sets are per shard, so memory per path grows with S (see the
//! `bgp-rib` crate docs).

use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::{self, Sender};

use crate::msg::{BoxFuture, DecodedUpdate, RibInput, RibPermit, RibSender, RibTx, MAX_SHARDS};
use crate::rib::{self, fan_out, Part, RibMsg, RibState};
pub use crate::striped::Locks;
use bgp_rib::PeerId;

/// Capacity of each session -> RIB channel, in messages (each a batch of
/// up to 256 decoded UPDATEs with owned attributes and NLRI vectors).
/// Small on purpose: it is the back-pressure point, and everything queued
/// here is a decoded copy of the peers' tables on top of the RIB. With
/// 1024 a full-table load queued most of the table (10 peers x 100k
/// routes: 320 bytes of peak RSS per stored path against 89 with 16, and
/// glibc keeps the sessions' arenas at that size); 16 batches are still
/// ~25 ms of RIB work, enough to keep the RIB thread busy (load time did
/// not get worse: scripts/bench-rib-memory, 4 and 64 measured too).
pub const RIB_CHANNEL: usize = 16;

/// How UPDATEs are processed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Sequential,
    /// S shard threads.
    Sharded(usize),
    /// Locked RIB parts, each session's thread applies its own input.
    PerPeer(Locks),
    /// Locked RIB parts, N worker threads.
    WorkerPool(usize, Locks),
    /// `worker-pool` with per-worker streams (`router.streams =
    /// "per-worker"`, the seeds' DTS): the workers parse the UPDATEs too.
    WorkerStreams(usize, Locks),
}

impl Mode {
    /// The mode a configuration asks for; `threads` None means one per
    /// CPU. Errors name the mode that is not supported.
    pub fn from_config(
        p: config::Pipeline,
        threads: Option<u16>,
        locks: config::Locks,
        streams: config::Streams,
    ) -> Result<Mode, String> {
        let locks = Locks::from_config(locks);
        match p {
            config::Pipeline::Sequential => Ok(Mode::Sequential),
            config::Pipeline::Sharded => {
                let n = threads.map_or_else(default_threads, usize::from);
                Ok(Mode::Sharded(n.clamp(1, MAX_SHARDS)))
            }
            // One thread per peer: `threads` does not apply.
            config::Pipeline::PerPeer => Ok(Mode::PerPeer(locks)),
            config::Pipeline::WorkerPool => {
                let n = threads.map_or_else(default_threads, usize::from);
                let n = n.clamp(1, MAX_SHARDS);
                Ok(match streams {
                    config::Streams::PerSession => Mode::WorkerPool(n, locks),
                    config::Streams::PerWorker => Mode::WorkerStreams(n, locks),
                })
            }
        }
    }

    /// Parts the RIB is split into: RIB threads, or locked stripes.
    pub fn shards(&self) -> usize {
        match *self {
            Mode::Sequential => 1,
            Mode::Sharded(n) => n.clamp(1, MAX_SHARDS),
            Mode::PerPeer(l) | Mode::WorkerPool(_, l) | Mode::WorkerStreams(_, l) => l.nodes(),
        }
    }

    /// Threads doing RIB work: shard threads, workers, or None for one
    /// per peer.
    pub fn threads(&self) -> Option<usize> {
        match *self {
            Mode::Sequential => Some(1),
            Mode::Sharded(n) | Mode::WorkerPool(n, _) | Mode::WorkerStreams(n, _) => {
                Some(n.clamp(1, MAX_SHARDS))
            }
            Mode::PerPeer(_) => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Sharded(_) => "sharded",
            Mode::PerPeer(_) => "per-peer",
            Mode::WorkerPool(..) | Mode::WorkerStreams(..) => "worker-pool",
        }
    }

    /// The name with the locking, for tables and logs: `per-peer/fine`.
    pub fn label(&self) -> String {
        match self {
            Mode::PerPeer(l) | Mode::WorkerPool(_, l) => format!("{}/{}", self.name(), l.name()),
            Mode::WorkerStreams(_, l) => format!("{}/{}/streams", self.name(), l.name()),
            _ => self.name().to_string(),
        }
    }

    /// `per-peer` / `worker-pool`: how the shared RIB is locked.
    pub fn locks(&self) -> Option<Locks> {
        match *self {
            Mode::PerPeer(l) | Mode::WorkerPool(_, l) | Mode::WorkerStreams(_, l) => Some(l),
            Mode::Sequential | Mode::Sharded(_) => None,
        }
    }
}

/// CPUs available to this process.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The RIB threads of one mode: channels first (sessions need a sender
/// before the RIB threads' peer tables can be built), threads on
/// [`Pipeline::spawn`].
pub struct Pipeline {
    mode: Mode,
    txs: Vec<Sender<RibMsg>>,
    rxs: Vec<mpsc::Receiver<RibMsg>>,
    threads: Vec<JoinHandle<()>>,
    /// `per-peer` / `worker-pool`: the locked stripes; `txs` are then the
    /// master thread's control channels, one per stripe.
    striped: Option<crate::striped::Striped>,
}

impl Pipeline {
    /// The channels of `mode`'s RIB threads; nothing runs yet (inputs wait
    /// in the channels).
    pub fn new(mode: Mode) -> Pipeline {
        let count = mode.shards();
        let (txs, rxs) = (0..count)
            .map(|_| mpsc::channel::<RibMsg>(RIB_CHANNEL))
            .unzip();
        let striped = match mode {
            Mode::PerPeer(l) => Some(crate::striped::Striped::new(None, l, false)),
            Mode::WorkerPool(n, l) => Some(crate::striped::Striped::new(Some(n), l, false)),
            Mode::WorkerStreams(n, l) => Some(crate::striped::Striped::new(Some(n), l, true)),
            Mode::Sequential | Mode::Sharded(_) => None,
        };
        Pipeline {
            mode,
            txs,
            rxs,
            threads: Vec::new(),
            striped,
        }
    }

    /// Starts the RIB threads; `make` builds each one's state (called in
    /// shard order, on this thread). Does nothing the second time.
    pub fn spawn(&mut self, mut make: impl FnMut(Part) -> RibState) -> Result<(), String> {
        let count = self.txs.len();
        if let Some(sp) = self.striped.as_mut() {
            if self.rxs.is_empty() {
                return Ok(());
            }
            for index in 0..count {
                sp.stripes.install(index, make(Part { index, count }));
            }
            return sp.spawn(std::mem::take(&mut self.rxs));
        }
        // Shared by the shard threads: whether another is still applying
        // input (see `rib::run`).
        let inflow = Arc::new(rib::Inflow::default());
        for (index, rx) in std::mem::take(&mut self.rxs).into_iter().enumerate() {
            let st = make(Part { index, count });
            let inflow = inflow.clone();
            let name = if count == 1 {
                "rib".to_string()
            } else {
                format!("rib-{index}")
            };
            let h = std::thread::Builder::new()
                .name(name)
                .spawn(move || rib::run(rx, st, inflow))
                .map_err(|e| format!("cannot start a RIB thread: {e}"))?;
            self.threads.push(h);
        }
        Ok(())
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// What sessions send their inputs through.
    pub fn sender(&self) -> RibTx {
        match &self.striped {
            Some(sp) => match &sp.pool {
                Some(p) => Arc::new(crate::striped::PoolSender(p.clone())),
                None => Arc::new(crate::striped::StripedSender(sp.stripes.clone())),
            },
            None => ChannelSender::shared(self.txs.clone()),
        }
    }

    /// One channel per RIB thread, in shard order (control requests).
    pub fn senders(&self) -> &[Sender<RibMsg>] {
        &self.txs
    }

    /// Drops this handle's senders and waits for the threads, which end
    /// when every sender is gone or shutdown was requested.
    pub fn join(self) {
        drop(self.txs);
        if let Some(sp) = self.striped {
            sp.join();
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Why a fanned-out control request has no answer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    /// A RIB thread is gone (shutting down).
    Gone,
    /// A RIB thread did not answer in time.
    Timeout,
}

/// The [`rib::published::PublishSlot`] of every RIB thread, in shard
/// order (asked once; the readers then never wait for a RIB thread).
/// Empty when a RIB thread does not answer within `timeout`.
pub fn published_slots(txs: &[Sender<RibMsg>], timeout: Duration) -> rib::published::Slots {
    call_all(txs, timeout, |st| st.published_slot()).unwrap_or_default()
}

/// Runs `f` on every RIB thread and returns the answers in shard order.
/// Blocking: not for a tokio worker thread.
pub fn call_all<R: Send + 'static>(
    txs: &[Sender<RibMsg>],
    timeout: Duration,
    f: impl Fn(&mut RibState) -> R + Send + Sync + 'static,
) -> Result<Vec<R>, CallError> {
    let f = Arc::new(f);
    let (tx, rx) = std_mpsc::sync_channel(txs.len().max(1));
    for (i, rib) in txs.iter().enumerate() {
        let f = f.clone();
        let tx = tx.clone();
        let job: rib::ControlFn = Box::new(move |st: &mut RibState| {
            let r = f(st);
            // What the job changed is published before the caller hears
            // back, so its next read of the published counts sees it.
            st.publish();
            let _ = tx.send((i, r));
        });
        rib.blocking_send(RibMsg::Control(job))
            .map_err(|_| CallError::Gone)?;
    }
    drop(tx);
    let deadline = std::time::Instant::now() + timeout;
    let mut out: Vec<Option<R>> = (0..txs.len()).map(|_| None).collect();
    for _ in 0..txs.len() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (i, r) = rx.recv_timeout(left).map_err(|e| match e {
            std_mpsc::RecvTimeoutError::Timeout => CallError::Timeout,
            std_mpsc::RecvTimeoutError::Disconnected => CallError::Gone,
        })?;
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(r);
        }
    }
    out.into_iter().map(|r| r.ok_or(CallError::Gone)).collect()
}

/// The [`RibSender`] of `sequential` and `sharded`: one bounded channel per
/// RIB thread, in shard order (the index [`bgp_rib::shard_for`] returns).
#[derive(Debug)]
pub struct ChannelSender {
    txs: Vec<Sender<RibMsg>>,
}

impl ChannelSender {
    /// Over `txs`, one per RIB thread (one: the sequential pipeline, and
    /// tests).
    pub fn shared(txs: Vec<Sender<RibMsg>>) -> RibTx {
        Arc::new(ChannelSender { txs })
    }
}

/// Sends one batch over the reserved channels, split by shard.
fn send_split(permits: Vec<mpsc::OwnedPermit<RibMsg>>, peer: PeerId, updates: Vec<DecodedUpdate>) {
    let n = permits.len();
    if n == 1 {
        if let Some(p) = permits.into_iter().next() {
            p.send(RibMsg::Input(RibInput::Updates { peer, updates }));
        }
        return;
    }
    let parts = crate::msg::split_updates(updates, n);
    for (p, updates) in permits.into_iter().zip(parts) {
        if !updates.is_empty() {
            p.send(RibMsg::Input(RibInput::Updates { peer, updates }));
        }
    }
}

impl RibSender for ChannelSender {
    fn send(&self, input: RibInput) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            let mut ok = true;
            for (i, m) in fan_out(input, self.txs.len()) {
                if let Some(tx) = self.txs.get(i) {
                    ok &= tx.send(m).await.is_ok();
                }
            }
            ok
        })
    }

    fn blocking_send(&self, input: RibInput) -> bool {
        let mut ok = true;
        for (i, m) in fan_out(input, self.txs.len()) {
            if let Some(tx) = self.txs.get(i) {
                ok &= tx.blocking_send(m).is_ok();
            }
        }
        ok
    }

    fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>> {
        let mut permits = Vec::with_capacity(self.txs.len());
        for tx in &self.txs {
            match tx.clone().try_reserve_owned() {
                Ok(p) => permits.push(p),
                Err(_) => return Err(updates),
            }
        }
        send_split(permits, peer, updates);
        Ok(())
    }

    fn reserve(&self) -> BoxFuture<'_, Option<RibPermit>> {
        Box::pin(async move {
            let mut permits = Vec::with_capacity(self.txs.len());
            for tx in &self.txs {
                permits.push(tx.clone().reserve_owned().await.ok()?);
            }
            Some(RibPermit::new(move |peer, updates| {
                send_split(permits, peer, updates)
            }))
        })
    }
}
