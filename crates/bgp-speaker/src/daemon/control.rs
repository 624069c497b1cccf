//! The CLI handler: every request is a closure run on the RIB threads
//! (see [`crate::rib::ControlFn`]), answered through a std channel, so the
//! control plane never takes a lock on routing state. With a split RIB
//! the closure runs on every shard thread and the answers are merged
//! ([`super::merge`]).

use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::Prefix;
use bgp_wire::consts::notify;
use bgp_wire::NotificationMessage;
use mgmt::proto::{
    ActionResult, ConfigureResult, Data, ErrorCode, NeighborAction, ProtocolInfo, Request,
    Response, StatusInfo,
};
use mgmt::server::ControlHandler;
use tokio::sync::mpsc::Sender;

use super::{merge, query};
use crate::msg::SessionCmd;
use crate::pipeline::CallError;
use crate::rib::RibMsg;
use crate::rib::RibState;

/// How long a CLI request may wait for the RIB thread.
const RIB_TIMEOUT: Duration = Duration::from_secs(30);

/// Re-reads the configuration (`check`: validate only).
pub type ReloadFn = dyn Fn(bool) -> Result<ConfigureResult, String> + Send + Sync;

/// A neighbour added or removed at run time (the gRPC API's `AddPeer` and
/// `DeletePeer`).
#[derive(Clone, Debug)]
pub enum PeerChange {
    /// A new neighbour, in the file's keys.
    Add(config::NeighborKeys),
    /// The neighbour with this name or address (one added at run time).
    Delete(String),
}

/// Applies a [`PeerChange`] as a reload applies the file: the messages of
/// the change, or why it was refused (an error response: `NotFound`,
/// `Config` for a neighbour that is not valid or not the API's to remove).
pub type PeerChangeFn = dyn Fn(PeerChange) -> Result<Vec<String>, Response> + Send + Sync;

pub struct Control {
    /// One channel per RIB thread, in shard order.
    rib: Vec<Sender<RibMsg>>,
    /// What each RIB thread publishes, in shard order: `show protocols`,
    /// `show neighbor`, `show route count` and `/metrics` read these and
    /// never wait for a RIB thread (`rib/published.rs`). Given by
    /// [`Control::with_published`], or asked of the RIB threads on first
    /// use.
    published: std::sync::OnceLock<crate::rib::published::Slots>,
    reload: Arc<ReloadFn>,
    started: SystemTime,
    bfd: super::SharedBfd,
    bmp: Option<crate::bmp::BmpHub>,
    /// The RPKI manager's view, with `[rpki]`.
    rpki: Option<crate::rpki::SharedStatus>,
    /// The forwarding plane (`show dataplane`).
    dataplane: Option<Arc<dyn super::DataplaneHook>>,
    /// Neighbours added and removed at run time (the daemon's reload path).
    peers: Option<Arc<PeerChangeFn>>,
}

impl Control {
    pub fn new(rib: Vec<Sender<RibMsg>>, reload: Arc<ReloadFn>, bfd: super::SharedBfd) -> Control {
        Control {
            rib,
            published: std::sync::OnceLock::new(),
            reload,
            started: SystemTime::now(),
            bfd,
            bmp: None,
            rpki: None,
            dataplane: None,
            peers: None,
        }
    }

    /// Answers `show dataplane` from `dp`.
    pub fn with_dataplane(mut self, dp: Option<Arc<dyn super::DataplaneHook>>) -> Control {
        self.dataplane = dp;
        self
    }

    /// The forwarding plane's view (`None` without one in this process).
    pub fn dataplane(&self) -> Option<mgmt::proto::DataplaneInfo> {
        self.dataplane.as_ref().map(|d| d.show())
    }

    /// Adds and removes neighbours at run time through `f`.
    pub fn with_peer_changes(mut self, f: Arc<PeerChangeFn>) -> Control {
        self.peers = Some(f);
        self
    }

    /// Adds or removes a neighbour at run time, through the same path as
    /// a reload that adds or removes one ([`PeerChange`]).
    pub fn change_peer(&self, c: PeerChange) -> Result<Vec<String>, Response> {
        let Some(f) = &self.peers else {
            return Err(Response::error(
                ErrorCode::Unsupported,
                "adding or removing neighbours at run time is not supported by this daemon",
            ));
        };
        f(c)
    }

    /// Answers `show bmp` from `hub` (`[bmp]`).
    pub fn with_bmp(mut self, hub: Option<crate::bmp::BmpHub>) -> Control {
        self.bmp = hub;
        self
    }

    /// Answers `show rpki` from `status`.
    pub fn with_rpki(mut self, status: crate::rpki::SharedStatus) -> Control {
        self.rpki = Some(status);
        self
    }

    fn show_rpki(&self) -> Result<Data, Response> {
        let Some(status) = &self.rpki else {
            return Err(Response::error(
                ErrorCode::Unsupported,
                "RPKI is off (no [[rpki.cache]] configured)",
            ));
        };
        let counts = self.call_all(|st| {
            (
                st.core.counters.rov_reevaluated,
                st.core.counters.aspa_reevaluated,
            )
        })?;
        let reevaluated: u64 = counts.iter().map(|c| c.0).sum();
        let aspa_reevaluated: u64 = counts.iter().map(|c| c.1).sum();
        let s = status
            .lock()
            .map_err(|_| Response::error(ErrorCode::Internal, "the RPKI state is poisoned"))?
            .clone();
        Ok(Data::Rpki(mgmt::proto::RpkiInfo {
            caches: s
                .caches
                .iter()
                .map(|c| mgmt::proto::RpkiCacheInfo {
                    address: c.addr.to_string(),
                    preference: c.preference,
                    state: c.state.into(),
                    active: c.active,
                    serial: c.serial,
                    session: c.session,
                    vrps: c.vrps as u64,
                    last_error: c.last_error.clone(),
                })
                .collect(),
            vrps_v4: s.vrps_v4 as u64,
            vrps_v6: s.vrps_v6 as u64,
            reevaluated,
            aspas: s.aspas as u64,
            aspa_reevaluated,
        }))
    }

    /// The BFD sessions and receive counters; empty when BFD is not running.
    pub fn bfd_sessions(
        &self,
    ) -> Result<(Vec<mgmt::proto::BfdSessionInfo>, crate::bfd::BfdCounters), Response> {
        let h = self.bfd.lock().ok().and_then(|g| g.clone());
        match h {
            None => Ok(Default::default()),
            Some(h) => h.query_blocking(Duration::from_secs(5)).ok_or_else(|| {
                Response::error(ErrorCode::Internal, "the BFD task does not answer")
            }),
        }
    }

    /// Reads the RIB threads' published counts from `slots`
    /// ([`crate::pipeline::published_slots`], in shard order).
    pub fn with_published(self, slots: crate::rib::published::Slots) -> Control {
        let _ = self.published.set(slots);
        self
    }

    /// The last snapshot every RIB thread published, in shard order;
    /// never waits for a RIB thread, except on the first call of a
    /// `Control` made without [`Self::with_published`], which asks the
    /// RIB threads for their slots (blocking: not on a tokio worker).
    pub fn published(&self) -> Result<Vec<Arc<crate::rib::published::Published>>, Response> {
        let slots = self
            .published
            .get_or_init(|| crate::pipeline::published_slots(&self.rib, RIB_TIMEOUT));
        self.read_published(slots).ok_or_else(|| {
            Response::error(ErrorCode::Internal, "the RIB threads published no counts")
        })
    }

    /// The last snapshot every RIB thread published, in shard order, or
    /// `None` before [`Self::with_published`] gave the slots: never
    /// blocks (for `/metrics`, read on the HTTP listener's thread).
    pub fn published_now(&self) -> Option<Vec<Arc<crate::rib::published::Published>>> {
        self.read_published(self.published.get()?)
    }

    /// Every RIB thread's snapshot from `slots`, if there is one slot per
    /// RIB thread.
    fn read_published(
        &self,
        slots: &[Arc<crate::rib::published::PublishSlot>],
    ) -> Option<Vec<Arc<crate::rib::published::Published>>> {
        (!slots.is_empty() && slots.len() == self.rib.len())
            .then(|| crate::rib::published::read_all(slots))
    }

    /// Whether the BFD task runs (`/metrics` then asks it).
    pub fn has_bfd(&self) -> bool {
        self.bfd.lock().is_ok_and(|g| g.is_some())
    }

    /// Whether a dataplane is attached (`/metrics` then reads it).
    pub fn has_dataplane(&self) -> bool {
        self.dataplane.is_some()
    }

    /// `show protocols [all] [NAME]` from the published snapshots.
    pub fn protocols(&self, all: bool, name: Option<&str>) -> Result<Vec<ProtocolInfo>, Response> {
        let parts = self.published()?;
        Ok(merge::protocols(
            parts
                .iter()
                .map(|p| query::select_protocols(&p.protocols, all, name))
                .collect(),
        ))
    }

    /// Runs `f` on the primary RIB thread only and waits for its answer
    /// (for what every shard knows alike, such as the router id).
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut RibState) -> R + Send + 'static,
    ) -> Result<R, Response> {
        let Some(rib) = self.rib.first() else {
            return Err(Response::error(ErrorCode::Internal, "no RIB thread"));
        };
        let (tx, rx) = std_mpsc::sync_channel(1);
        let job: crate::rib::ControlFn = Box::new(move |st: &mut RibState| {
            let r = f(st);
            // Published before the answer (see `rib/published.rs`).
            st.publish();
            let _ = tx.send(r);
        });
        rib.blocking_send(RibMsg::Control(job))
            .map_err(|_| Response::error(ErrorCode::Internal, "the RIB thread is gone"))?;
        rx.recv_timeout(RIB_TIMEOUT)
            .map_err(|_| Response::error(ErrorCode::Busy, "the RIB thread did not answer in 30 s"))
    }

    /// Runs `f` on every RIB thread; the answers in shard order.
    pub fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut RibState) -> R + Send + Sync + 'static,
    ) -> Result<Vec<R>, Response> {
        crate::pipeline::call_all(&self.rib, RIB_TIMEOUT, f).map_err(|e| match e {
            CallError::Gone => Response::error(ErrorCode::Internal, "a RIB thread is gone"),
            CallError::Timeout => {
                Response::error(ErrorCode::Busy, "a RIB thread did not answer in 30 s")
            }
        })
    }
}

fn neighbor_action(
    st: &mut RibState,
    key: &str,
    action: NeighborAction,
) -> Result<ActionResult, String> {
    // Commands to the session go once, from the primary shard.
    let primary = st.part.is_primary();
    let id = st
        .find_peer(key)
        .ok_or_else(|| format!("no neighbor {key}"))?;
    let entry = st
        .peer_mut(id)
        .ok_or_else(|| format!("no neighbor {key}"))?;
    let name = entry.meta.name.clone();
    let is_up = entry.up.is_some();
    let mut cmd = None;
    let result = match action {
        NeighborAction::Enable => {
            entry.disabled = false;
            cmd = Some(SessionCmd::Start);
            "enabled"
        }
        NeighborAction::Disable { message } => {
            entry.disabled = true;
            // RFC 8203/9003: Cease, Administrative Shutdown, with the text.
            let n = NotificationMessage::shutdown(
                notify::ADMINISTRATIVE_SHUTDOWN,
                message.as_deref().unwrap_or(""),
            );
            cmd = Some(SessionCmd::Stop {
                notification: n,
                restart_after: None,
            });
            "disabled"
        }
        NeighborAction::Restart => {
            entry.disabled = false;
            let n = NotificationMessage::shutdown(notify::ADMINISTRATIVE_RESET, "");
            cmd = Some(SessionCmd::Stop {
                notification: n,
                restart_after: Some(Duration::ZERO),
            });
            "restarted"
        }
        NeighborAction::Refresh => {
            if !is_up {
                return Err(format!("{name}: session is not established"));
            }
            st.refresh_in(id, true);
            "reloading"
        }
    };
    if let (true, Some(cmd)) = (primary, cmd) {
        st.send_cmd(id, cmd);
    }
    Ok(ActionResult {
        protocol: name.clone(),
        result: format!("{name}: {result}"),
    })
}

/// A prefix, or an address as its host prefix (/32, /128).
fn parse_prefix(s: &str) -> Result<Prefix, Response> {
    let bad = |e: String| Response::error(ErrorCode::BadRequest, format!("bad prefix {s}: {e}"));
    if !s.contains('/') {
        let a: std::net::IpAddr = s.parse().map_err(|e| bad(format!("{e}")))?;
        let len = if a.is_ipv4() { 32 } else { 128 };
        return Prefix::new(a, len).map_err(|e| bad(format!("{e:?}")));
    }
    s.parse::<Prefix>().map_err(|e| bad(format!("{e:?}")))
}

impl ControlHandler for Control {
    fn handle(&self, req: Request) -> Response {
        let r = match req {
            // Published counts: these never wait for a RIB thread.
            Request::ShowProtocols { all, name } => {
                self.protocols(all, name.as_deref()).map(Data::Protocols)
            }
            Request::ShowNeighbor { addr } => self.protocols(true, None).and_then(|p| {
                let p = query::find_neighbor(p, &addr);
                if p.is_empty() {
                    Err(Response::error(
                        ErrorCode::NotFound,
                        format!("no neighbor {addr}"),
                    ))
                } else {
                    Ok(Data::Protocols(p))
                }
            }),
            Request::ShowRoute {
                prefix,
                all,
                protocol,
                count_only,
                multicast,
                longest_match,
            } => {
                if count_only {
                    self.published().map(|parts| {
                        Data::RouteCount(merge::route_count(
                            parts
                                .iter()
                                .map(|p| {
                                    if multicast {
                                        p.mcast_count.clone()
                                    } else {
                                        p.route_count.clone()
                                    }
                                })
                                .collect(),
                        ))
                    })
                } else {
                    match prefix.as_deref().map(parse_prefix).transpose() {
                        Err(e) => Err(e),
                        Ok(p) => self
                            .call_all(move |st| {
                                let rib = if multicast { &st.mcast } else { &st.rib };
                                match p {
                                    Some(p) if longest_match => query::longest_match_in(
                                        st,
                                        rib,
                                        p,
                                        all,
                                        protocol.as_deref(),
                                    ),
                                    _ => {
                                        query::routes_keyed_in(st, rib, p, all, protocol.as_deref())
                                    }
                                }
                            })
                            .map(|r| {
                                Data::Routes(if longest_match {
                                    merge::longest_match(r)
                                } else {
                                    merge::routes(r)
                                })
                            }),
                    }
                }
            }
            Request::ShowStatus => self.call(|st| st.settings.router_id).map(|router_id| {
                Data::Status(StatusInfo {
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    router_id,
                    server_time_ms: query::unix_ms(SystemTime::now()),
                    started_ms: query::unix_ms(self.started),
                    last_reconfig_ms: None,
                })
            }),
            Request::Neighbor {
                addr_or_name,
                action,
            } => self
                .call_all(move |st| neighbor_action(st, &addr_or_name, action.clone()))
                .and_then(|mut r| {
                    // Every shard has the same peer table: the primary's
                    // answer stands for all.
                    let first = if r.is_empty() {
                        Err("no RIB thread".to_string())
                    } else {
                        r.swap_remove(0)
                    };
                    first.map_err(|m| Response::error(ErrorCode::NotFound, m))
                })
                .map(|a| Data::Action(vec![a])),
            Request::ShowNexthop => self
                .call_all(|st| query::nexthops(st))
                .and_then(|parts| {
                    merge::nexthops(parts).ok_or_else(|| {
                        Response::error(
                            ErrorCode::Unsupported,
                            "next-hop tracking is off (router.next_hop_tracking)",
                        )
                    })
                })
                .map(Data::Nexthops),
            Request::ShowRouteFiltered { protocol, all } => {
                let name = protocol.clone();
                self.call_all(move |st| query::filtered(st, &name, all))
                    .and_then(|parts| {
                        let mut v = Vec::new();
                        for p in parts {
                            match p {
                                None => {
                                    return Err(Response::error(
                                        ErrorCode::NotFound,
                                        format!("no neighbor {protocol}"),
                                    ))
                                }
                                Some(None) => {
                                    return Err(Response::error(
                                        ErrorCode::Unsupported,
                                        format!(
                                            "neighbor {protocol} does not keep the routes its import \
                                             policy rejects: set soft_reconfiguration_inbound = true"
                                        ),
                                    ))
                                }
                                Some(Some(r)) => v.push(r),
                            }
                        }
                        Ok(Data::Routes(merge::routes(v)))
                    })
            }
            Request::ShowRouteExport { protocol, all } => {
                let name = protocol.clone();
                self.call_all(move |st| query::exported(st, &name, all))
                    .and_then(|parts| {
                        let v: Option<Vec<_>> = parts.into_iter().collect();
                        v.map(|v| Data::Routes(merge::routes(v))).ok_or_else(|| {
                            Response::error(ErrorCode::NotFound, format!("no neighbor {protocol}"))
                        })
                    })
            }
            Request::ShowRouteNoexport { protocol, all } => {
                let name = protocol.clone();
                self.call_all(move |st| query::not_exported(st, &name, all))
                    .and_then(|parts| {
                        let v: Option<Vec<_>> = parts.into_iter().collect();
                        v.map(|v| Data::Routes(merge::routes(v))).ok_or_else(|| {
                            Response::error(ErrorCode::NotFound, format!("no neighbor {protocol}"))
                        })
                    })
            }
            Request::ShowRouteDamped => self
                .call_all(|st| query::damped(st))
                .map(|r| Data::Routes(merge::routes(r))),
            Request::ShowBfd => self.bfd_sessions().map(|(s, _)| Data::Bfd(s)),
            Request::ShowBmp => Ok(Data::Bmp(
                self.bmp.as_ref().map(|h| h.info()).unwrap_or_default(),
            )),
            Request::ShowRpki => self.show_rpki(),
            Request::ShowDataplane => self.dataplane().map(|d| Data::Dataplane(Box::new(d))).ok_or_else(|| {
                Response::error(
                    ErrorCode::Unsupported,
                    "no dataplane in this tesserad ([dataplane] absent, or fed to a separate process)",
                )
            }),
            Request::Configure { check } => (self.reload)(check)
                .map(Data::Configure)
                .map_err(|m| Response::error(ErrorCode::Config, m)),
        };
        match r {
            Ok(d) => Response::Ok(d),
            Err(e) => e,
        }
    }
}
