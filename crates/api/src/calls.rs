//! The control-path calls the RPCs are made of: each one goes through
//! [`Control`] (the closures on the RIB threads the CLI socket runs),
//! and table walks are cut into RIB calls of [`crate::BATCH`] prefixes.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use base::Prefix;
use bgp_speaker::daemon::control::Control;
use bgp_speaker::daemon::query;
use bgp_speaker::rib::{RibState, StaticRoute};
use mgmt::proto::{Data, ErrorCode, ProtocolInfo, Request, Response, RouteInfo};
use mgmt::server::ControlHandler;
use tonic::Status;

use crate::apipb;
use crate::convert;

pub fn status(r: Response) -> Status {
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

/// `show protocols all`, as the CLI socket answers it.
pub fn protocols(ctl: &Control) -> Result<Vec<ProtocolInfo>, Status> {
    match ctl.handle(Request::ShowProtocols {
        all: true,
        name: None,
    }) {
        Response::Ok(Data::Protocols(p)) => Ok(p),
        r => Err(status(r)),
    }
}

pub fn peer_index(ctl: &Control) -> Result<PeerIndex, Status> {
    Ok(protocols(ctl)?
        .into_iter()
        .filter_map(|p| {
            let b = p.bgp?;
            Some((p.name, (b.neighbor_addr, b.remote_as)))
        })
        .collect())
}

/// The sorted prefixes of a walk, over every RIB part.
pub fn keys(ctl: &Control, walk: &Walk) -> Result<Vec<Prefix>, Status> {
    let w = walk.clone();
    let parts = ctl.call_all(move |st| w.keys(st)).map_err(status)?;
    let mut all: Vec<Prefix> = parts.into_iter().flatten().collect();
    all.sort_unstable();
    all.dedup();
    Ok(all)
}

/// One batch of destinations, one RIB call (on every part).
pub fn destinations(
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
pub fn originate(
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
