//! The session side of per-worker streams (`router.streams =
//! "per-worker"`, the seeds' per-thread streams) against a hand-driven
//! peer on a local socket: with a RIB that parses on workers the session
//! hands over UPDATE bodies unparsed, and an UPDATE that a worker finds
//! unparsable still resets the session with the exact NOTIFICATION of
//! RFC 4271 §6.3 (as `session_raw` checks for parsing on the session).

mod session_common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base::Prefix;
use bgp_rib::PeerId;
use bgp_speaker::msg::{
    BoxFuture, DecodedUpdate, RawUpdates, RibInput, RibPermit, RibSender, RibTx,
};
use bgp_speaker::rib::RibMsg;
use bgp_speaker::sess::SessionHandle;
use session_common::*;
use tokio::sync::mpsc::Receiver;

/// A RIB whose "worker" (a thread of this test) parses the raw batches as
/// `striped`'s workers do and passes the result on to `inner`.
#[derive(Debug)]
struct WorkerRib {
    inner: RibTx,
    raw: std::sync::mpsc::Sender<(PeerId, RawUpdates)>,
    batches: Arc<AtomicUsize>,
}

impl WorkerRib {
    fn new(inner: RibTx) -> (Arc<WorkerRib>, Arc<AtomicUsize>) {
        let (raw, rx) = std::sync::mpsc::channel::<(PeerId, RawUpdates)>();
        let batches = Arc::new(AtomicUsize::new(0));
        let to = inner.clone();
        // Ends when the session (the last sender) is gone.
        std::thread::spawn(move || {
            while let Ok((peer, raw)) = rx.recv() {
                let mut updates = Vec::new();
                if let Some(ev) = raw.decode_into(&mut updates) {
                    raw.link.dead_from.fetch_min(0, Ordering::AcqRel);
                    let _ = raw.link.reset.send((raw.link.session, ev));
                }
                if !updates.is_empty() {
                    to.blocking_send(RibInput::Updates { peer, updates });
                }
            }
        });
        let rib = Arc::new(WorkerRib {
            inner,
            raw,
            batches: batches.clone(),
        });
        (rib, batches)
    }
}

impl RibSender for WorkerRib {
    fn send(&self, input: RibInput) -> BoxFuture<'_, bool> {
        self.inner.send(input)
    }
    fn blocking_send(&self, input: RibInput) -> bool {
        self.inner.blocking_send(input)
    }
    fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>> {
        self.inner.try_send_updates(peer, updates)
    }
    fn reserve(&self) -> BoxFuture<'_, Option<RibPermit>> {
        let raw = self.raw.clone();
        let batches = self.batches.clone();
        Box::pin(async move {
            let p = self.inner.reserve().await?;
            Some(RibPermit::any(move |peer, b| match b {
                bgp_speaker::msg::Batch::Decoded(u) => p.send_updates(peer, u),
                bgp_speaker::msg::Batch::Raw(r) => {
                    batches.fetch_add(1, Ordering::Relaxed);
                    let _ = raw.send((peer, r));
                }
            }))
        })
    }
    fn parses_raw(&self) -> bool {
        true
    }
    fn try_send_raw(&self, peer: PeerId, raw: RawUpdates) -> Result<(), RawUpdates> {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.raw.send((peer, raw)).map_err(|e| e.0 .1)
    }
    fn send_raw(&self, peer: PeerId, raw: RawUpdates) -> BoxFuture<'_, bool> {
        let ok = self.try_send_raw(peer, raw).is_ok();
        Box::pin(std::future::ready(ok))
    }
}

/// Our session (127.79.n.1) connected to a raw peer (127.79.n.2), both
/// Established, over a [`WorkerRib`].
async fn established(n: u8) -> (SessionHandle, RawPeer, Receiver<RibMsg>, Arc<AtomicUsize>) {
    let (inner, mut rx) = rib_channel();
    let (rib, batches) = WorkerRib::new(inner);
    let (h, peer) = established_raw(79, n, rib, &mut rx, |_| {}, &[]).await;
    (h, peer, rx, batches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_go_to_the_workers_unparsed() {
    let (h, mut peer, mut rx, batches) = established(1).await;
    peer.send(&update(&[], &good_attrs(), &[24, 10, 79, 1]))
        .await;
    let updates = next_updates(&mut rx).await;
    let want: Prefix = "10.79.1.0/24".parse().expect("prefix");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].announce[0].prefix, want);
    assert!(batches.load(Ordering::Relaxed) >= 1, "handed over raw");
    assert_eq!(h.status.updates_in.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_update_found_by_a_worker_resets_with_exact_notification() {
    // As session_raw checks for parsing on the session: here the worker
    // finds the error, the session still sends exactly 3/1.
    let (h, mut peer, mut rx, _) = established(2).await;
    unparsable_update_resets_3_1(&h, &mut peer, &mut rx).await;
}
