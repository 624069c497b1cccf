//! The `GobgpApi` service over [`Control`].

use std::sync::Arc;

use base::Prefix;
use bgp_speaker::daemon::control::{Control, PeerChange};
use bgp_speaker::rib::StaticRoute;
use mgmt::proto::{NeighborAction, Request, Response};
use mgmt::server::ControlHandler;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use crate::apipb::{self, gobgp_api_server::GobgpApi};
use crate::calls::{self, status, Filter, Walk};
use crate::convert;

/// Prefixes per RIB call of a table walk: each call holds a RIB thread for
/// about this many lookups, then lets it run.
pub const BATCH: usize = 256;

/// Destinations queued towards a slow client before the walk waits.
const STREAM_QUEUE: usize = 4;

/// The service; cheap to clone.
#[derive(Clone)]
pub struct Service {
    ctl: Arc<Control>,
}

fn unsupported(what: &str) -> Status {
    Status::unimplemented(format!("{what} is not supported yet"))
}

/// Runs blocking control work off the async threads.
async fn blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> Result<R, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("control task failed: {e}")))
}

impl Service {
    /// A service answering from `ctl`.
    pub fn new(ctl: Arc<Control>) -> Service {
        Service { ctl }
    }

    fn walk_of(
        table: i32,
        name: &str,
        family: Option<&apipb::Family>,
        prefixes: &[apipb::TableLookupPrefix],
    ) -> Result<Walk, Status> {
        let (v6, mcast) = convert::family(family).ok_or_else(|| {
            unsupported("this address family (only IPv4/IPv6 unicast and multicast)")
        })?;
        let peer = match apipb::TableType::try_from(table) {
            Ok(apipb::TableType::Global | apipb::TableType::Local) => None,
            Ok(apipb::TableType::AdjIn) => {
                if name.is_empty() {
                    return Err(Status::invalid_argument("adj-in needs a neighbour address"));
                }
                Some(name.to_string())
            }
            Ok(apipb::TableType::AdjOut) => return Err(unsupported("the adj-out table")),
            Ok(apipb::TableType::Vrf) => return Err(unsupported("VRF tables")),
            Err(_) => return Err(Status::invalid_argument(format!("bad table type {table}"))),
        };
        let mut filters = Vec::new();
        for l in prefixes {
            let p = convert::lookup_prefix(&l.prefix).map_err(Status::invalid_argument)?;
            if matches!(p, Prefix::V6(_)) != v6 {
                return Err(Status::invalid_argument(format!(
                    "{} is not of the requested family",
                    l.prefix
                )));
            }
            filters.push(match apipb::table_lookup_prefix::Type::try_from(l.r#type) {
                Ok(apipb::table_lookup_prefix::Type::Exact) if !l.prefix.contains('/') => {
                    Filter::Longest(p)
                }
                Ok(apipb::table_lookup_prefix::Type::Exact) => Filter::Exact(p),
                Ok(apipb::table_lookup_prefix::Type::Longer) => Filter::Longer(p),
                Ok(apipb::table_lookup_prefix::Type::Shorter) => Filter::Shorter(p),
                Err(_) => return Err(Status::invalid_argument("bad lookup type")),
            });
        }
        Ok(Walk {
            v6,
            mcast,
            peer,
            filters,
        })
    }

    async fn neighbor(&self, addr: String, action: NeighborAction) -> Result<(), Status> {
        let ctl = self.ctl.clone();
        match blocking(move || {
            ctl.handle(Request::Neighbor {
                addr_or_name: addr,
                action,
            })
        })
        .await?
        {
            Response::Ok(_) => Ok(()),
            r => Err(status(r)),
        }
    }

    async fn change_peer(&self, c: PeerChange) -> Result<tonic::Response<()>, Status> {
        let ctl = self.ctl.clone();
        match blocking(move || ctl.change_peer(c)).await? {
            Ok(_) => Ok(tonic::Response::new(())),
            Err(Response::Error {
                code: mgmt::proto::ErrorCode::Config,
                message,
            }) => Err(Status::failed_precondition(message)),
            Err(r) => Err(status(r)),
        }
    }

    fn paths_in(paths: &[apipb::Path]) -> Result<(Vec<StaticRoute>, Vec<Prefix>), Status> {
        let mut add = Vec::new();
        let mut del = Vec::new();
        for p in paths {
            match convert::route_of(p).map_err(Status::invalid_argument)? {
                (_, Some(r)) => add.push(r),
                (p, None) => del.push(p),
            }
        }
        Ok((add, del))
    }
}

fn table_type_ok(t: i32) -> Result<(), Status> {
    match apipb::TableType::try_from(t) {
        Ok(apipb::TableType::Global) => Ok(()),
        Ok(apipb::TableType::Vrf) => Err(unsupported("VRF tables")),
        _ => Err(Status::invalid_argument(
            "paths are added to the global table",
        )),
    }
}

type Stream<T> = ReceiverStream<Result<T, Status>>;

#[tonic::async_trait]
impl GobgpApi for Service {
    async fn get_bgp(
        &self,
        _: tonic::Request<apipb::GetBgpRequest>,
    ) -> Result<tonic::Response<apipb::GetBgpResponse>, Status> {
        let ctl = self.ctl.clone();
        let (asn, id) = blocking(move || {
            ctl.call(|st| (st.settings.local_asn.0, st.settings.router_id))
                .map_err(status)
        })
        .await??;
        Ok(tonic::Response::new(apipb::GetBgpResponse {
            global: Some(apipb::Global {
                asn,
                router_id: id.to_string(),
                ..Default::default()
            }),
        }))
    }

    type WatchEventStream = Stream<apipb::WatchEventResponse>;

    async fn watch_event(
        &self,
        req: tonic::Request<apipb::WatchEventRequest>,
    ) -> Result<tonic::Response<Self::WatchEventStream>, Status> {
        crate::watch::start(self.ctl.clone(), req.into_inner()).map(tonic::Response::new)
    }

    async fn add_peer(
        &self,
        req: tonic::Request<apipb::AddPeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let p = req
            .into_inner()
            .peer
            .ok_or_else(|| Status::invalid_argument("AddPeer needs a peer"))?;
        let keys = convert::neighbor_keys(&p).map_err(|e| match e {
            convert::PeerError::Invalid(m) => Status::invalid_argument(m),
            convert::PeerError::Unsupported(m) => Status::unimplemented(m),
        })?;
        self.change_peer(PeerChange::Add(keys)).await
    }

    async fn delete_peer(
        &self,
        req: tonic::Request<apipb::DeletePeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let r = req.into_inner();
        if !r.interface.is_empty() {
            return Err(unsupported("DeletePeer by interface"));
        }
        if r.address.is_empty() {
            return Err(Status::invalid_argument("DeletePeer needs an address"));
        }
        self.change_peer(PeerChange::Delete(r.address)).await
    }

    type ListPeerStream = Stream<apipb::ListPeerResponse>;

    async fn list_peer(
        &self,
        req: tonic::Request<apipb::ListPeerRequest>,
    ) -> Result<tonic::Response<Self::ListPeerStream>, Status> {
        let want = req.into_inner().address;
        let ctl = self.ctl.clone();
        let protos = blocking(move || calls::protocols(&ctl)).await??;
        let peers: Vec<apipb::Peer> = protos
            .iter()
            .filter(|p| {
                want.is_empty()
                    || p.name == want
                    || p.bgp
                        .as_ref()
                        .is_some_and(|b| b.neighbor_addr.to_string() == want)
            })
            .filter_map(convert::peer)
            .collect();
        if !want.is_empty() && peers.is_empty() {
            return Err(Status::not_found(format!("no neighbor {want}")));
        }
        let (tx, rx) = mpsc::channel(peers.len().max(1));
        for p in peers {
            let _ = tx.try_send(Ok(apipb::ListPeerResponse { peer: Some(p) }));
        }
        Ok(tonic::Response::new(ReceiverStream::new(rx)))
    }

    async fn reset_peer(
        &self,
        req: tonic::Request<apipb::ResetPeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let r = req.into_inner();
        let action = if r.soft {
            match apipb::reset_peer_request::SoftResetDirection::try_from(r.direction) {
                Ok(apipb::reset_peer_request::SoftResetDirection::In) => NeighborAction::Refresh,
                _ => return Err(unsupported("soft reset out")),
            }
        } else {
            NeighborAction::Restart
        };
        self.neighbor(r.address, action).await?;
        Ok(tonic::Response::new(()))
    }

    async fn shutdown_peer(
        &self,
        req: tonic::Request<apipb::ShutdownPeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let r = req.into_inner();
        let message = (!r.communication.is_empty()).then_some(r.communication);
        self.neighbor(r.address, NeighborAction::Disable { message })
            .await?;
        Ok(tonic::Response::new(()))
    }

    async fn enable_peer(
        &self,
        req: tonic::Request<apipb::EnablePeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        self.neighbor(req.into_inner().address, NeighborAction::Enable)
            .await?;
        Ok(tonic::Response::new(()))
    }

    async fn disable_peer(
        &self,
        req: tonic::Request<apipb::DisablePeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let r = req.into_inner();
        let message = (!r.communication.is_empty()).then_some(r.communication);
        self.neighbor(r.address, NeighborAction::Disable { message })
            .await?;
        Ok(tonic::Response::new(()))
    }

    async fn add_path(
        &self,
        req: tonic::Request<apipb::AddPathRequest>,
    ) -> Result<tonic::Response<apipb::AddPathResponse>, Status> {
        let r = req.into_inner();
        table_type_ok(r.table_type)?;
        let path = r.path.ok_or_else(|| Status::invalid_argument("no path"))?;
        let (add, del) = Self::paths_in(std::slice::from_ref(&path))?;
        let ctl = self.ctl.clone();
        let n = blocking(move || calls::originate(&ctl, add, del)).await??;
        if n == 0 {
            return Err(Status::failed_precondition(
                "that prefix is a configured static route ([[static]]): change it in the file",
            ));
        }
        Ok(tonic::Response::new(apipb::AddPathResponse::default()))
    }

    async fn delete_path(
        &self,
        req: tonic::Request<apipb::DeletePathRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        let r = req.into_inner();
        table_type_ok(r.table_type)?;
        if !r.uuid.is_empty() {
            return Err(unsupported("DeletePath by uuid"));
        }
        let Some(mut path) = r.path else {
            return Err(unsupported("DeletePath of every path of a family"));
        };
        if path.family.is_none() {
            path.family = r.family;
        }
        path.is_withdraw = true;
        let (_, del) = Self::paths_in(std::slice::from_ref(&path))?;
        let ctl = self.ctl.clone();
        let n = blocking(move || calls::originate(&ctl, Vec::new(), del)).await??;
        if n == 0 {
            return Err(Status::failed_precondition(
                "that prefix is a configured static route ([[static]]): change it in the file",
            ));
        }
        Ok(tonic::Response::new(()))
    }

    type ListPathStream = Stream<apipb::ListPathResponse>;

    async fn list_path(
        &self,
        req: tonic::Request<apipb::ListPathRequest>,
    ) -> Result<tonic::Response<Self::ListPathStream>, Status> {
        let r = req.into_inner();
        let walk = Self::walk_of(r.table_type, &r.name, r.family.as_ref(), &r.prefixes)?;
        let ctl = self.ctl.clone();
        if let Some(p) = &walk.peer {
            let (c, p2) = (ctl.clone(), p.clone());
            let known = blocking(move || {
                c.call(move |st| st.find_peer(&p2).is_some())
                    .map_err(status)
            })
            .await??;
            if !known {
                return Err(Status::not_found(format!("no neighbor {p}")));
            }
        }
        let (tx, rx) = mpsc::channel(STREAM_QUEUE * BATCH);
        tokio::task::spawn_blocking(move || {
            let run = || -> Result<(), Status> {
                let peers = calls::peer_index(&ctl)?;
                let keys = calls::keys(&ctl, &walk)?;
                for chunk in keys.chunks(BATCH) {
                    for d in calls::destinations(&ctl, &walk, chunk.to_vec(), &peers)? {
                        let m = apipb::ListPathResponse {
                            destination: Some(d),
                        };
                        if tx.blocking_send(Ok(m)).is_err() {
                            return Ok(()); // the client went away
                        }
                    }
                }
                Ok(())
            };
            if let Err(e) = run() {
                let _ = tx.blocking_send(Err(e));
            }
        });
        Ok(tonic::Response::new(ReceiverStream::new(rx)))
    }

    async fn add_path_stream(
        &self,
        req: tonic::Request<Streaming<apipb::AddPathStreamRequest>>,
    ) -> Result<tonic::Response<()>, Status> {
        let mut s = req.into_inner();
        while let Some(m) = s.message().await? {
            table_type_ok(m.table_type)?;
            // One RIB call per message: the client's batch size is ours.
            let (add, del) = Self::paths_in(&m.paths)?;
            let ctl = self.ctl.clone();
            blocking(move || calls::originate(&ctl, add, del)).await??;
        }
        Ok(tonic::Response::new(()))
    }

    async fn get_table(
        &self,
        req: tonic::Request<apipb::GetTableRequest>,
    ) -> Result<tonic::Response<apipb::GetTableResponse>, Status> {
        let r = req.into_inner();
        let walk = Self::walk_of(r.table_type, &r.name, r.family.as_ref(), &[])?;
        let ctl = self.ctl.clone();
        if walk.peer.is_none() {
            // The global table's counts are what the RIB threads publish
            // (`show route count`): no walk, no wait for a RIB thread.
            let parts = blocking(move || ctl.published().map_err(status)).await??;
            let table = match (walk.mcast, walk.v6) {
                (false, false) => "master4",
                (false, true) => "master6",
                (true, false) => "mcast4",
                (true, true) => "mcast6",
            };
            let mut out = apipb::GetTableResponse::default();
            for p in &parts {
                let c = if walk.mcast {
                    &p.mcast_count
                } else {
                    &p.route_count
                };
                for t in c.tables.iter().filter(|t| t.table == table) {
                    out.num_destination += t.prefixes;
                    out.num_path += t.paths;
                }
            }
            return Ok(tonic::Response::new(out));
        }
        let parts = blocking(move || {
            ctl.call_all(move |st| {
                let rib = if walk.mcast { &st.mcast } else { &st.rib };
                let peer = walk.peer.as_deref().and_then(|k| st.find_peer(k));
                if walk.peer.is_some() && peer.is_none() {
                    return None;
                }
                let (mut d, mut n) = (0u64, 0u64);
                for r in rib.iter() {
                    if matches!(r.prefix, Prefix::V6(_)) != walk.v6 {
                        continue;
                    }
                    let k = match peer {
                        Some(id) => r.paths.iter().filter(|pe| pe.peer == id).count(),
                        None => r.paths.len(),
                    } as u64;
                    if k > 0 {
                        d += 1;
                        n += k;
                    }
                }
                Some((d, n))
            })
            .map_err(status)
        })
        .await??;
        let mut out = apipb::GetTableResponse::default();
        for p in parts {
            let Some((d, n)) = p else {
                return Err(Status::not_found(format!("no neighbor {}", r.name)));
            };
            out.num_destination += d;
            out.num_path += n;
        }
        if !r.name.is_empty() {
            // What is kept of a neighbour's routes is what import accepted.
            out.num_accepted = out.num_path;
        }
        Ok(tonic::Response::new(out))
    }
}
