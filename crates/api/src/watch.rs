//! `WatchEvent`: best-path changes and neighbour state changes.
//!
//! Table events come from the RIB threads' best-route feed (the one the
//! dataplane follows). A feed subscriber that does not read blocks the RIB
//! thread that publishes to it, so a thread of ours drains the feed at
//! once into an unbounded queue, and a watcher whose backlog passes
//! [`MAX_BACKLOG`] prefixes is cut off with an error instead. Each drained
//! batch is looked up (one RIB call per [`crate::BATCH`] prefixes) to give
//! the client whole paths; a prefix without a best path any more is sent
//! as a withdrawal.
//!
//! Neighbour events: the neighbour list is read every
//! [`PEER_POLL`] (through the CLI's `show protocols all`) and a neighbour
//! whose session state or admin state changed is sent.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base::Prefix;
use bgp_speaker::daemon::control::Control;
use bgp_speaker::fib_feed::BestChange;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::apipb::{self, watch_event_request, watch_event_response};
use crate::calls::{self as svc, status, Filter, Walk};
use crate::BATCH;

/// Prefixes waiting for a slow watcher before it is cut off.
pub const MAX_BACKLOG: usize = 1 << 20;

/// How often neighbour state is compared.
pub const PEER_POLL: Duration = Duration::from_millis(500);

type Out = mpsc::Sender<Result<apipb::WatchEventResponse, Status>>;

pub(crate) fn start(
    ctl: Arc<Control>,
    req: apipb::WatchEventRequest,
) -> Result<ReceiverStream<Result<apipb::WatchEventResponse, Status>>, Status> {
    if req.peer.is_none() && req.table.is_none() {
        return Err(Status::invalid_argument("watch what? (peer and/or table)"));
    }
    let (tx, rx) = mpsc::channel(64);
    if let Some(t) = req.table {
        let mut init = false;
        for f in &t.filters {
            match watch_event_request::table::filter::Type::try_from(f.r#type) {
                Ok(watch_event_request::table::filter::Type::Best) => init |= f.init,
                _ => {
                    return Err(Status::unimplemented(
                        "only the BEST table filter is supported yet",
                    ))
                }
            }
        }
        start_table(ctl.clone(), init, tx.clone())?;
    }
    if req.peer.is_some() {
        tokio::spawn(peers(ctl, tx));
    }
    Ok(ReceiverStream::new(rx))
}

fn start_table(ctl: Arc<Control>, init: bool, out: Out) -> Result<(), Status> {
    let (feed_tx, feed_rx) = std::sync::mpsc::sync_channel::<Vec<BestChange>>(16);
    let (q_tx, mut q_rx) = mpsc::unbounded_channel::<Vec<Prefix>>();
    let backlog = Arc::new(AtomicUsize::new(0));
    // The drain: never lets the feed fill up.
    {
        let backlog = backlog.clone();
        let mut snapshot = true;
        std::thread::Builder::new()
            .name("api-watch".into())
            .spawn(move || {
                while let Ok(batch) = feed_rx.recv() {
                    if batch.is_empty() {
                        snapshot = false; // our end-of-snapshot marker
                        continue;
                    }
                    if snapshot && !init {
                        continue;
                    }
                    let n = batch.len();
                    if backlog.fetch_add(n, Ordering::AcqRel) + n > MAX_BACKLOG {
                        break;
                    }
                    if q_tx
                        .send(batch.into_iter().map(|c| c.prefix).collect())
                        .is_err()
                    {
                        break;
                    }
                }
            })
            .map_err(|e| Status::internal(format!("cannot start the watcher: {e}")))?;
    }
    // Subscribe: every part sends its snapshot before it returns, so the
    // empty batch sent after this call marks the end of the snapshots.
    let sub = feed_tx.clone();
    let c = ctl.clone();
    std::thread::Builder::new()
        .name("api-watch-sub".into())
        .spawn(move || {
            if c.call_all(move |st| st.subscribe_best(sub.clone())).is_ok() {
                let _ = feed_tx.send(Vec::new());
            }
        })
        .map_err(|e| Status::internal(format!("cannot start the watcher: {e}")))?;
    tokio::spawn(async move {
        while let Some(mut prefixes) = q_rx.recv().await {
            while let Ok(more) = q_rx.try_recv() {
                prefixes.extend(more);
                if prefixes.len() >= 16 * BATCH {
                    break;
                }
            }
            let n = prefixes.len();
            let c = ctl.clone();
            let r = tokio::task::spawn_blocking(move || lookup(&c, prefixes)).await;
            let lagging = backlog.fetch_sub(n, Ordering::AcqRel) > MAX_BACKLOG;
            let msg = match r {
                Ok(Ok(paths)) if paths.is_empty() => continue,
                Ok(Ok(paths)) => Ok(apipb::WatchEventResponse {
                    table: Some(watch_event_response::TableEvent { paths }),
                    peer: None,
                }),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(Status::internal(e.to_string())),
            };
            let end = msg.is_err();
            if out.send(msg).await.is_err() || end {
                return;
            }
            if lagging {
                let _ = out
                    .send(Err(Status::resource_exhausted(
                        "this watcher fell too far behind the RIB",
                    )))
                    .await;
                return;
            }
        }
    });
    Ok(())
}

/// Paths of the best-route changes of `prefixes`: the best path, or a
/// withdrawal when there is none.
fn lookup(ctl: &Control, mut prefixes: Vec<Prefix>) -> Result<Vec<apipb::Path>, Status> {
    prefixes.sort_unstable();
    prefixes.dedup();
    let peers = svc::peer_index(ctl)?;
    let mut out = Vec::new();
    for v6 in [false, true] {
        let fam: Vec<Prefix> = prefixes
            .iter()
            .copied()
            .filter(|p| matches!(p, Prefix::V6(_)) == v6)
            .collect();
        for chunk in fam.chunks(BATCH) {
            let walk = Walk {
                v6,
                mcast: false,
                peer: None,
                filters: chunk.iter().map(|p| Filter::Exact(*p)).collect(),
            };
            let dests = svc::destinations(ctl, &walk, chunk.to_vec(), &peers)?;
            let mut found = std::collections::BTreeSet::new();
            for d in dests {
                found.insert(d.prefix.clone());
                out.extend(d.paths.into_iter().filter(|p| p.best));
            }
            for p in chunk {
                if !found.contains(&p.to_string()) {
                    out.push(withdrawn(*p));
                }
            }
        }
    }
    Ok(out)
}

fn withdrawn(p: Prefix) -> apipb::Path {
    let v6 = matches!(p, Prefix::V6(_));
    apipb::Path {
        nlri: Some(crate::convert::any(
            "IPAddressPrefix",
            &apipb::IpAddressPrefix {
                prefix_len: u32::from(p.len()),
                prefix: p.addr().to_string(),
            },
        )),
        is_withdraw: true,
        family: Some(crate::convert::api_family(v6, false)),
        ..Default::default()
    }
}

async fn peers(ctl: Arc<Control>, out: Out) {
    let mut last: BTreeMap<String, (i32, i32)> = BTreeMap::new();
    let mut first = true;
    let mut tick = tokio::time::interval(PEER_POLL);
    loop {
        tick.tick().await;
        let c = ctl.clone();
        let protos = match tokio::task::spawn_blocking(move || svc::protocols(&c)).await {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                let _ = out.send(Err(e)).await;
                return;
            }
            Err(e) => {
                let _ = out
                    .send(Err(status(mgmt::proto::Response::error(
                        mgmt::proto::ErrorCode::Internal,
                        e.to_string(),
                    ))))
                    .await;
                return;
            }
        };
        for p in protos.iter().filter_map(crate::convert::peer) {
            let s = p
                .state
                .as_ref()
                .map_or((0, 0), |s| (s.session_state, s.admin_state));
            let addr = p
                .state
                .as_ref()
                .map(|s| s.neighbor_address.clone())
                .unwrap_or_default();
            if last.get(&addr) == Some(&s) {
                continue;
            }
            last.insert(addr, s);
            let ty = if first {
                watch_event_response::peer_event::Type::Init
            } else {
                watch_event_response::peer_event::Type::State
            };
            let m = apipb::WatchEventResponse {
                peer: Some(watch_event_response::PeerEvent {
                    r#type: ty as i32,
                    peer: Some(p),
                }),
                table: None,
            };
            if out.send(Ok(m)).await.is_err() {
                return;
            }
        }
        if first {
            first = false;
            let m = apipb::WatchEventResponse {
                peer: Some(watch_event_response::PeerEvent {
                    r#type: watch_event_response::peer_event::Type::EndOfInit as i32,
                    peer: None,
                }),
                table: None,
            };
            if out.send(Ok(m)).await.is_err() {
                return;
            }
        }
    }
}
