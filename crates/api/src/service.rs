//! The `GobgpApi` service over [`Control`].

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use base::Prefix;
use bgp_speaker::daemon::control::Control;
use bgp_speaker::daemon::query;
use bgp_speaker::rib::{RibState, StaticRoute};
use mgmt::proto::{Data, ErrorCode, NeighborAction, ProtocolInfo, Request, Response, RouteInfo};
use mgmt::server::ControlHandler;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

use crate::apipb::{self, gobgp_api_server::GobgpApi};
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

pub(crate) fn status(r: Response) -> Status {
    match r {
        Response::Error { code, message } => match code {
            ErrorCode::NotFound => Status::not_found(message),
            ErrorCode::BadRequest => Status::invalid_argument(message),
            ErrorCode::Unsupported => Status::unimplemented(message),
            ErrorCode::Busy => Status::unavailable(message),
            _ => Status::internal(message),
        },
        Response::Ok(_) => Status::internal("unexpected answer"),
    }
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

/// Which table a walk reads.
#[derive(Clone, Debug)]
pub(crate) struct Walk {
    pub v6: bool,
    pub mcast: bool,
    /// Only paths from this neighbour (adj-in), by address or name.
    pub peer: Option<String>,
    pub filters: Vec<Filter>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Filter {
    Exact(Prefix),
    /// An address without a length: its longest match.
    Longest(Prefix),
    Longer(Prefix),
    Shorter(Prefix),
}

impl Walk {
    fn wants(&self, p: Prefix) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| match *f {
                Filter::Exact(q) => q == p,
                Filter::Longer(q) => convert::covers(q, p),
                Filter::Shorter(q) => convert::covers(p, q),
                Filter::Longest(_) => false,
            })
    }

    /// The prefixes of this walk in this RIB part (first RIB call).
    fn keys(&self, st: &RibState) -> Vec<Prefix> {
        let rib = if self.mcast { &st.mcast } else { &st.rib };
        let peer = match &self.peer {
            Some(k) => match st.find_peer(k) {
                Some(id) => Some(id),
                None => return Vec::new(),
            },
            None => None,
        };
        let has = |r: &bgp_rib::RouteRef<'_>| {
            !r.paths.is_empty() && peer.is_none_or(|id| r.paths.iter().any(|pe| pe.peer == id))
        };
        let v6 = self.v6;
        let mut out = Vec::new();
        // Exact and longest-match filters are lookups, not walks.
        if !self.filters.is_empty()
            && self
                .filters
                .iter()
                .all(|f| matches!(f, Filter::Exact(_) | Filter::Longest(_)))
        {
            for f in &self.filters {
                match *f {
                    Filter::Exact(p) if rib.lookup(&p).is_some_and(|r| has(&r)) => out.push(p),
                    Filter::Longest(p) => {
                        for len in (0..=p.len()).rev() {
                            let Ok(q) = Prefix::new(p.addr(), len) else {
                                continue;
                            };
                            let q = q.masked();
                            if rib.lookup(&q).is_some_and(|r| has(&r)) {
                                out.push(q);
                                break;
                            }
                        }
                    }
                    _ => {}
                }
            }
            return out;
        }
        for r in rib.iter() {
            if matches!(r.prefix, Prefix::V6(_)) == v6 && self.wants(r.prefix) && has(&r) {
                out.push(r.prefix);
            }
        }
        out
    }

    /// The CLI's route answers for `batch` in this RIB part.
    fn routes(&self, st: &RibState, batch: &[Prefix]) -> Vec<(Prefix, RouteInfo)> {
        let rib = if self.mcast { &st.mcast } else { &st.rib };
        let name = self
            .peer
            .as_deref()
            .and_then(|k| st.find_peer(k))
            .and_then(|id| st.peer(id))
            .map(|p| p.meta.name.clone());
        if self.peer.is_some() && name.is_none() {
            return Vec::new();
        }
        batch
            .iter()
            .flat_map(|p| query::routes_keyed_in(st, rib, Some(*p), true, name.as_deref()))
            .collect()
    }
}

/// Neighbour name -> (address, AS), for the paths' source fields.
pub(crate) type PeerIndex = BTreeMap<String, (IpAddr, u32)>;

impl Service {
    /// A service answering from `ctl`.
    pub fn new(ctl: Arc<Control>) -> Service {
        Service { ctl }
    }

    /// `show protocols all`, as the CLI socket answers it.
    pub(crate) fn protocols(ctl: &Control) -> Result<Vec<ProtocolInfo>, Status> {
        match ctl.handle(Request::ShowProtocols {
            all: true,
            name: None,
        }) {
            Response::Ok(Data::Protocols(p)) => Ok(p),
            r => Err(status(r)),
        }
    }

    pub(crate) fn peer_index(ctl: &Control) -> Result<PeerIndex, Status> {
        Ok(Self::protocols(ctl)?
            .into_iter()
            .filter_map(|p| {
                let b = p.bgp?;
                Some((p.name, (b.neighbor_addr, b.remote_as)))
            })
            .collect())
    }

    /// The sorted prefixes of a walk, over every RIB part.
    pub(crate) fn keys(ctl: &Control, walk: &Walk) -> Result<Vec<Prefix>, Status> {
        let w = walk.clone();
        let parts = ctl.call_all(move |st| w.keys(st)).map_err(status)?;
        let mut all: Vec<Prefix> = parts.into_iter().flatten().collect();
        all.sort_unstable();
        all.dedup();
        Ok(all)
    }

    /// One batch of destinations, one RIB call (on every part).
    pub(crate) fn destinations(
        ctl: &Control,
        walk: &Walk,
        batch: Vec<Prefix>,
        peers: &PeerIndex,
    ) -> Result<Vec<apipb::Destination>, Status> {
        let w = walk.clone();
        let batch = Arc::new(batch);
        let parts = ctl
            .call_all(move |st| w.routes(st, &batch))
            .map_err(status)?;
        let mut routes: Vec<(Prefix, RouteInfo)> = parts.into_iter().flatten().collect();
        routes.sort_by_key(|r| r.0);
        Ok(routes
            .into_iter()
            .map(|(p, r)| apipb::Destination {
                prefix: r.prefix.clone(),
                paths: r
                    .paths
                    .iter()
                    .map(|pi| {
                        let src = peers.get(&pi.from).copied();
                        convert::path(p, pi, src, walk.mcast)
                    })
                    .collect(),
            })
            .collect())
    }

    /// Originates and withdraws on every RIB part (each applies what it
    /// owns); how many routes were applied in all.
    pub(crate) fn originate(
        ctl: &Control,
        add: Vec<StaticRoute>,
        withdraw: Vec<Prefix>,
    ) -> Result<usize, Status> {
        let job = Arc::new((add, withdraw));
        let n = ctl
            .call_all(move |st| {
                let (a, w) = &*job;
                st.core.originate(a, w)
            })
            .map_err(status)?;
        Ok(n.into_iter().sum())
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
        _: tonic::Request<apipb::AddPeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        Err(unsupported(
            "AddPeer (neighbours come from the configuration file: add it there and run `tessera configure`)",
        ))
    }

    async fn delete_peer(
        &self,
        _: tonic::Request<apipb::DeletePeerRequest>,
    ) -> Result<tonic::Response<()>, Status> {
        Err(unsupported(
            "DeletePeer (neighbours come from the configuration file: remove it there and run `tessera configure`)",
        ))
    }

    type ListPeerStream = Stream<apipb::ListPeerResponse>;

    async fn list_peer(
        &self,
        req: tonic::Request<apipb::ListPeerRequest>,
    ) -> Result<tonic::Response<Self::ListPeerStream>, Status> {
        let want = req.into_inner().address;
        let ctl = self.ctl.clone();
        let protos = blocking(move || Service::protocols(&ctl)).await??;
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
        let n = blocking(move || Service::originate(&ctl, add, del)).await??;
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
        let n = blocking(move || Service::originate(&ctl, Vec::new(), del)).await??;
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
                let peers = Service::peer_index(&ctl)?;
                let keys = Service::keys(&ctl, &walk)?;
                for chunk in keys.chunks(BATCH) {
                    for d in Service::destinations(&ctl, &walk, chunk.to_vec(), &peers)? {
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
            blocking(move || Service::originate(&ctl, add, del)).await??;
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
