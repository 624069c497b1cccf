//! RPKI at the edge: one tokio task per RTR cache (RFC 8210, the `rpki`
//! crate's client: protocol version 2 proposed, 1 or 0 accepted as the
//! cache answers), and one manager task that feeds what they deliver into
//! the pure [`rov::caches::Selector`] (preference, failover, expiry) and
//! sends each change of the VRP table in use to every RIB part as
//! [`RibMsg::Vrps`]. The RIB parts re-evaluate the routes the changed
//! VRPs cover ([`bgp_core::RibCore::vrp_update`]).
//!
//! Route Origin payloads feed origin validation; ASPA payloads (RTR
//! version 2) feed AS_PATH verification, each change of the ASPAs in use
//! going to every RIB part as [`RibMsg::Aspas`]. Router Keys are ignored.
//! Duplicate announcements and withdrawals of unknown VRPs are
//! tolerated (set semantics) instead of answered with an Error Report.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base::Prefix;
use rov::caches::{CacheState, Delivery, Selector};
use rov::{Aspa, Vrp};
use rpki::rtr::client::{PayloadError, PayloadTarget, PayloadUpdate};
use rpki::rtr::{Action, Client, Payload, Timing};
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::rib::{now, RibMsg};

/// One configured cache.
#[derive(Clone, Debug)]
pub struct CacheConfig {
    /// Address and port.
    pub addr: SocketAddr,
    /// Lower is preferred (RFC 8210 §10).
    pub preference: u8,
    /// Wait before reconnecting after a failure.
    pub retry: Duration,
    /// How long its data outlives its connection.
    pub expire: Duration,
    /// It sends ASPA PDUs in the draft-ietf-sidrops-8210bis-10 layout.
    pub aspa_draft10: bool,
}

/// What `show rpki` shows of one cache.
#[derive(Clone, Debug)]
pub struct CacheStatus {
    /// Address and port.
    pub addr: SocketAddr,
    /// Configured preference.
    pub preference: u8,
    /// idle, connecting, synced or stale.
    pub state: &'static str,
    /// Whether its data is the one in use.
    pub active: bool,
    /// Serial of its last End of Data.
    pub serial: Option<u32>,
    /// Its session id.
    pub session: Option<u16>,
    /// VRPs it holds.
    pub vrps: usize,
    /// The last connection error, if any.
    pub last_error: Option<String>,
}

/// The state `show rpki` reads.
#[derive(Clone, Debug, Default)]
pub struct RpkiStatus {
    /// In configured order.
    pub caches: Vec<CacheStatus>,
    /// IPv4 VRPs in use.
    pub vrps_v4: usize,
    /// IPv6 VRPs in use.
    pub vrps_v6: usize,
    /// ASPAs (customer ASes) in use.
    pub aspas: usize,
}

/// Shared view of the RPKI state.
pub type SharedStatus = Arc<Mutex<RpkiStatus>>;

enum Event {
    Connected(usize),
    Data(usize, Delivery),
    Lost(usize, String),
}

/// One update from the client: the payloads of one cache response.
struct Update {
    reset: bool,
    announce: Vec<Vrp>,
    withdraw: Vec<Vrp>,
    aspa_announce: Vec<Aspa>,
    aspa_withdraw: Vec<u32>,
    /// Read ASPA PDUs in the draft-10 layout ([`rov::from_draft10`]).
    aspa_draft10: bool,
}

impl PayloadUpdate for Update {
    fn push_update(&mut self, action: Action, payload: Payload) -> Result<(), PayloadError> {
        let o = match payload {
            Payload::Origin(o) => o,
            Payload::Aspa(a) => {
                // RFC 8210bis §5.12: an announcement replaces the
                // customer's record; a withdrawal names the customer only.
                let customer = a.customer.into_u32();
                let providers: Vec<u32> = a.providers.iter().map(|p| p.into_u32()).collect();
                let (announce, aspa) = if self.aspa_draft10 {
                    // The announce flag is in the body; one record per
                    // address family, the last one received wins.
                    rov::from_draft10(customer, &providers).ok_or(PayloadError::Corrupt)?
                } else {
                    (action.is_announce(), Aspa::new(customer, providers))
                };
                if announce {
                    self.aspa_announce.push(aspa);
                } else {
                    self.aspa_withdraw.push(aspa.customer);
                }
                return Ok(());
            }
            // Router keys (BGPsec): not used.
            _ => return Ok(()),
        };
        let p = o.prefix.prefix();
        let (addr, len) = p.addr_and_len();
        let prefix = Prefix::new(addr, len).map_err(|_| PayloadError::Corrupt)?;
        let vrp = Vrp::new(prefix, o.prefix.resolved_max_len(), o.asn.into_u32())
            .map_err(|_| PayloadError::Corrupt)?;
        if action.is_announce() {
            self.announce.push(vrp);
        } else {
            self.withdraw.push(vrp);
        }
        Ok(())
    }
}

/// The client's target: keeps the last applied update until the task
/// takes it with the End of Data's serial.
#[derive(Default)]
struct Target {
    done: Option<(Update, Timing)>,
    aspa_draft10: bool,
}

impl PayloadTarget for Target {
    type Update = Update;

    fn start(&mut self, reset: bool) -> Update {
        Update {
            reset,
            announce: Vec::new(),
            withdraw: Vec::new(),
            aspa_announce: Vec::new(),
            aspa_withdraw: Vec::new(),
            aspa_draft10: self.aspa_draft10,
        }
    }

    fn apply(&mut self, update: Update, timing: Timing) -> Result<(), PayloadError> {
        self.done = Some((update, timing));
        Ok(())
    }
}

/// One cache's connection loop: connect, run the RTR client until it
/// fails or the cache closes, wait `retry`, again.
async fn cache_task(i: usize, cfg: CacheConfig, tx: mpsc::UnboundedSender<Event>) {
    loop {
        let err = match tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::TcpStream::connect(cfg.addr),
        )
        .await
        {
            Err(_) => "connect timed out".to_string(),
            Ok(Err(e)) => format!("connect: {e}"),
            Ok(Ok(sock)) => {
                let _ = sock.set_nodelay(true);
                if tx.send(Event::Connected(i)).is_err() {
                    return;
                }
                info!(cache = %cfg.addr, "RTR cache connected");
                let mut client = Client::new(
                    sock,
                    Target {
                        done: None,
                        aspa_draft10: cfg.aspa_draft10,
                    },
                    None,
                );
                loop {
                    if let Err(e) = client.step().await {
                        break if e.kind() == std::io::ErrorKind::UnexpectedEof {
                            "closed by the cache".to_string()
                        } else {
                            format!("{e}")
                        };
                    }
                    let state = client.state();
                    let Some((u, _timing)) = client.target_mut().done.take() else {
                        continue;
                    };
                    let d = Delivery {
                        reset: u.reset,
                        announce: u.announce,
                        withdraw: u.withdraw,
                        serial: state.map_or(0, |s| s.serial().0),
                        session: state.map_or(0, |s| s.session()),
                        // The configured Expire Interval is kept (as BIRD's
                        // `expire keep`): the client reports RFC 8210's
                        // defaults for a version 0 cache, which sends none,
                        // and does not say which version it speaks.
                        expire: None,
                        aspa_announce: u.aspa_announce,
                        aspa_withdraw: u.aspa_withdraw,
                    };
                    if tx.send(Event::Data(i, d)).is_err() {
                        return;
                    }
                }
            }
        };
        warn!(cache = %cfg.addr, error = %err, retry_s = cfg.retry.as_secs(), "RTR cache unavailable");
        if tx.send(Event::Lost(i, err)).is_err() {
            return;
        }
        tokio::time::sleep(cfg.retry).await;
    }
}

fn publish(sel: &Selector, errors: &[Option<String>], status: &SharedStatus) {
    let (v4, v6) = sel.table().len_by_family();
    let Ok(mut s) = status.lock() else {
        return;
    };
    for (i, (out, c)) in s.caches.iter_mut().zip(sel.caches()).enumerate() {
        out.state = c.state.as_str();
        out.active = sel.active() == Some(i);
        out.serial = c.serial;
        out.session = c.session;
        out.vrps = c.vrps.len();
        out.last_error = errors.get(i).cloned().flatten();
    }
    s.vrps_v4 = v4;
    s.vrps_v6 = v6;
    s.aspas = sel.aspa().len();
}

/// Starts the cache tasks and the manager on `rt`; VRP changes go to
/// `parts` (every RIB part's channel). Returns the status `show rpki`
/// reads.
pub fn spawn(
    rt: &tokio::runtime::Handle,
    caches: Vec<CacheConfig>,
    parts: Vec<mpsc::Sender<RibMsg>>,
) -> SharedStatus {
    let status: SharedStatus = Arc::new(Mutex::new(RpkiStatus {
        caches: caches
            .iter()
            .map(|c| CacheStatus {
                addr: c.addr,
                preference: c.preference,
                state: CacheState::Idle.as_str(),
                active: false,
                serial: None,
                session: None,
                vrps: 0,
                last_error: None,
            })
            .collect(),
        ..Default::default()
    }));
    let (tx, mut rx) = mpsc::unbounded_channel();
    for (i, c) in caches.iter().enumerate() {
        rt.spawn(cache_task(i, c.clone(), tx.clone()));
    }
    drop(tx);
    let mut sel = Selector::new(caches.iter().map(|c| (c.preference, c.expire)));
    let mut errors: Vec<Option<String>> = vec![None; caches.len()];
    let st = status.clone();
    rt.spawn(async move {
        loop {
            let deadline = sel.next_deadline();
            let ev = match deadline {
                Some(d) => {
                    let wait = d.since(now());
                    tokio::select! {
                        e = rx.recv() => e,
                        () = tokio::time::sleep(wait) => {
                            let ch = sel.expire(now());
                            send(&mut sel, ch, &parts).await;
                            publish(&sel, &errors, &st);
                            continue;
                        }
                    }
                }
                None => rx.recv().await,
            };
            let Some(ev) = ev else {
                return;
            };
            let ch = match ev {
                Event::Connected(i) => {
                    sel.connected(i);
                    Vec::new()
                }
                Event::Data(i, d) => {
                    if let Some(e) = errors.get_mut(i) {
                        *e = None;
                    }
                    sel.deliver(i, d, now())
                }
                Event::Lost(i, err) => {
                    if let Some(e) = errors.get_mut(i) {
                        *e = Some(err);
                    }
                    sel.lost(i, now())
                }
            };
            send(&mut sel, ch, &parts).await;
            publish(&sel, &errors, &st);
        }
    });
    status
}

/// Sends the table in use and the changed VRP prefixes to every RIB part.
async fn send(sel: &mut Selector, changed: Vec<Prefix>, parts: &[mpsc::Sender<RibMsg>]) {
    let customers = sel.take_aspa_changes();
    if !customers.is_empty() {
        info!(
            aspas = sel.aspa().len(),
            changed = customers.len(),
            "RPKI ASPA set changed"
        );
        let table = Arc::new(sel.aspa().clone());
        let customers = Arc::new(customers);
        for p in parts {
            let _ = p
                .send(RibMsg::Aspas(table.clone(), customers.clone()))
                .await;
        }
    }
    if changed.is_empty() {
        return;
    }
    let (v4, v6) = sel.table().len_by_family();
    info!(
        vrps_v4 = v4,
        vrps_v6 = v6,
        changed = changed.len(),
        "RPKI VRP set changed"
    );
    let table = Arc::new(sel.table().clone());
    let changed = Arc::new(changed);
    for p in parts {
        let _ = p.send(RibMsg::Vrps(table.clone(), changed.clone())).await;
    }
}
