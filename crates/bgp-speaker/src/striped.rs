//! The shared, locked RIB of the `per-peer` (the seeds' PBTS) and
//! `worker-pool` (DTS) pipelines (Tessera issue 5).
//!
//! The RIB is cut into [`STRIPES`] stripes by [`bgp_rib::shard_for`], each
//! a [`RibState`] for one [`Part`] behind its own mutex: the same parts
//! the `sharded` mode gives its threads, so the same inputs give the same
//! Loc-RIB and Adj-RIB-Out (the differential test checks it). What differs
//! is who runs them: no thread owns a stripe; whoever has the work locks
//! the stripe, applies and exports there, and unlocks.
//!
//! * `per-peer`: the session's own thread applies its input
//!   ([`Stripes::apply_input`]): it splits a batch by stripe and locks each
//!   stripe in turn, holding one lock at a time. A peer's inputs come from
//!   that one thread, so they are applied in order.
//! * `worker-pool`: sessions hand inputs to N workers round-robin
//!   ([`Pool`]), one queue per worker, none shared. Two batches of one peer
//!   can be on two workers at once; the ordering point is per peer and
//!   per stripe: the dispatcher numbers each peer's inputs, and a stripe
//!   applies a peer's input number k only after number k-1
//!   ([`Stripes::apply_in_turn`], a condition variable on the stripe's
//!   lock). Each stripe therefore sees each peer's inputs in the order the
//!   session sent them, exactly what a shard thread sees in `sharded`, while
//!   the two batches still run in parallel on different stripes. Workers
//!   cannot deadlock: a worker only waits for an earlier input of the same
//!   peer, enqueued before its own, and the earliest unfinished input of
//!   all waits for nothing.
//! * A master thread ([`run_master`]) runs housekeeping: ticks and control
//!   requests arrive on one channel per stripe (so
//!   [`crate::pipeline::call_all`] and the answer merge work as in
//!   `sharded`) and run under that stripe's lock, and export rounds of
//!   stripes left dirty are run every [`ROUND_MIN`]. In `worker-pool`, a
//!   control request first waits until every input dispatched before it
//!   is applied (inputs and control travel on different queues).
//!
//! * `router.locks = "fine"` ([`Locks::Fine`]): [`FINE_NODES`] nodes
//!   instead of [`STRIPES`] stripes, with the seeds' traversal lock over
//!   the node table (what a "node" is here: see [`Locks`]).
//! * `router.streams = "per-worker"` (`worker-pool` only, the seeds'
//!   per-thread streams): sessions hand over raw UPDATE bodies
//!   ([`RawUpdates`]) and the worker that takes a batch parses it. The
//!   per-peer numbering above orders the parsed batches as it orders
//!   decoded ones. An UPDATE that resets the session marks the
//!   connection's [`StreamLink`] (batches of that connection numbered
//!   after it are then skipped, under the part's lock), and once the
//!   batch has passed every part the earliest such UPDATE's event goes to
//!   the session, which sends the NOTIFICATION.
//!
//! Export rounds on a stripe are spaced [`ROUND_MIN`] apart as on a shard
//! thread: input arriving sooner is applied and left for the master's
//! round. Limits: the stripe count is fixed; each stripe has its own peer
//! table, encoders and interned attributes (memory grows with it, as with
//! shards); a slow stripe holds up only the peers whose input needs it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{
    Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError,
};
use std::time::{Duration, Instant};

use bgp_rib::PeerId;
use tokio::sync::mpsc;

use crate::msg::{
    Batch, BoxFuture, DecodedUpdate, RawUpdates, RibInput, RibPermit, RibSender, StreamLink,
};
use crate::rib::{fan_out, RibMsg, RibState, ROUND_MIN};

/// Stripes of the locked RIB: a trade between lock contention and the
/// cost of the split (an UPDATE spanning k stripes is applied, interned
/// and encoded k times, as with shards). In-process, 10 peers x 20k shared
/// prefixes, 8 per UPDATE, the CPU seconds of `per-peer` were 0.28 / 0.39
/// / 0.61 with 4 / 8 / 16 stripes (sequential 0.08); 8 keeps two busy
/// threads on 2 cores mostly on different stripes.
pub const STRIPES: usize = 8;

/// Nodes of the `fine` locking: the most parts a batch can be split into
/// ([`crate::msg::MAX_SHARDS`]).
pub const FINE_NODES: usize = 64;

/// How the shared RIB of `per-peer` and `worker-pool` is locked
/// (`router.locks`).
///
/// * `Stripes`: [`STRIPES`] coarse parts, one mutex each.
/// * `Fine`: the seeds' routing-table locks (seed 000 §3.2.2, seed 001
///   §4.3.2), as far as our RIB has nodes. Quagga's table is a prefix
///   tree; a thread takes a *traversal* lock to walk it and a node's
///   *modify* lock to change that node, so threads modify different places
///   of the tree at once. Our RIB is not a tree: within a [`RibState`] the
///   prefixes live in hash tables that rehash on insert, and one UPDATE's
///   prefixes share that part's attribute interner, change list and peer
///   counters, so a single prefix cannot be locked apart from its part
///   without rewriting `bgp-rib`. Our **node** is therefore the finest
///   part the RIB can be cut into, one of [`FINE_NODES`] = 64: the
///   prefixes [`bgp_rib::shard_for`] maps to it (hash buckets of IPv4 /20
///   and IPv6 /32 blocks), with their paths, Loc-RIB choice and every
///   peer's Adj-RIB-Out for them. Its **modify lock** is the node's mutex,
///   held to apply input, export, or answer a control request. The
///   **traversal lock** guards the walk from the table to a node: in
///   Quagga that walk crosses parent nodes that another thread may be
///   re-linking; here the node is found by hash in a node table that
///   changes only when a node's state is installed at start, so the
///   traversal lock is one reader-writer lock over the node table, held
///   shared by every walk (apply, export rounds, control, the last round)
///   and exclusively only then (before any worker runs, so a worker that
///   waits for its turn while holding it shared never blocks a writer
///   that other readers queue behind). A `per-peer` thread that finds a node's modify
///   lock held goes on with its other nodes first and comes back (the
///   seed's threads wait), which keeps a peer's order per node: one thread
///   applies all of a batch before the next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Locks {
    Stripes,
    Fine,
}

impl Locks {
    /// The parts the RIB is cut into.
    pub fn nodes(self) -> usize {
        match self {
            Locks::Stripes => STRIPES,
            Locks::Fine => FINE_NODES,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Locks::Stripes => "stripes",
            Locks::Fine => "fine",
        }
    }

    pub fn from_config(l: config::Locks) -> Locks {
        match l {
            config::Locks::Stripes => Locks::Stripes,
            config::Locks::Fine => Locks::Fine,
        }
    }
}

/// Capacity of each worker's queue, in batches (as
/// [`crate::pipeline::RIB_CHANNEL`]: the back-pressure point).
pub const WORKER_QUEUE: usize = 16;

struct StripeState {
    /// None until the pipeline is spawned; inputs wait in `pending`.
    st: Option<RibState>,
    pending: Vec<RibMsg>,
    dirty: bool,
    last_round: Instant,
    /// Per peer id: the sequence number of the next input of that peer
    /// this stripe may apply (`worker-pool` only).
    turns: Vec<u64>,
    /// Shutdown was requested on this stripe (counted once in
    /// [`Stripes::stopped`]).
    stopped: bool,
}

struct Stripe {
    state: Mutex<StripeState>,
    turn: Condvar,
}

/// The stripes of the shared RIB.
pub struct Stripes {
    parts: Vec<Stripe>,
    /// `fine`: the traversal lock over the node table (see [`Locks`]);
    /// `stripes`: None.
    traversal: Option<RwLock<()>>,
    /// Stripes on which shutdown was requested: the master stops once
    /// every stripe has answered the request (as every shard thread does).
    stopped: AtomicUsize,
}

impl std::fmt::Debug for Stripes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stripes({})", self.parts.len())
    }
}

fn lock(s: &Stripe) -> MutexGuard<'_, StripeState> {
    // A panic under the lock leaves a RibState mid-update; going on is
    // better than taking the daemon down with it (as a shard thread would).
    s.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Applies `msg`; true when this made the stripe stop (once per stripe).
fn apply_locked(s: &mut StripeState, msg: RibMsg) -> bool {
    let Some(st) = s.st.as_mut() else {
        s.pending.push(msg);
        return false;
    };
    st.handle(msg);
    if s.last_round.elapsed() >= ROUND_MIN {
        st.propagate();
        s.last_round = Instant::now();
        s.dirty = false;
    } else {
        s.dirty = true;
    }
    let stop = st.shutdown_requested() && !s.stopped;
    s.stopped |= stop;
    stop
}

impl Stripes {
    /// The nodes of `locks`.
    pub fn with_locks(locks: Locks) -> Arc<Stripes> {
        Stripes::build(locks.nodes(), locks == Locks::Fine)
    }

    /// `n` stripes without a traversal lock.
    pub fn new(n: usize) -> Arc<Stripes> {
        Stripes::build(n, false)
    }

    fn build(n: usize, fine: bool) -> Arc<Stripes> {
        let start = Instant::now()
            .checked_sub(ROUND_MIN)
            .unwrap_or_else(Instant::now);
        Arc::new(Stripes {
            parts: (0..n.max(1))
                .map(|_| Stripe {
                    state: Mutex::new(StripeState {
                        st: None,
                        pending: Vec::new(),
                        dirty: false,
                        last_round: start,
                        turns: Vec::new(),
                        stopped: false,
                    }),
                    turn: Condvar::new(),
                })
                .collect(),
            traversal: fine.then(|| RwLock::new(())),
            stopped: AtomicUsize::new(0),
        })
    }

    pub fn len(&self) -> usize {
        self.parts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Gives stripe `i` its state and applies what waited for it.
    pub(crate) fn install(&self, i: usize, st: RibState) {
        let Some(s) = self.parts.get(i) else { return };
        let _table = self.restructure();
        let mut g = lock(s);
        g.st = Some(st);
        for m in std::mem::take(&mut g.pending) {
            apply_locked(&mut g, m);
        }
    }

    /// Applies `msg` on stripe `i` under its lock.
    pub(crate) fn apply(&self, i: usize, msg: RibMsg) {
        let Some(s) = self.parts.get(i) else { return };
        let _walk = self.walk();
        if apply_locked(&mut lock(s), msg) {
            self.stopped.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The traversal lock, shared (`fine`; None with stripes).
    fn walk(&self) -> Option<RwLockReadGuard<'_, ()>> {
        let t = self.traversal.as_ref()?;
        Some(t.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// The traversal lock, exclusive: the node table changes.
    fn restructure(&self) -> Option<RwLockWriteGuard<'_, ()>> {
        let t = self.traversal.as_ref()?;
        Some(t.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// `per-peer`: the calling (session) thread splits `input` by stripe
    /// and applies each part, one stripe lock at a time. With `fine`
    /// locks, nodes whose modify lock is held are left for later while the
    /// free ones are done; when all that is left is busy, it waits for the
    /// first (no spinning). One message per node per input, and the next
    /// input only after this one: the peer's order per node holds.
    pub fn apply_input(&self, input: RibInput) {
        let parts = fan_out(input, self.parts.len());
        if self.traversal.is_none() {
            for (i, m) in parts {
                self.apply(i, m);
            }
            return;
        }
        let _walk = self.walk();
        let mut stops = 0;
        let mut left = parts;
        while !left.is_empty() {
            let mut busy = Vec::new();
            for (i, m) in left {
                let Some(s) = self.parts.get(i) else { continue };
                match s.state.try_lock() {
                    Ok(mut g) => stops += usize::from(apply_locked(&mut g, m)),
                    Err(TryLockError::Poisoned(e)) => {
                        stops += usize::from(apply_locked(&mut e.into_inner(), m));
                    }
                    Err(TryLockError::WouldBlock) => busy.push((i, m)),
                }
            }
            let mut busy = busy.into_iter();
            if let Some((i, m)) = busy.next() {
                if let Some(s) = self.parts.get(i) {
                    stops += usize::from(apply_locked(&mut lock(s), m));
                }
            }
            left = busy.collect();
        }
        if stops > 0 {
            self.stopped.fetch_add(stops, Ordering::AcqRel);
        }
    }

    /// `worker-pool`: applies `msg` (this stripe's part of `peer`'s input
    /// number `seq`, None if it has none) once the stripe has applied the
    /// peer's input `seq - 1`, then lets `seq + 1` through.
    fn apply_in_turn(
        &self,
        i: usize,
        peer: PeerId,
        seq: u64,
        msg: Option<RibMsg>,
        link: Option<&StreamLink>,
    ) {
        let Some(s) = self.parts.get(i) else { return };
        let slot = usize::from(peer.0);
        let _walk = self.walk();
        let mut g = lock(s);
        if g.turns.len() <= slot {
            g.turns.resize(slot + 1, 0);
        }
        while g.turns.get(slot).is_some_and(|&t| t != seq) {
            g = s.turn.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        let mut stop = false;
        // Per-worker streams: a batch after the one that reset the session
        // is dropped. That batch marked it before passing any turn, so
        // the mark is seen here, under the lock it released.
        let live = link.is_none_or(|l| l.live(seq));
        if let (Some(m), true) = (msg, live) {
            stop = apply_locked(&mut g, m);
        }
        if let Some(t) = g.turns.get_mut(slot) {
            *t += 1;
        }
        drop(g);
        s.turn.notify_all();
        if stop {
            self.stopped.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Export rounds of the stripes whose last round is [`ROUND_MIN`] old
    /// and that applied something since.
    fn rounds(&self) {
        let _walk = self.walk();
        for s in &self.parts {
            let mut g = lock(s);
            if g.dirty && g.last_round.elapsed() >= ROUND_MIN {
                if let Some(st) = g.st.as_mut() {
                    st.propagate();
                }
                g.last_round = Instant::now();
                g.dirty = false;
            }
        }
    }

    /// A last export round everywhere (shutdown).
    fn finish(&self) {
        let _walk = self.walk();
        for s in &self.parts {
            let mut g = lock(s);
            if let Some(st) = g.st.as_mut() {
                st.propagate();
            }
            g.dirty = false;
        }
    }

    fn is_shutdown(&self) -> bool {
        self.stopped.load(Ordering::Acquire) >= self.parts.len()
    }
}

/// Inputs dispatched to and finished by the workers (`worker-pool`), so
/// that a control request can wait for what was sent before it.
#[derive(Debug, Default)]
pub struct Progress {
    dispatched: AtomicU64,
    done: Mutex<u64>,
    cv: Condvar,
}

impl Progress {
    fn finished_one(&self) {
        let mut d = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *d += 1;
        drop(d);
        self.cv.notify_all();
    }

    /// Waits until every input dispatched so far is applied (bounded:
    /// a control request must not hang the master for good).
    fn wait_dispatched(&self, limit: Duration) {
        let target = self.dispatched.load(Ordering::Acquire);
        let deadline = Instant::now() + limit;
        let mut d = self.done.lock().unwrap_or_else(|e| e.into_inner());
        while *d < target {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            d = match self.cv.wait_timeout(d, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

enum Job {
    Input {
        peer: PeerId,
        seq: u64,
        input: RibInput,
    },
    /// Per-worker streams: UPDATE bodies the worker parses itself.
    Raw {
        peer: PeerId,
        seq: u64,
        raw: RawUpdates,
    },
    Stop,
}

/// The `worker-pool` dispatcher: one queue per worker, inputs numbered
/// per peer and handed round-robin.
pub struct Pool {
    stripes: Arc<Stripes>,
    queues: Vec<mpsc::Sender<Job>>,
    next: AtomicUsize,
    /// Per peer id: the sequence number its next input gets. Held while
    /// the input is enqueued, so numbers and queue order agree.
    seqs: Mutex<Vec<u64>>,
    progress: Arc<Progress>,
    /// Per-worker streams: sessions hand over raw UPDATEs.
    streams: bool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({} workers)", self.queues.len())
    }
}

/// Room reserved on one worker's queue.
pub struct PoolPermit {
    pool: Arc<Pool>,
    permit: mpsc::OwnedPermit<Job>,
}

impl PoolPermit {
    /// Numbers `input` in its peer's order and enqueues it.
    pub fn send(self, input: RibInput) {
        let peer = input.peer();
        self.enqueue(peer, |seq| Job::Input { peer, seq, input });
    }

    /// Numbers `raw` in its peer's order and enqueues it.
    pub fn send_raw(self, peer: PeerId, raw: RawUpdates) {
        self.enqueue(peer, |seq| Job::Raw { peer, seq, raw });
    }

    fn enqueue(self, peer: PeerId, job: impl FnOnce(u64) -> Job) {
        let slot = usize::from(peer.0);
        let mut seqs = self.pool.seqs.lock().unwrap_or_else(|e| e.into_inner());
        if seqs.len() <= slot {
            seqs.resize(slot + 1, 0);
        }
        let Some(s) = seqs.get_mut(slot) else { return };
        let seq = *s;
        *s += 1;
        self.pool.progress.dispatched.fetch_add(1, Ordering::AcqRel);
        self.permit.send(job(seq));
    }
}

impl Pool {
    /// A pool of `workers` queues over `stripes`, and the receiving ends
    /// for [`Pool::spawn_workers`].
    fn new(
        stripes: Arc<Stripes>,
        workers: usize,
        streams: bool,
    ) -> (Arc<Pool>, Vec<mpsc::Receiver<Job>>) {
        let (queues, rxs) = (0..workers.max(1))
            .map(|_| mpsc::channel(WORKER_QUEUE))
            .unzip();
        let pool = Arc::new(Pool {
            stripes,
            queues,
            next: AtomicUsize::new(0),
            seqs: Mutex::new(Vec::new()),
            progress: Arc::new(Progress::default()),
            streams,
        });
        (pool, rxs)
    }

    pub fn stripes(&self) -> &Arc<Stripes> {
        &self.stripes
    }

    fn pick(&self) -> &mpsc::Sender<Job> {
        let n = self.queues.len().max(1);
        let i = self.next.fetch_add(1, Ordering::Relaxed) % n;
        // i < n = queues.len() unless there are no queues (never: new
        // makes at least one).
        &self.queues[i.min(self.queues.len().saturating_sub(1))]
    }

    /// Waits for room on the next worker's queue.
    pub async fn reserve(self: &Arc<Self>) -> Option<PoolPermit> {
        let permit = self.pick().clone().reserve_owned().await.ok()?;
        Some(PoolPermit {
            pool: self.clone(),
            permit,
        })
    }

    /// Room on the next worker's queue now, or None.
    pub fn try_reserve(self: &Arc<Self>) -> Option<PoolPermit> {
        let permit = self.pick().clone().try_reserve_owned().ok()?;
        Some(PoolPermit {
            pool: self.clone(),
            permit,
        })
    }

    /// [`Self::reserve`] outside the async runtime (benchmarks, tests).
    pub fn blocking_reserve(self: &Arc<Self>) -> Option<PoolPermit> {
        let tx = self.pick().clone();
        loop {
            match tx.clone().try_reserve_owned() {
                Ok(permit) => {
                    return Some(PoolPermit {
                        pool: self.clone(),
                        permit,
                    })
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return None,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
    }

    /// Asks every worker to exit after what is queued.
    fn stop(&self) {
        for q in &self.queues {
            loop {
                match q.try_send(Job::Stop) {
                    Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => break,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            }
        }
    }
}

fn worker(mut rx: mpsc::Receiver<Job>, stripes: Arc<Stripes>, progress: Arc<Progress>) {
    let n = stripes.len();
    while let Some(job) = rx.blocking_recv() {
        let (peer, seq, input, raw) = match job {
            Job::Input { peer, seq, input } => (peer, seq, input, None),
            Job::Raw { peer, seq, raw } => {
                // This worker's own stream (seed 001 §4.5): the bodies are
                // parsed here, while another worker may parse the same
                // peer's next batch. Order is kept where it matters, per
                // peer and per part, by the turns below.
                let mut updates = Vec::with_capacity(raw.bodies.len());
                let reset = raw.decode_into(&mut updates);
                if reset.is_some() {
                    // Mark before passing any turn (see apply_in_turn).
                    raw.link.dead_from.fetch_min(seq, Ordering::AcqRel);
                }
                (
                    peer,
                    seq,
                    RibInput::Updates { peer, updates },
                    Some((raw.link, reset)),
                )
            }
            Job::Stop => break,
        };
        let link = raw.as_ref().map(|(l, _)| l.as_ref());
        let mut parts: Vec<Option<RibMsg>> = (0..n).map(|_| None).collect();
        for (i, m) in fan_out(input, n) {
            if let Some(slot) = parts.get_mut(i) {
                *slot = Some(m);
            }
        }
        // Every stripe, even one without a part, so that its turn for this
        // peer moves on.
        for (i, m) in parts.into_iter().enumerate() {
            stripes.apply_in_turn(i, peer, seq, m, link);
        }
        // Tell the session (RFC 4271 §6.3 / RFC 7606: it sends the
        // NOTIFICATION) only once every part has passed this batch: an
        // earlier batch with its own resetting UPDATE has marked the link
        // by then, and only the earliest one is reported.
        if let Some((l, Some(ev))) = raw {
            if l.dead_from.load(Ordering::Acquire) == seq {
                let _ = l.reset.send((l.session, ev));
            }
        }
        progress.finished_one();
    }
}

/// The master thread: control requests and ticks (one channel per
/// stripe), and the spaced export rounds. Returns when every control
/// sender is gone or shutdown was requested.
fn run_master(
    stripes: Arc<Stripes>,
    rxs: Vec<mpsc::Receiver<RibMsg>>,
    progress: Option<Arc<Progress>>,
    rt: tokio::runtime::Runtime,
) {
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for (i, mut rx) in rxs.into_iter().enumerate() {
            let s = stripes.clone();
            let p = progress.clone();
            set.spawn(async move {
                while let Some(m) = rx.recv().await {
                    if let (Some(p), RibMsg::Control(_)) = (&p, &m) {
                        p.wait_dispatched(Duration::from_secs(60));
                    }
                    s.apply(i, m);
                    if s.is_shutdown() {
                        break;
                    }
                }
            });
        }
        let mut iv = tokio::time::interval(ROUND_MIN);
        iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                r = set.join_next() => if r.is_none() { break },
                _ = iv.tick() => stripes.rounds(),
            }
            if stripes.is_shutdown() {
                break;
            }
        }
    });
    stripes.finish();
}

/// The threads of a striped pipeline.
pub(crate) struct Striped {
    pub stripes: Arc<Stripes>,
    pub pool: Option<Arc<Pool>>,
    worker_rxs: Vec<mpsc::Receiver<Job>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Striped {
    /// `workers` None: `per-peer`; Some(n): `worker-pool` with n workers.
    /// `streams`: the workers parse (per-worker streams).
    pub fn new(workers: Option<usize>, locks: Locks, streams: bool) -> Striped {
        let stripes = Stripes::with_locks(locks);
        let (pool, worker_rxs) = match workers {
            Some(n) => {
                let (p, rxs) = Pool::new(stripes.clone(), n, streams);
                (Some(p), rxs)
            }
            None => (None, Vec::new()),
        };
        Striped {
            stripes,
            pool,
            worker_rxs,
            threads: Vec::new(),
        }
    }

    /// Starts the master (over the control channels `rxs`) and workers.
    pub fn spawn(&mut self, rxs: Vec<mpsc::Receiver<RibMsg>>) -> Result<(), String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the RIB master's timer: {e}"))?;
        let progress = self.pool.as_ref().map(|p| p.progress.clone());
        for (i, rx) in std::mem::take(&mut self.worker_rxs).into_iter().enumerate() {
            let s = self.stripes.clone();
            let p = progress.clone().unwrap_or_default();
            let h = std::thread::Builder::new()
                .name(format!("rib-worker-{i}"))
                .spawn(move || worker(rx, s, p))
                .map_err(|e| format!("cannot start a RIB worker: {e}"))?;
            self.threads.push(h);
        }
        let s = self.stripes.clone();
        let h = std::thread::Builder::new()
            .name("rib-master".into())
            .spawn(move || run_master(s, rxs, progress, rt))
            .map_err(|e| format!("cannot start the RIB master: {e}"))?;
        self.threads.push(h);
        Ok(())
    }

    /// Stops the workers after their queues and waits for every thread
    /// (the master ends once the control senders are dropped).
    pub fn join(self) {
        if let Some(p) = &self.pool {
            p.stop();
        }
        drop(self.pool);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// The [`RibSender`] of `per-peer`: the calling session thread applies its
/// input to the stripes itself.
#[derive(Debug)]
pub struct StripedSender(pub Arc<Stripes>);

impl RibSender for StripedSender {
    fn send(&self, input: RibInput) -> BoxFuture<'_, bool> {
        self.0.apply_input(input);
        Box::pin(std::future::ready(true))
    }
    fn blocking_send(&self, input: RibInput) -> bool {
        self.0.apply_input(input);
        true
    }
    fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>> {
        self.0.apply_input(RibInput::Updates { peer, updates });
        Ok(())
    }
    fn reserve(&self) -> BoxFuture<'_, Option<RibPermit>> {
        let s = self.0.clone();
        Box::pin(std::future::ready(Some(RibPermit::new(
            move |peer, updates| s.apply_input(RibInput::Updates { peer, updates }),
        ))))
    }
    fn is_per_peer(&self) -> bool {
        true
    }
}

/// The [`RibSender`] of `worker-pool`: inputs go to the next worker's
/// queue.
#[derive(Debug)]
pub struct PoolSender(pub Arc<Pool>);

impl RibSender for PoolSender {
    fn send(&self, input: RibInput) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            match self.0.reserve().await {
                Some(permit) => {
                    permit.send(input);
                    true
                }
                None => false,
            }
        })
    }
    fn blocking_send(&self, input: RibInput) -> bool {
        match self.0.blocking_reserve() {
            Some(permit) => {
                permit.send(input);
                true
            }
            None => false,
        }
    }
    fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>> {
        match self.0.try_reserve() {
            Some(permit) => {
                permit.send(RibInput::Updates { peer, updates });
                Ok(())
            }
            None => Err(updates),
        }
    }
    fn reserve(&self) -> BoxFuture<'_, Option<RibPermit>> {
        Box::pin(async move {
            let permit = self.0.reserve().await?;
            if self.0.streams {
                return Some(RibPermit::any(move |peer, b| match b {
                    Batch::Decoded(updates) => permit.send(RibInput::Updates { peer, updates }),
                    Batch::Raw(raw) => permit.send_raw(peer, raw),
                }));
            }
            Some(RibPermit::new(move |peer, updates| {
                permit.send(RibInput::Updates { peer, updates })
            }))
        })
    }
    fn parses_raw(&self) -> bool {
        self.0.streams
    }
    fn try_send_raw(&self, peer: PeerId, raw: RawUpdates) -> Result<(), RawUpdates> {
        match self.0.try_reserve() {
            Some(permit) => {
                permit.send_raw(peer, raw);
                Ok(())
            }
            None => Err(raw),
        }
    }
    fn send_raw(&self, peer: PeerId, raw: RawUpdates) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            match self.0.reserve().await {
                Some(permit) => {
                    permit.send_raw(peer, raw);
                    true
                }
                None => false,
            }
        })
    }
    fn blocking_send_raw(&self, peer: PeerId, raw: RawUpdates) -> bool {
        match self.0.blocking_reserve() {
            Some(permit) => {
                permit.send_raw(peer, raw);
                true
            }
            None => false,
        }
    }
}
