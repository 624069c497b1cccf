//! Session tasks: one tokio task per neighbour drives the pure
//! [`bgp_fsm::Fsm`] with socket events and timer deadlines, performs its
//! actions, decodes UPDATEs (RFC 7606 applied) and hands them to the RIB
//! thread in batches. Reading and writing run in their own tasks
//! ([`io`]), so neither RIB work nor a large UPDATE backlog can delay a
//! keepalive.

pub mod io;
pub mod listener;
pub mod md5;
mod recv;
pub mod ttl;

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base::{Asn, Instant as FsmInstant};
use bgp_fsm::{
    collision, Action, DownReason, Event, Fsm, Jitter, Negotiated, SessionConfig, State,
};
use bgp_rib::PeerId;
use bgp_wire::consts::notify;
use bgp_wire::{encode_keepalive, NotificationMessage, NotificationView, ParseCtx, RouteRefresh};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::mrt_dump::{MrtPeer, MrtSink};
use crate::msg::{DecodedUpdate, PeerStatus, RibInput, RibTx, SessionCmd, SessionUp, WriterSlot};
pub use listener::{listen, Registry};

/// UPDATEs per batch handed to the RIB.
const BATCH: usize = 256;
/// Wait before an automatic restart after an error (BIRD's "error wait").
const RESTART_DELAY: Duration = Duration::from_secs(5);
/// Outgoing connection attempts give up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything a session needs to know about its neighbour.
#[derive(Clone, Debug)]
pub struct SessionParams {
    pub peer: PeerId,
    pub name: String,
    pub remote: SocketAddr,
    pub local: Option<IpAddr>,
    pub fsm: SessionConfig,
    pub md5_password: Option<String>,
    /// IP TTL / hop limit of our packets (eBGP multihop); `None`: the
    /// system default.
    pub ttl: Option<u8>,
    /// GTSM (RFC 5082) with the peer at most this many hops away: send
    /// with TTL 255, drop what arrives with less than 256 - hops. `None`:
    /// off. Not combined with `ttl` (the configuration refuses both).
    pub ttl_security: Option<u8>,
    /// Start at once (false: administratively down until `Start`).
    pub start: bool,
    /// Where the peer stands in our confederation (RFC 5065 §5 AS_PATH
    /// checks); a peer in another member AS is decoded as internal.
    pub confed: bgp_wire::ConfedSender,
}

/// What the daemon keeps of a session task. The task ends when every
/// clone of `cmd` is dropped (abruptly: no NOTIFICATION, no `Down`); use
/// [`SessionCmd::Terminate`] for an orderly end.
#[derive(Clone, Debug)]
pub struct SessionHandle {
    pub peer: PeerId,
    pub cmd: UnboundedSender<SessionCmd>,
    pub status: Arc<PeerStatus>,
    /// The writer queue of the Established connection, for the RIB.
    pub writer: Arc<WriterSlot>,
}

impl SessionHandle {
    /// How the RIB reaches this session.
    pub fn link(&self) -> crate::rib::SessionLink {
        crate::rib::SessionLink {
            cmd: self.cmd.clone(),
            writer: self.writer.clone(),
        }
    }
}

/// Starts the task of one neighbour and registers it with the listener.
pub fn spawn_session(
    rt: &tokio::runtime::Handle,
    p: SessionParams,
    rib: RibTx,
    registry: &Registry,
    mrt: Option<MrtSink>,
) -> SessionHandle {
    spawn_session_with(rt, p, rib, registry, mrt, None)
}

/// [`spawn_session`], also reporting to BMP (`[bmp]`): Peer Up/Down and
/// every UPDATE as received.
pub fn spawn_session_with(
    rt: &tokio::runtime::Handle,
    p: SessionParams,
    rib: RibTx,
    registry: &Registry,
    mrt: Option<MrtSink>,
    bmp: Option<crate::bmp::BmpHub>,
) -> SessionHandle {
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    registry.register(
        listener::canonical(p.remote.ip()),
        in_tx.clone(),
        p.md5_password.clone(),
    );
    let status = Arc::new(PeerStatus::default());
    let writer = Arc::new(WriterSlot::default());
    let handle = SessionHandle {
        peer: p.peer,
        cmd: cmd_tx,
        status: status.clone(),
        writer: writer.clone(),
    };
    let per_peer = rib.is_per_peer();
    let name = format!("peer-{}", p.peer.0);
    let mut s = Session::new(p, rib, status, registry.clone(), mrt, in_tx.clone());
    s.writer = writer;
    s.bmp = bmp.map(|hub| Box::new(BmpTap::new(hub)));
    let task = s.run(cmd_rx, in_rx);
    if !per_peer {
        rt.spawn(task);
        return handle;
    }
    // `per-peer` (PBTS): the session, its reader and writer run on a thread
    // of their own, with their own runtime and so their own socket
    // readiness; the session applies its input to the RIB there.
    let spawned = std::thread::Builder::new().name(name).spawn(move || {
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(own) => own.block_on(task),
            Err(e) => warn!("cannot start a session runtime: {e}"),
        }
    });
    if let Err(e) = spawned {
        warn!("cannot start a session thread: {e}");
    }
    handle
}

struct Conn {
    frames: mpsc::Receiver<io::ReadEvent>,
    urgent: UnboundedSender<io::WriteMsg>,
    bulk: UnboundedSender<bytes::Bytes>,
    local: SocketAddr,
    remote: SocketAddr,
    outgoing: bool,
    reader: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.reader.abort();
        let _ = self.urgent.send(io::WriteMsg::Close);
    }
}

struct Session {
    p: SessionParams,
    fsm: Fsm,
    rib: RibTx,
    status: Arc<PeerStatus>,
    /// Published while Established: the RIB writes UPDATEs through it.
    writer: Arc<WriterSlot>,
    registry: Registry,
    origin: tokio::time::Instant,
    rng: u64,
    conn: Option<Conn>,
    /// An incoming connection that collided with `conn` (§6.8), kept until
    /// the collision can be resolved on the peer's BGP Identifier.
    pending: Option<TcpStream>,
    connecting: Option<JoinHandle<std::io::Result<TcpStream>>>,
    restart_at: Option<tokio::time::Instant>,
    admin_down: bool,
    negotiated: Option<Negotiated>,
    ctx: ParseCtx,
    /// What next-hop checks need of the Established connection.
    rx: bgp_core::decode::Receiver,
    batch: Vec<DecodedUpdate>,
    /// `worker-pool` with per-worker streams: UPDATE bodies not parsed
    /// here (the workers parse them), and the Established connection's
    /// link for the workers' verdicts.
    raw: Vec<bytes::Bytes>,
    stream: Option<Arc<crate::msg::StreamLink>>,
    /// Where workers report an UPDATE that resets the session.
    reset_tx: UnboundedSender<(u64, Event)>,
    reset_rx: Option<UnboundedReceiver<(u64, Event)>>,
    actions: Vec<Action>,
    terminate: bool,
    mrt: Option<MrtSink>,
    /// BMP (`[bmp]`): what Peer Up and Peer Down need of this session.
    pub(super) bmp: Option<Box<BmpTap>>,
    /// Our registration with the listener (to unregister only ourselves).
    inbound: UnboundedSender<TcpStream>,
}

/// A session's BMP reporting: the OPENs of the connection (Peer Up, RFC
/// 7854 §4.10) and the NOTIFICATIONs that ended it (Peer Down, §4.9).
pub(super) struct BmpTap {
    pub hub: crate::bmp::BmpHub,
    pub sent_open: Vec<u8>,
    pub received_open: Vec<u8>,
    pub notification_sent: Option<Vec<u8>>,
    pub notification_received: Option<Vec<u8>>,
}

impl BmpTap {
    fn new(hub: crate::bmp::BmpHub) -> BmpTap {
        BmpTap {
            hub,
            sent_open: Vec::new(),
            received_open: Vec::new(),
            notification_sent: None,
            notification_received: None,
        }
    }

    /// Peer Down with the reason RFC 7854 §4.9 gives `reason`.
    fn down(&mut self, peer: IpAddr, reason: DownReason) {
        use ::bmp::encode::DownReason as R;
        let sent = self.notification_sent.take();
        let received = self.notification_received.take();
        let r = match (reason, &received, &sent) {
            (DownReason::NotificationReceived { .. }, Some(n), _) => R::RemoteNotification(n),
            (DownReason::TcpConnectionFails, _, _) => R::RemoteNoData,
            (_, _, Some(n)) => R::LocalNotification(n),
            // RFC 4271 §8.1 event numbers.
            (DownReason::ManualStop, _, _) => R::LocalNoNotification(2),
            (DownReason::AutomaticStop, _, _) => R::LocalNoNotification(8),
            (DownReason::HoldTimerExpired, _, _) => R::LocalNoNotification(10),
            _ => R::LocalNoNotification(8),
        };
        self.hub.peer_down(peer, r);
    }
}

/// Whether an Established session that ended for `reason` keeps its
/// routes as stale (graceful restart negotiated). RFC 4724 §4.2: only an
/// unexpected end of the TCP session. RFC 8538 §4 (N bit): also every
/// NOTIFICATION sent or received, except Cease/Hard Reset (6/9) — and the
/// Hold Timer expiring. Administrative stops flush: we decided to drop
/// the peer.
fn graceful_down(reason: DownReason, n_bit: bool) -> bool {
    match reason {
        DownReason::TcpConnectionFails => true,
        DownReason::ManualStop | DownReason::AutomaticStop => false,
        DownReason::NotificationReceived { code, subcode }
        | DownReason::MessageError { code, subcode } => {
            n_bit && !(code == notify::CEASE && subcode == notify::HARD_RESET)
        }
        DownReason::HoldTimerExpired | DownReason::CollisionDump | DownReason::FsmError(_) => n_bit,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn encode_notification(n: &NotificationMessage) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = n.encode(ParseCtx::legacy(), &mut out);
    out
}

fn describe_notification(n: &NotificationView<'_>) -> String {
    let mut s = format!("NOTIFICATION {}/{}", n.code, n.subcode);
    match n.shutdown_communication() {
        Some(Ok(text)) => s.push_str(&format!(" \"{text}\"")),
        Some(Err(e)) => {
            // Show what came, so a peer's malformed RFC 9003 text is
            // visible rather than silently dropped.
            let shown = String::from_utf8_lossy(n.data.get(..n.data.len().min(256)).unwrap_or(&[]));
            s.push_str(&format!(
                " (malformed shutdown communication {e:?}: {shown:?})"
            ));
        }
        None => {}
    }
    s
}

async fn connect(
    remote: SocketAddr,
    local: Option<IpAddr>,
    md5: Option<String>,
    hops: ttl::HopLimits,
) -> std::io::Result<TcpStream> {
    let s = if remote.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    if let Some(key) = md5.as_deref() {
        md5::set_md5(s.as_raw_fd(), remote.ip(), key.as_bytes())?;
    }
    if let Some(l) = local {
        s.bind(SocketAddr::new(l, 0))?;
    }
    hops.apply(&s, remote.is_ipv6())?;
    match tokio::time::timeout(CONNECT_TIMEOUT, s.connect(remote)).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "connect timed out",
        )),
    }
}

impl Session {
    fn new(
        p: SessionParams,
        rib: RibTx,
        status: Arc<PeerStatus>,
        registry: Registry,
        mrt: Option<MrtSink>,
        inbound: UnboundedSender<TcpStream>,
    ) -> Session {
        let seed = u64::from(p.peer.0).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ unix_now();
        let (reset_tx, reset_rx) = mpsc::unbounded_channel();
        Session {
            fsm: Fsm::new(p.fsm.clone()),
            admin_down: !p.start,
            p,
            rib,
            status,
            writer: Arc::default(),
            registry,
            origin: tokio::time::Instant::now(),
            rng: seed | 1,
            conn: None,
            pending: None,
            connecting: None,
            restart_at: None,
            negotiated: None,
            ctx: ParseCtx::legacy(),
            rx: bgp_core::decode::Receiver::default(),
            batch: Vec::new(),
            raw: Vec::new(),
            stream: None,
            reset_tx,
            reset_rx: Some(reset_rx),
            actions: Vec::new(),
            terminate: false,
            mrt,
            bmp: None,
            inbound,
        }
    }

    /// The session as MRT records it: the connection's addresses when
    /// there is one, else the configured ones.
    fn mrt_peer(&self) -> MrtPeer {
        let peer_as = self
            .fsm
            .negotiated()
            .map(|n| n.peer_asn)
            .or(self.p.fsm.peer_asn)
            .unwrap_or(Asn(0));
        let (peer_ip, local_ip) = match self.conn.as_ref() {
            Some(c) => (c.remote.ip(), c.local.ip()),
            None => {
                let r = self.p.remote.ip();
                let unspec = if r.is_ipv4() {
                    IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
                } else {
                    IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
                };
                (r, self.p.local.unwrap_or(unspec))
            }
        };
        MrtPeer {
            peer_as,
            local_as: self.p.fsm.local_asn,
            peer_ip: listener::canonical(peer_ip),
            local_ip: listener::canonical(local_ip),
        }
    }

    fn now(&self) -> FsmInstant {
        FsmInstant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// RFC 4271 §10 jitter from a xorshift generator.
    fn jitter(&mut self) -> Jitter {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        Jitter::new((self.rng >> 32) as u16)
    }

    fn deadline(&self) -> Option<tokio::time::Instant> {
        let fsm = self
            .fsm
            .next_deadline()
            .map(|d| self.origin + Duration::from_nanos(d.as_nanos()));
        match (fsm, self.restart_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    async fn run(
        mut self,
        mut cmd_rx: UnboundedReceiver<SessionCmd>,
        mut in_rx: UnboundedReceiver<TcpStream>,
    ) {
        if !self.admin_down {
            let ev = self.fsm.start_event(true);
            self.drive(ev).await;
        }
        let mut reset_rx = self.reset_rx.take();
        while !self.terminate {
            let deadline = self.deadline();
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            let connecting = async {
                match self.connecting.as_mut() {
                    Some(h) => h.await,
                    None => std::future::pending().await,
                }
            };
            // A full batch the RIB has not taken yet stops reading (TCP
            // back-pressure to the peer); timers and commands go on.
            let blocked = self.batch.len() + self.raw.len() >= BATCH;
            let frame = async {
                match self.conn.as_mut() {
                    Some(c) if !blocked => c.frames.recv().await,
                    _ => std::future::pending().await,
                }
            };
            // A colliding connection while ours waits for the peer's OPEN
            // (OpenSent): read the peer's BGP Identifier from the OPEN it
            // sent there, without taking it off the socket, so that §6.8
            // can be decided now. Waiting for an OPEN on our own connection
            // instead deadlocks when both speakers connected at once: each
            // side's OPEN sits unread in the other's colliding connection.
            let peek = match (&self.pending, self.fsm.state()) {
                (Some(s), State::OpenSent) => Some(s),
                _ => None,
            };
            let pending_open = async move {
                match peek {
                    Some(s) => peek_open(s).await,
                    None => std::future::pending().await,
                }
            };
            let queued = !self.batch.is_empty() || !self.raw.is_empty();
            let rib = queued.then(|| self.rib.clone());
            let resets = async {
                match reset_rx.as_mut() {
                    Some(r) => r.recv().await,
                    None => std::future::pending().await,
                }
            };
            let rib_ready = async move {
                match rib {
                    Some(tx) => tx.reserve().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                c = cmd_rx.recv() => match c {
                    Some(c) => self.on_cmd(c).await,
                    None => break,
                },
                s = in_rx.recv() => {
                    if let Some(s) = s {
                        self.on_incoming(s).await;
                    }
                }
                r = connecting => {
                    self.connecting = None;
                    self.on_connected(r).await;
                }
                p = rib_ready => {
                    if let Some(p) = p {
                        match self.take_raw() {
                            Some(raw) => p.send_raw(self.p.peer, raw),
                            None => p.send_updates(self.p.peer, std::mem::take(&mut self.batch)),
                        }
                    }
                }
                r = resets => match r {
                    Some((session, ev)) => self.on_worker_reset(session, ev).await,
                    None => reset_rx = None,
                },
                f = frame => {
                    self.on_frame(f).await;
                    // Take what else is ready before handing the batch over.
                    for _ in 0..4 * BATCH {
                        if self.queued() >= BATCH {
                            break;
                        }
                        let Some(c) = self.conn.as_mut() else { break };
                        match c.frames.try_recv() {
                            Ok(f) => self.on_frame(Some(f)).await,
                            Err(_) => break,
                        }
                    }
                    self.try_flush();
                }
                _ = sleep => self.on_deadline().await,
                o = pending_open => self.on_pending_open(o).await,
            }
        }
        self.registry
            .unregister_if(listener::canonical(self.p.remote.ip()), &self.inbound);
    }

    async fn on_deadline(&mut self) {
        // RIB back-pressure stops us reading, not the peer talking: while
        // its messages wait in the reader's queue the peer is alive, and
        // RFC 4271 §8.2.2 restarts the HoldTimer on each of them anyway.
        if self.fsm.state() == State::Established
            && self.queued() > 0
            && self.conn.as_ref().is_some_and(|c| !c.frames.is_empty())
        {
            self.drive(Event::KeepAliveMsg).await;
        }
        if self
            .restart_at
            .is_some_and(|t| t <= tokio::time::Instant::now())
        {
            self.restart_at = None;
            if !self.admin_down && self.fsm.state() == State::Idle {
                let ev = self.fsm.start_event(false);
                self.drive(ev).await;
            }
        }
        let now = self.now();
        let j = self.jitter();
        let mut out = std::mem::take(&mut self.actions);
        self.fsm.on_timer(now, j, &mut out);
        self.perform(&mut out).await;
        self.actions = out;
    }

    async fn on_cmd(&mut self, c: SessionCmd) {
        match c {
            SessionCmd::Send(buf) => match self.conn.as_ref() {
                Some(conn) if self.fsm.state() == State::Established => {
                    if let Err(e) = conn.bulk.send(bytes::Bytes::from(buf)) {
                        // The writer has ended (and counted what it had).
                        self.status.unqueue(e.0.len() as u64);
                    }
                }
                _ => {
                    // Session gone since the RIB encoded this: drop it.
                    self.status.unqueue(buf.len() as u64);
                }
            },
            SessionCmd::SendRouteRefresh { family } => {
                if self.fsm.state() == State::Established
                    && self.negotiated.as_ref().is_some_and(|n| n.route_refresh)
                {
                    let rr = RouteRefresh {
                        afi: family.afi,
                        safi: family.safi,
                        subtype: 0,
                    };
                    let mut out = Vec::new();
                    if rr.encode(self.ctx, &mut out).is_ok() {
                        self.send_urgent(out);
                        self.status.refreshes_out.fetch_add(1, Ordering::Relaxed);
                        self.status.msgs_out.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            SessionCmd::Stop {
                notification,
                restart_after,
            } => {
                self.stop(notification).await;
                match restart_after {
                    Some(d) => {
                        self.admin_down = false;
                        self.restart_at = Some(tokio::time::Instant::now() + d);
                    }
                    None => self.admin_down = true,
                }
            }
            SessionCmd::Start => {
                self.admin_down = false;
                self.restart_at = None;
                if self.fsm.state() == State::Idle {
                    let ev = self.fsm.start_event(true);
                    self.drive(ev).await;
                }
            }
            SessionCmd::Terminate { notification } => {
                self.stop(notification).await;
                self.terminate = true;
            }
        }
    }

    /// Administrative stop (event 2) with our NOTIFICATION instead of the
    /// FSM's plain Cease.
    async fn stop(&mut self, n: NotificationMessage) {
        if self.conn.is_some()
            && matches!(
                self.fsm.state(),
                State::OpenSent | State::OpenConfirm | State::Established
            )
        {
            self.send_urgent(encode_notification(&n));
            self.status
                .notifications_out
                .fetch_add(1, Ordering::Relaxed);
            self.status.msgs_out.fetch_add(1, Ordering::Relaxed);
            self.status
                .set_last_error(format!("sent {}", describe_notification(&n.view())));
        }
        let now = self.now();
        let j = self.jitter();
        let mut out = std::mem::take(&mut self.actions);
        self.fsm.handle(now, j, Event::ManualStop, &mut out);
        // Our NOTIFICATION is already queued; skip the FSM's own.
        out.retain(|a| !matches!(a, Action::SendNotification(_)));
        self.perform(&mut out).await;
        self.actions = out;
        self.pending = None;
    }

    /// The TTL settings of this session's sockets.
    fn hop_limits(&self) -> ttl::HopLimits {
        ttl::HopLimits {
            ttl: self.p.ttl,
            gtsm_hops: self.p.ttl_security,
        }
    }

    async fn on_incoming(&mut self, s: TcpStream) {
        if self.admin_down || self.terminate {
            return;
        }
        // Accepted connections get the TTL settings of outgoing ones:
        // `ttl` for what we send, GTSM's minimum for what we receive (the
        // peer's OPEN onwards; the handshake itself was the listener's).
        if let Err(e) = self.hop_limits().apply(&s, self.p.remote.is_ipv6()) {
            warn!(peer = %self.p.name, "cannot set the TTL of an accepted connection, closed: {e}");
            return;
        }
        let state = self.fsm.state();
        if self.conn.is_none() && matches!(state, State::Connect | State::Active | State::Idle) {
            if state == State::Idle {
                // A peer connecting to an idle (not administratively down)
                // session: start at once on this connection. A damped
                // automatic start would sit in IdleHold and drop it, and
                // two speakers backing off that way can miss each other
                // for minutes; the peer is evidently ready now.
                self.restart_at = None;
                let ev = self.fsm.start_event(true);
                self.drive(ev).await;
                if self.fsm.state() == State::Idle {
                    return;
                }
            }
            if let Some(h) = self.connecting.take() {
                h.abort();
            }
            if self.attach(s, false) {
                self.drive(Event::TcpConnectionConfirmed).await;
            }
        } else if state == State::Established {
            // §6.8: a connection colliding with an Established session is
            // closed (CollisionDetectEstablishedState is off).
            debug!(peer = %self.p.name, "incoming connection while Established: closed");
        } else {
            self.pending = Some(s);
            if state == State::OpenConfirm {
                // The peer's BGP Identifier is already known (§6.8).
                self.resolve_collision().await;
            }
        }
    }

    async fn on_connected(
        &mut self,
        r: Result<std::io::Result<TcpStream>, tokio::task::JoinError>,
    ) {
        match r {
            Ok(Ok(s)) => {
                if self.conn.is_some() {
                    return;
                }
                if self.attach(s, true) {
                    self.drive(Event::TcpCrAcked).await;
                } else {
                    self.drive(Event::TcpConnectionFails).await;
                }
            }
            Ok(Err(e)) => {
                debug!(peer = %self.p.name, "connect failed: {e}");
                // A NOTIFICATION explains more than the reconnect
                // attempts that follow it; keep it (BIRD does the same).
                if !self.status.last_error().contains("NOTIFICATION") {
                    self.status.set_last_error(format!("Socket: {e}"));
                }
                self.drive(Event::TcpConnectionFails).await;
            }
            Err(_) => {}
        }
    }

    fn attach(&mut self, s: TcpStream, outgoing: bool) -> bool {
        let (Ok(local), Ok(remote)) = (s.local_addr(), s.peer_addr()) else {
            return false;
        };
        // `per-peer`: an accepted connection was registered with the
        // listener's runtime; move it to this session's own one.
        let s = if !outgoing && self.rib.is_per_peer() {
            match s.into_std().and_then(TcpStream::from_std) {
                Ok(s) => s,
                Err(_) => return false,
            }
        } else {
            s
        };
        let _ = s.set_nodelay(true);
        let (rd, wr) = s.into_split();
        let (ftx, frx) = mpsc::channel(1024);
        let (utx, urx) = mpsc::unbounded_channel();
        let (btx, brx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(io::reader(rd, ftx));
        tokio::spawn(io::writer(
            wr,
            urx,
            brx,
            self.status.clone(),
            self.registry.drained(),
        ));
        self.conn = Some(Conn {
            frames: frx,
            urgent: utx,
            bulk: btx,
            local,
            remote,
            outgoing,
            reader,
        });
        true
    }

    fn send_urgent(&self, b: Vec<u8>) {
        if let Some(c) = self.conn.as_ref() {
            let _ = c.urgent.send(io::WriteMsg::Urgent(b));
        }
    }

    async fn drive(&mut self, ev: Event) {
        let now = self.now();
        let j = self.jitter();
        let mut out = std::mem::take(&mut self.actions);
        self.fsm.handle(now, j, ev, &mut out);
        self.perform(&mut out).await;
        self.actions = out;
    }

    async fn perform(&mut self, out: &mut Vec<Action>) {
        // The FSM is already in its new state: publish it before acting,
        // so whoever sees `RibInput::Up` also sees Established.
        let before = self.status.state();
        let s = self.fsm.state() as u8;
        if s != before && s != crate::msg::state::ESTABLISHED {
            // Whatever the RIB still hands over for the old session is
            // dropped (and uncounted) by the slot from now on.
            self.writer.withdraw();
        }
        if s != before {
            if let Some(m) = self.mrt.as_ref() {
                m.state_change(&self.mrt_peer(), before, s);
            }
            self.status.state.store(s, Ordering::Relaxed);
            self.status.state_since.store(unix_now(), Ordering::Relaxed);
        }
        for a in out.drain(..) {
            match a {
                Action::InitiateTcpConnection => {
                    if self.connecting.is_none() && self.conn.is_none() {
                        let (r, l, m, t) = (
                            self.p.remote,
                            self.p.local,
                            self.p.md5_password.clone(),
                            self.hop_limits(),
                        );
                        self.connecting = Some(tokio::spawn(connect(r, l, m, t)));
                    }
                }
                Action::DropTcpConnection => {
                    if let Some(h) = self.connecting.take() {
                        h.abort();
                    }
                    // The writer subtracts whatever it leaves unsent.
                    self.writer.withdraw();
                    self.conn = None;
                }
                Action::SendOpen => {
                    let mut b = Vec::new();
                    if self
                        .fsm
                        .open_message()
                        .encode(ParseCtx::legacy(), &mut b)
                        .is_ok()
                    {
                        if let Some(t) = self.bmp.as_mut() {
                            t.sent_open.clone_from(&b);
                        }
                        self.send_urgent(b);
                        self.status.opens_out.fetch_add(1, Ordering::Relaxed);
                        self.status.msgs_out.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Action::SendKeepalive => {
                    let mut b = Vec::with_capacity(19);
                    if encode_keepalive(self.ctx, &mut b).is_ok() {
                        self.send_urgent(b);
                        self.status.keepalives_out.fetch_add(1, Ordering::Relaxed);
                        self.status.msgs_out.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Action::SendNotification(n) => {
                    warn!(peer = %self.p.name, code = n.code, subcode = n.subcode, "sending NOTIFICATION");
                    self.status
                        .set_last_error(format!("sent {}", describe_notification(&n.view())));
                    let b = encode_notification(&n);
                    if let Some(t) = self.bmp.as_mut() {
                        t.notification_sent = Some(b.clone());
                    }
                    self.send_urgent(b);
                    self.status
                        .notifications_out
                        .fetch_add(1, Ordering::Relaxed);
                    self.status.msgs_out.fetch_add(1, Ordering::Relaxed);
                }
                Action::SessionEstablished(n) => self.established(*n).await,
                Action::SessionDown(reason) => self.down(reason).await,
                Action::ProcessUpdate => {}
            }
        }
        if s != before && self.fsm.state() == State::Idle {
            self.conn = None;
            self.stream = None;
            self.raw.clear();
            self.negotiated = None;
            self.ctx = ParseCtx::legacy();
            if let Some(s) = self.pending.take() {
                // The surviving side of a collision, or a connection
                // that arrived while the old one was failing.
                if !self.admin_down && !self.terminate {
                    Box::pin(self.on_incoming(s)).await;
                    return;
                }
            }
            if !self.admin_down && !self.terminate && self.restart_at.is_none() {
                self.restart_at = Some(tokio::time::Instant::now() + RESTART_DELAY);
            }
        }
    }

    async fn established(&mut self, n: Negotiated) {
        let Some(c) = self.conn.as_ref() else {
            return;
        };
        info!(peer = %self.p.name, remote = %c.remote, "Established");
        // A pending colliding connection loses to an Established one.
        self.pending = None;
        self.ctx = n.parse_ctx();
        let session = self
            .status
            .established_count
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        self.status.set_last_error(String::new());
        // A new session gets its own max-prefix verdict; reset before the
        // RIB hears of it.
        self.status
            .max_prefix_tripped
            .store(false, Ordering::Relaxed);
        self.status
            .max_prefix_warned
            .store(false, Ordering::Relaxed);
        let link = crate::rib::ifaddr::link_addrs(c.local.ip());
        self.rx = bgp_core::decode::Receiver {
            // Confederation members are decoded as internal (RFC 5065).
            ebgp: !self.p.fsm.is_ibgp() && self.p.confed != bgp_wire::ConfedSender::OtherMemberAs,
            confed: self.p.confed,
            own: link,
            on_link: crate::rib::ifaddr::on_link(c.remote.ip()),
        };
        let up = SessionUp {
            negotiated: n.clone(),
            local_addr: c.local,
            remote_addr: c.remote,
            eor_barrier: None,
            since: std::time::SystemTime::now(),
            session,
            link,
        };
        // Before the RIB hears of the session: its first flush goes
        // straight to this connection's writer.
        self.writer.publish(session, c.bulk.clone());
        self.raw.clear();
        self.stream = self.rib.parses_raw().then(|| {
            crate::msg::StreamLink::new(
                session,
                self.p.name.clone(),
                self.status.clone(),
                self.reset_tx.clone(),
            )
        });
        self.negotiated = Some(n);
        if let Some(t) = self.bmp.as_mut() {
            t.notification_sent = None;
            t.notification_received = None;
            t.hub.peer_up(&up, &t.sent_open, &t.received_open);
        }
        self.rib
            .send(RibInput::Up {
                peer: self.p.peer,
                up: Box::new(up),
            })
            .await;
    }

    async fn down(&mut self, reason: DownReason) {
        self.flush_batch().await;
        let graceful = self
            .negotiated
            .as_ref()
            .and_then(|n| n.graceful_restart.as_ref())
            .is_some_and(|gr| graceful_down(reason, gr.notification));
        info!(peer = %self.p.name, ?reason, "session down");
        let peer = self.p.remote.ip();
        if let Some(t) = self.bmp.as_mut() {
            t.down(peer, reason);
        }
        self.rib
            .send(RibInput::Down {
                peer: self.p.peer,
                reason,
                graceful,
                at: std::time::SystemTime::now(),
            })
            .await;
    }

    /// Hands the batch to the RIB if its queue has room; otherwise keeps
    /// it (the main loop then waits for room without blocking timers).
    fn try_flush(&mut self) {
        if let Some(raw) = self.take_raw() {
            if let Err(raw) = self.rib.try_send_raw(self.p.peer, raw) {
                self.raw = raw.bodies;
            }
            return;
        }
        if self.batch.is_empty() {
            return;
        }
        let updates = std::mem::take(&mut self.batch);
        if let Err(updates) = self.rib.try_send_updates(self.p.peer, updates) {
            self.batch = updates;
        }
    }

    /// Hands the batch over, waiting for room: only where order matters
    /// and the session is about to change anyway (ROUTE-REFRESH, reset,
    /// down).
    async fn flush_batch(&mut self) {
        if let Some(raw) = self.take_raw() {
            self.rib.send_raw(self.p.peer, raw).await;
            return;
        }
        if self.batch.is_empty() {
            return;
        }
        let updates = std::mem::take(&mut self.batch);
        self.rib
            .send(RibInput::Updates {
                peer: self.p.peer,
                updates,
            })
            .await;
    }

    /// UPDATEs received and not handed to the RIB yet.
    fn queued(&self) -> usize {
        self.batch.len() + self.raw.len()
    }

    /// The unparsed bodies as one batch for the workers, if any.
    fn take_raw(&mut self) -> Option<crate::msg::RawUpdates> {
        if self.raw.is_empty() {
            return None;
        }
        let link = self.stream.clone()?;
        Some(crate::msg::RawUpdates {
            bodies: std::mem::take(&mut self.raw),
            ctx: self.ctx,
            rx: self.rx,
            link,
        })
    }

    /// A worker found an UPDATE of session `session` that resets it (RFC
    /// 4271 §6.3, RFC 7606 §3): drive that event, as parsing here would
    /// have. What was read after it is dropped (workers drop the batches
    /// after it, see `striped`).
    async fn on_worker_reset(&mut self, session: u64, ev: Event) {
        if self.stream.as_ref().is_none_or(|l| l.session != session)
            || self.fsm.state() != State::Established
        {
            return;
        }
        self.raw.clear();
        self.drive(ev).await;
    }

    /// The peer's OPEN has arrived on the colliding connection while ours
    /// is in OpenSent (`peek_open`): resolve the collision (§6.8) with its
    /// BGP Identifier. Keeping ours closes the colliding connection;
    /// keeping the peer's dumps ours, and the Idle transition then takes up
    /// the colliding connection, whose OPEN is still unread on the socket.
    async fn on_pending_open(&mut self, open: Option<(std::net::Ipv4Addr, Asn)>) {
        let (Some((peer_id, peer_asn)), Some(c)) = (open, self.conn.as_ref()) else {
            // Closed, not an OPEN, or too slow: forget that connection.
            self.pending = None;
            return;
        };
        let cfg = self.fsm.config();
        if collision::keeps(c.outgoing, cfg.bgp_id, cfg.local_asn, peer_id, peer_asn) {
            debug!(peer = %self.p.name, "connection collision in OpenSent: keeping ours");
            self.pending = None;
        } else {
            info!(peer = %self.p.name, "connection collision in OpenSent: keeping the peer's connection");
            self.drive(Event::OpenCollisionDump).await;
        }
    }

    /// Resolves a collision (§6.8) once the peer's BGP Identifier is known
    /// on `conn` (OpenConfirm).
    async fn resolve_collision(&mut self) {
        let (Some(pending), Some(c)) = (self.pending.as_ref(), self.conn.as_ref()) else {
            return;
        };
        let _ = pending;
        let Some(peer_id) = self.fsm.negotiated().map(|n| n.peer_bgp_id) else {
            return;
        };
        let peer_asn = self.fsm.negotiated().map_or(Asn(0), |n| n.peer_asn);
        let cfg = self.fsm.config();
        let keep_current =
            collision::keeps(c.outgoing, cfg.bgp_id, cfg.local_asn, peer_id, peer_asn);
        if keep_current {
            self.pending = None;
        } else {
            info!(peer = %self.p.name, "connection collision: keeping the peer's connection");
            self.drive(Event::OpenCollisionDump).await;
        }
    }
}

/// Waits (up to [`PEEK_OPEN_WAIT`]) for a whole OPEN message at the head of
/// `s` and returns the sender's BGP Identifier and AS, leaving the bytes on
/// the socket (MSG_PEEK) for the session that may take the connection up.
/// `None`: the connection closed, or began with something else.
async fn peek_open(s: &TcpStream) -> Option<(std::net::Ipv4Addr, Asn)> {
    let deadline = tokio::time::Instant::now() + PEEK_OPEN_WAIT;
    let mut buf = vec![0u8; 4096];
    loop {
        let n = tokio::time::timeout_at(deadline, s.peek(&mut buf))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        if n >= bgp_wire::HEADER_LEN {
            if buf[..16] != [0xff; 16] || buf[18] != bgp_wire::consts::msg_type::OPEN {
                return None;
            }
            let len = usize::from(u16::from_be_bytes([buf[16], buf[17]]));
            if len < bgp_wire::HEADER_LEN || len > buf.len() {
                return None;
            }
            if n >= len {
                let o = bgp_wire::OpenView::parse(&buf[bgp_wire::HEADER_LEN..len]).ok()?;
                return Some((o.bgp_id, o.asn()));
            }
        }
        // Part of it so far (an OPEN is one segment in practice): look
        // again shortly rather than spin on the bytes already there.
        tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + PEEK_RETRY)).await;
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
    }
}

/// How long a colliding connection may take to deliver its OPEN.
const PEEK_OPEN_WAIT: Duration = Duration::from_secs(30);
/// Between two looks at a partly arrived OPEN.
const PEEK_RETRY: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graceful_down_follows_rfc4724_and_rfc8538() {
        // Without the N bit only a TCP failure keeps the routes.
        assert!(graceful_down(DownReason::TcpConnectionFails, false));
        assert!(!graceful_down(DownReason::HoldTimerExpired, false));
        let cease = DownReason::NotificationReceived {
            code: notify::CEASE,
            subcode: 2,
        };
        assert!(!graceful_down(cease, false));
        // With it, NOTIFICATIONs too, except Cease/Hard Reset.
        assert!(graceful_down(cease, true));
        assert!(graceful_down(DownReason::HoldTimerExpired, true));
        let hard = DownReason::NotificationReceived {
            code: notify::CEASE,
            subcode: notify::HARD_RESET,
        };
        assert!(!graceful_down(hard, true));
        // Our own administrative stop never does.
        assert!(!graceful_down(DownReason::ManualStop, true));
    }
}
