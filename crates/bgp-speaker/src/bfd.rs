//! The BFD edge: single-hop BFD over UDP (RFC 5881) driving the pure
//! [`bfd::Session`]s of one tokio task.
//!
//! - Receive: `0.0.0.0:3784` and `[::]:3784` (IPv6-only), with
//!   `IP_RECVTTL` / `IPV6_RECVHOPLIMIT`; a packet that did not arrive with
//!   TTL / hop limit 255 is dropped (RFC 5881 §5, GTSM). Packets are
//!   demultiplexed by Your Discriminator, else by source address.
//! - Send: one socket per session, source port from 49152-65535 (§4),
//!   TTL / hop limit 255, to the peer's port 3784.
//! - One task for every session: it sleeps until the earliest deadline of
//!   any session, a packet, or a command; nothing spins.
//! - A session owned by a BGP neighbour (`bfd = true`) stops that BGP
//!   session when BFD leaves Up (NOTIFICATION Cease / BFD Down, RFC 9384,
//!   as FRR's bgpd does; BIRD stops the session too) and starts it again
//!   when BFD comes back Up. A Down caused by the peer signalling AdminDown
//!   is not a failure (RFC 5882 §3.2) and leaves BGP alone.
//! - Everyone may follow state changes: [`BfdHandle::subscribe`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, SystemTime};

use ::bfd::packet::{ControlPacket, PORT};
use ::bfd::session::{Session, SessionConfig, Step};
use ::bfd::State;
use base::Instant;
use bgp_wire::consts::notify;
use bgp_wire::NotificationMessage;
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info, warn};

use crate::msg::SessionCmd;

/// A state change of one session, for subscribers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BfdEvent {
    /// The peer's address (the session's key).
    pub peer: IpAddr,
    /// The BGP neighbour that owns it, if any.
    pub neighbor: Option<String>,
    /// Before and after.
    pub from: State,
    /// The new state.
    pub to: State,
    /// Our diagnostic after the change.
    pub diag: ::bfd::Diag,
    /// The peer's state as last received.
    pub remote_state: State,
    /// When, by the system clock.
    pub at: SystemTime,
}

/// What a session is created with.
#[derive(Clone, Debug)]
pub struct BfdPeer {
    /// The peer's address, directly connected.
    pub peer: IpAddr,
    /// Our source address; `None`: the kernel's choice.
    pub local: Option<IpAddr>,
    /// Intervals and multiplier.
    pub config: SessionConfig,
    /// The BGP neighbour's name, for display.
    pub neighbor: Option<String>,
    /// The BGP session this one guards: stopped when BFD goes Down,
    /// started when it comes Up. `None`: BFD only reports.
    pub owner: Option<mpsc::UnboundedSender<SessionCmd>>,
}

/// Global counters of the receive path.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BfdCounters {
    /// Packets received on port 3784.
    pub received: u64,
    /// Dropped: TTL / hop limit not 255.
    pub bad_ttl: u64,
    /// Dropped by the §6.8.6 checks of the decoder.
    pub malformed: u64,
    /// Dropped: no session for this discriminator or source.
    pub no_session: u64,
}

enum Cmd {
    Add(Box<BfdPeer>),
    Remove(IpAddr),
    Subscribe(mpsc::UnboundedSender<BfdEvent>),
    Query(oneshot::Sender<(Vec<mgmt::proto::BfdSessionInfo>, BfdCounters)>),
    Shutdown(oneshot::Sender<()>),
}

/// How the rest of the daemon reaches the BFD task. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct BfdHandle {
    tx: mpsc::UnboundedSender<Cmd>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cmd")
    }
}

impl BfdHandle {
    /// Adds a session, or updates the one with this peer address (new
    /// timers by a Poll Sequence, new owner), keeping its state.
    pub fn add(&self, p: BfdPeer) {
        let _ = self.tx.send(Cmd::Add(Box::new(p)));
    }
    /// Removes the session of this peer (it tells the peer AdminDown
    /// first, RFC 5880 §6.8.16).
    pub fn remove(&self, peer: IpAddr) {
        let _ = self.tx.send(Cmd::Remove(peer));
    }
    /// Every state change from now on, in order, until the task ends.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<BfdEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = self.tx.send(Cmd::Subscribe(tx));
        rx
    }
    /// Feeds every state change into `tx`.
    pub fn subscribe_with(&self, tx: mpsc::UnboundedSender<BfdEvent>) {
        let _ = self.tx.send(Cmd::Subscribe(tx));
    }
    /// Tells every peer AdminDown (RFC 5880 §6.8.16) and ends the task;
    /// waits at most `timeout`, from a thread outside the runtime.
    pub fn shutdown_blocking(&self, timeout: Duration) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Shutdown(tx)).is_err() {
            return;
        }
        let (stx, srx) = std::sync::mpsc::sync_channel(1);
        std::thread::spawn(move || {
            let _ = stx.send(rx.blocking_recv());
        });
        let _ = srx.recv_timeout(timeout);
    }

    /// The sessions and counters, from a thread outside the runtime.
    pub fn query_blocking(
        &self,
        timeout: Duration,
    ) -> Option<(Vec<mgmt::proto::BfdSessionInfo>, BfdCounters)> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Cmd::Query(tx)).ok()?;
        let (stx, srx) = std::sync::mpsc::sync_channel(1);
        std::thread::spawn(move || {
            let _ = stx.send(rx.blocking_recv());
        });
        srx.recv_timeout(timeout).ok()?.ok()
    }
}

/// Starts the BFD task on `rt`: binds port 3784 on IPv4 (required) and
/// IPv6 (when the host has it).
pub fn start(rt: &tokio::runtime::Handle) -> io::Result<BfdHandle> {
    let _g = rt.enter();
    let v4 = rx_socket(SocketAddr::from((Ipv4Addr::UNSPECIFIED, PORT)))?;
    let v6 = match rx_socket(SocketAddr::from((Ipv6Addr::UNSPECIFIED, PORT))) {
        Ok(s) => Some(s),
        Err(e) => {
            warn!("BFD: no IPv6 receive socket: {e}");
            None
        }
    };
    let (tx, rx) = mpsc::unbounded_channel();
    rt.spawn(run(rx, v4, v6));
    Ok(BfdHandle { tx })
}

fn setopt(fd: RawFd, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
    // SAFETY: a pointer to an initialised c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A UDP socket of the family `v6` says (IPv6 sockets IPv6 only).
fn udp_socket(v6: bool) -> io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(
        if v6 { Domain::IPV6 } else { Domain::IPV4 },
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    if v6 {
        s.set_only_v6(true)?;
    }
    Ok(s)
}

fn rx_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let v6 = addr.is_ipv6();
    let s = udp_socket(v6)?;
    if v6 {
        setopt(
            s.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_RECVHOPLIMIT,
            1,
        )?;
    } else {
        setopt(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTTL, 1)?;
    }
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    UdpSocket::from_std(s.into())
}

/// A sending socket: source port in 49152-65535 (RFC 5881 §4), TTL 255.
fn tx_socket(peer: IpAddr, local: Option<IpAddr>, hint: u32) -> io::Result<UdpSocket> {
    let v6 = peer.is_ipv6();
    let s = udp_socket(v6)?;
    if v6 {
        setopt(
            s.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_UNICAST_HOPS,
            255,
        )?;
    } else {
        setopt(s.as_raw_fd(), libc::IPPROTO_IP, libc::IP_TTL, 255)?;
    }
    s.set_nonblocking(true)?;
    let ip = local.unwrap_or(if v6 {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    } else {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    });
    let mut last = io::Error::other("no free source port in 49152-65535");
    for i in 0..16384u32 {
        let port = 49152 + ((hint.wrapping_mul(2654435761).wrapping_add(i)) % 16384) as u16;
        match s.bind(&SocketAddr::new(ip, port).into()) {
            Ok(()) => return UdpSocket::from_std(s.into()),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// One `recvmsg` with the TTL / hop limit control message.
fn recv_ttl(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Option<u8>)> {
    // SAFETY: every pointer handed to recvmsg points into live, correctly
    // sized locals; the control messages are walked with the libc macros
    // within msg_controllen.
    unsafe {
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut cbuf = [0u64; 16];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf);
        let n = libc::recvmsg(fd, &mut msg, 0);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ttl = None;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = &*c;
            if (h.cmsg_level == libc::IPPROTO_IP && h.cmsg_type == libc::IP_TTL)
                || (h.cmsg_level == libc::IPPROTO_IPV6 && h.cmsg_type == libc::IPV6_HOPLIMIT)
            {
                let v: libc::c_int = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                ttl = u8::try_from(v).ok();
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let from = match i32::from(addr.ss_family) {
            libc::AF_INET => {
                let a = &*(&addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                SocketAddr::from((
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                ))
            }
            libc::AF_INET6 => {
                let a = &*(&addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                SocketAddr::from((
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                ))
            }
            _ => return Err(io::Error::other("unknown address family")),
        };
        Ok((n as usize, from, ttl))
    }
}

struct Sess {
    p: BfdPeer,
    fsm: Session,
    sock: UdpSocket,
    /// We stopped the owner's BGP session and owe it a Start.
    bgp_held: bool,
    last_change: Option<SystemTime>,
    sent: u64,
    received: u64,
    ups: u64,
    downs: u64,
}

struct Task {
    origin: tokio::time::Instant,
    sessions: Vec<Sess>,
    subs: Vec<mpsc::UnboundedSender<BfdEvent>>,
    next_disc: u32,
    counters: BfdCounters,
}

async fn rx_ready(s: &Option<UdpSocket>) -> io::Result<()> {
    match s {
        Some(s) => s.readable().await,
        None => std::future::pending().await,
    }
}

async fn run(mut cmds: mpsc::UnboundedReceiver<Cmd>, v4: UdpSocket, v6: Option<UdpSocket>) {
    let origin = tokio::time::Instant::now();
    let mut t = Task {
        origin,
        sessions: Vec::new(),
        subs: Vec::new(),
        next_disc: (std::process::id() << 12) | 1,
        counters: BfdCounters::default(),
    };
    let v4 = Some(v4);
    let mut buf = [0u8; 512];
    loop {
        let deadline = t.sessions.iter().map(|s| s.fsm.next_deadline()).min();
        let wake = deadline.map(|d| t.origin + Duration::from_nanos(d.as_nanos()));
        tokio::select! {
            c = cmds.recv() => match c {
                None => break,
                Some(Cmd::Shutdown(done)) => {
                    t.admin_down_all();
                    let _ = done.send(());
                    return;
                }
                Some(c) => t.command(c),
            },
            r = rx_ready(&v4) => { if r.is_ok() { t.drain(v4.as_ref(), &mut buf); } }
            r = rx_ready(&v6) => { if r.is_ok() { t.drain(v6.as_ref(), &mut buf); } }
            _ = async { match wake { Some(w) => tokio::time::sleep_until(w).await, None => std::future::pending().await } } => {
                t.timers();
            }
        }
    }
    t.admin_down_all();
}

impl Task {
    fn now(&self) -> Instant {
        Instant::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Tells the peers we go away (§6.8.16).
    fn admin_down_all(&mut self) {
        let now = self.now();
        for i in 0..self.sessions.len() {
            let st = self.sessions[i].fsm.set_admin_down(now, true);
            self.act(i, st);
        }
    }

    fn command(&mut self, c: Cmd) {
        let now = self.now();
        match c {
            Cmd::Add(p) => {
                if let Some(i) = self.sessions.iter().position(|s| s.p.peer == p.peer) {
                    let s = &mut self.sessions[i];
                    s.fsm.set_config(now, p.config);
                    s.p.neighbor = p.neighbor.clone();
                    s.p.local = p.local;
                    s.p.owner = p.owner.clone();
                    // A new BGP session while BFD is still down waits.
                    if s.bgp_held {
                        stop_bgp(&s.p);
                    }
                    return;
                }
                let disc = self.next_disc;
                self.next_disc = self.next_disc.wrapping_add(1).max(1);
                let sock = match tx_socket(p.peer, p.local, disc) {
                    Ok(s) => s,
                    Err(e) => {
                        warn!(peer = %p.peer, "BFD: cannot open the sending socket: {e}");
                        return;
                    }
                };
                info!(peer = %p.peer, neighbor = ?p.neighbor, disc, "BFD session added");
                self.sessions.push(Sess {
                    fsm: Session::new(p.config, disc, u64::from(disc) ^ 0x5bd1_e995),
                    p: *p,
                    sock,
                    bgp_held: false,
                    last_change: None,
                    sent: 0,
                    received: 0,
                    ups: 0,
                    downs: 0,
                });
            }
            Cmd::Remove(peer) => {
                if let Some(i) = self.sessions.iter().position(|s| s.p.peer == peer) {
                    let st = self.sessions[i].fsm.set_admin_down(now, true);
                    self.act(i, st);
                    let s = self.sessions.swap_remove(i);
                    if s.bgp_held {
                        start_bgp(&s.p);
                    }
                    info!(peer = %peer, "BFD session removed");
                }
            }
            Cmd::Subscribe(tx) => self.subs.push(tx),
            Cmd::Query(tx) => {
                let list = self.sessions.iter().map(info_of).collect();
                let _ = tx.send((list, self.counters));
            }
            // Handled by the loop.
            Cmd::Shutdown(done) => {
                let _ = done.send(());
            }
        }
    }

    fn drain(&mut self, sock: Option<&UdpSocket>, buf: &mut [u8]) {
        let Some(sock) = sock else { return };
        let fd = sock.as_raw_fd();
        // Bounded: at most 256 packets per wake-up, then the timers run.
        for _ in 0..256 {
            let r = sock.try_io(Interest::READABLE, || recv_ttl(fd, buf));
            let (n, from, ttl) = match r {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // One-shot errors (an ICMP error queued on the socket) are
                // consumed by the read that reports them.
                Err(e) => {
                    debug!("BFD receive: {e}");
                    continue;
                }
            };
            self.counters.received += 1;
            if ttl != Some(255) {
                self.counters.bad_ttl += 1;
                continue;
            }
            let p = match ControlPacket::decode(buf.get(..n).unwrap_or(&[])) {
                Ok(p) => p,
                Err(e) => {
                    self.counters.malformed += 1;
                    debug!(%from, "BFD packet dropped: {}", e.name());
                    continue;
                }
            };
            let ip = canonical(from.ip());
            let i = if p.your_disc != 0 {
                self.sessions
                    .iter()
                    .position(|s| s.fsm.local_disc() == p.your_disc)
            } else {
                self.sessions.iter().position(|s| s.p.peer == ip)
            };
            let Some(i) = i else {
                self.counters.no_session += 1;
                continue;
            };
            let now = self.now();
            self.sessions[i].received += 1;
            let st = self.sessions[i].fsm.receive(now, &p);
            self.act(i, st);
        }
    }

    fn timers(&mut self) {
        let now = self.now();
        for i in 0..self.sessions.len() {
            if self.sessions[i].fsm.next_deadline() <= now {
                let st = self.sessions[i].fsm.poll(now);
                self.act(i, st);
            }
        }
    }

    /// Carries out one step: send, then report a change.
    fn act(&mut self, i: usize, st: Step) {
        let Some(s) = self.sessions.get_mut(i) else {
            return;
        };
        if let Some(p) = st.send {
            let to = SocketAddr::new(s.p.peer, PORT);
            match s.sock.try_send_to(&p.encode(), to) {
                Ok(_) => s.sent += 1,
                Err(e) => debug!(peer = %s.p.peer, "BFD send: {e}"),
            }
        }
        let Some(tr) = st.transition else { return };
        s.last_change = Some(SystemTime::now());
        let remote_state = s.fsm.remote_state();
        info!(
            peer = %s.p.peer,
            neighbor = ?s.p.neighbor,
            from = tr.from.name(),
            to = tr.to.name(),
            diag = tr.diag.name(),
            "BFD session state changed"
        );
        if tr.to == State::Up {
            s.ups += 1;
            if std::mem::take(&mut s.bgp_held) {
                start_bgp(&s.p);
            }
        } else if tr.from == State::Up {
            s.downs += 1;
            // RFC 5882 §3.2: the peer disabling BFD is no failure.
            let admin = tr.diag == ::bfd::Diag::NeighborDown && remote_state == State::AdminDown;
            if tr.to == State::Down && !admin && s.p.owner.is_some() {
                stop_bgp(&s.p);
                s.bgp_held = true;
            }
        }
        let ev = BfdEvent {
            peer: s.p.peer,
            neighbor: s.p.neighbor.clone(),
            from: tr.from,
            to: tr.to,
            diag: tr.diag,
            remote_state,
            at: SystemTime::now(),
        };
        self.subs.retain(|tx| tx.send(ev.clone()).is_ok());
    }
}

/// IPv4-mapped IPv6 addresses as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn stop_bgp(p: &BfdPeer) {
    if let Some(o) = &p.owner {
        info!(peer = %p.peer, neighbor = ?p.neighbor, "BFD down: stopping the BGP session");
        let _ = o.send(SessionCmd::Stop {
            notification: NotificationMessage::new(notify::CEASE, notify::BFD_DOWN, Vec::new()),
            restart_after: None,
        });
    }
}

fn start_bgp(p: &BfdPeer) {
    if let Some(o) = &p.owner {
        info!(peer = %p.peer, neighbor = ?p.neighbor, "BFD up: starting the BGP session");
        let _ = o.send(SessionCmd::Start);
    }
}

fn info_of(s: &Sess) -> mgmt::proto::BfdSessionInfo {
    let c = s.fsm.config();
    let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    mgmt::proto::BfdSessionInfo {
        peer: s.p.peer,
        local: s.p.local,
        neighbor: s.p.neighbor.clone(),
        state: s.fsm.state().name().into(),
        remote_state: s.fsm.remote_state().name().into(),
        diag: s.fsm.diag().name().into(),
        remote_diag: s.fsm.remote_diag().name().into(),
        local_disc: s.fsm.local_disc(),
        remote_disc: s.fsm.remote_disc(),
        desired_min_tx_us: us(c.desired_min_tx),
        required_min_rx_us: us(c.required_min_rx),
        multiplier: c.detect_mult,
        tx_interval_us: s.fsm.tx_interval().map_or(0, us),
        detection_time_us: us(s.fsm.detection_time()),
        last_change_ms: s.last_change.map(super::daemon::query::unix_ms),
        packets_sent: s.sent,
        packets_received: s.received,
        transitions_up: s.ups,
        transitions_down: s.downs,
    }
}

/// The pure session's configuration from the config file's.
pub fn session_config(b: &config::Bfd) -> SessionConfig {
    SessionConfig {
        desired_min_tx: Duration::from_millis(u64::from(b.min_tx_ms)),
        required_min_rx: Duration::from_millis(u64::from(b.min_rx_ms)),
        detect_mult: b.multiplier,
    }
}
