//! One BGP session over blocking TCP: connect from a chosen source address,
//! the OPEN/KEEPALIVE handshake (RFC 4271 §8.2.2 as far as a replay client
//! needs it), and framed reads.
//!
//! The replay client is not a router: it runs no real FSM, accepts
//! whatever the DUT offers as long as the session can carry 4-octet-AS
//! IPv4 unicast UPDATEs, and treats anything unexpected as fatal for that
//! peer.

use crate::error::{Phase, ReplayError};
use base::{AfiSafi, Asn};
use bgp_wire::{
    encode_keepalive, frame, Capability, CapabilityView, Message, NotificationMessage, OpenMessage,
    ParseCtx, HEADER_LEN,
};
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// What one outgoing session needs.
#[derive(Copy, Clone, Debug)]
pub struct SessionConfig {
    /// Bound before connect, so the DUT sees a distinct neighbour per peer.
    pub source: Option<IpAddr>,
    pub target: SocketAddr,
    pub local_as: Asn,
    /// Checked against the peer's OPEN; `None` accepts any AS (the sink).
    pub peer_as: Option<Asn>,
    pub bgp_id: Ipv4Addr,
    /// Proposed hold time in seconds (0 or >= 3, RFC 4271 §4.2).
    pub hold_time: u16,
    /// Bound on connecting, refused connections retried until it runs out.
    pub connect_timeout: Duration,
    /// Bound on the OPEN/KEEPALIVE exchange.
    pub open_timeout: Duration,
    /// Advertise the Graceful Restart capability with no families (RFC 4724
    /// §3): we are a receiving speaker that understands End-of-RIB, so the
    /// DUT sends one after its initial update (the monitor needs it).
    pub graceful_restart: bool,
}

/// What the handshake settled.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    pub peer_as: Asn,
    pub peer_id: Ipv4Addr,
    /// The smaller of both hold times (RFC 4271 §4.2).
    pub hold_time: u16,
    pub ctx: ParseCtx,
}

impl Negotiated {
    /// RFC 4271 §10 suggests a third of the hold time; `None` when the
    /// hold time is zero (no keepalives at all).
    pub fn keepalive_interval(&self) -> Option<Duration> {
        (self.hold_time > 0).then(|| Duration::from_secs(u64::from(self.hold_time / 3).max(1)))
    }
}

/// Our capabilities: multiprotocol IPv4 and IPv6 unicast (RFC 4760),
/// route refresh (RFC 2918, so DUTs that insist on it are happy; we never
/// send one) and 4-octet AS (RFC 6793).
pub fn our_open(local_as: Asn, hold_time: u16, bgp_id: Ipv4Addr, gr: bool) -> OpenMessage {
    let mut caps = vec![
        Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
        Capability::Multiprotocol(AfiSafi::IPV6_UNICAST),
        Capability::RouteRefresh,
        Capability::FourOctetAsn(local_as),
    ];
    if gr {
        caps.push(Capability::GracefulRestart {
            flags: 0,
            restart_time: 0,
            families: Vec::new(),
        });
    }
    OpenMessage::new(local_as, hold_time, bgp_id, caps)
}

/// Connects from `cfg.source` to `cfg.target`, retrying refused connects
/// (the DUT may still be starting) until `connect_timeout` runs out.
pub fn connect(cfg: &SessionConfig) -> Result<TcpStream, ReplayError> {
    let deadline = Instant::now() + cfg.connect_timeout;
    loop {
        let domain = Domain::for_address(cfg.target);
        let sock = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))
            .map_err(|e| ReplayError::io(Phase::Bind, &e))?;
        if let Some(src) = cfg.source {
            sock.bind(&SocketAddr::new(src, 0).into())
                .map_err(|e| ReplayError::io(Phase::Bind, &e))?;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timeout(Phase::Connect, cfg.connect_timeout));
        }
        match sock.connect_timeout(&cfg.target.into(), left) {
            Ok(()) => {
                let s: TcpStream = sock.into();
                // UPDATEs are written in large chunks; Nagle would only
                // delay the small KEEPALIVE and NOTIFICATION messages.
                s.set_nodelay(true)
                    .map_err(|e| ReplayError::io(Phase::Connect, &e))?;
                return Ok(s);
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                if Instant::now() + Duration::from_millis(200) >= deadline {
                    return Err(ReplayError::Io {
                        phase: Phase::Connect,
                        kind: e.kind(),
                    });
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(ReplayError::io(Phase::Connect, &e)),
        }
    }
}

fn timeout(phase: Phase, d: Duration) -> ReplayError {
    ReplayError::Timeout {
        phase,
        secs: d.as_secs().min(u64::from(u32::MAX)) as u32,
    }
}

/// A framed message inside a [`MsgReader`]'s buffer, valid until the
/// next call of [`MsgReader::next`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    pub msg_type: u8,
    start: usize,
    len: usize,
}

/// Reads whole messages from a stream into a reusable buffer.
pub struct MsgReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Default for MsgReader {
    fn default() -> Self {
        MsgReader::new()
    }
}

impl MsgReader {
    pub fn new() -> MsgReader {
        MsgReader {
            // Room for a few extended messages (RFC 8654, 65535 octets).
            buf: vec![0; 256 * 1024],
            start: 0,
            end: 0,
        }
    }

    /// The next whole message. Blocks up to the stream's read timeout;
    /// `Ok(None)` when it passes with no complete message (call again), an
    /// error when the peer closes or sends bytes that do not frame.
    pub fn next(
        &mut self,
        stream: &mut TcpStream,
        ctx: ParseCtx,
        phase: Phase,
    ) -> Result<Option<Msg>, ReplayError> {
        loop {
            let avail = self.buf.get(self.start..self.end).unwrap_or(&[]);
            match frame(avail, ctx) {
                Ok(Some(f)) => {
                    let m = Msg {
                        msg_type: f.header.msg_type,
                        start: self.start,
                        len: f.len,
                    };
                    self.start += f.len;
                    return Ok(Some(m));
                }
                Ok(None) => {}
                Err(e) => {
                    let (code, subcode) = e.code();
                    return Err(ReplayError::Malformed {
                        phase,
                        code,
                        subcode,
                    });
                }
            }
            // Compact, then read more.
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let free = self.buf.get_mut(self.end..).unwrap_or(&mut []);
            match stream.read(free) {
                Ok(0) => return Err(ReplayError::Closed { phase }),
                Ok(n) => self.end += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Ok(None)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReplayError::io(phase, &e)),
            }
        }
    }

    /// The whole message (header included).
    pub fn bytes(&self, m: Msg) -> &[u8] {
        self.buf.get(m.start..m.start + m.len).unwrap_or(&[])
    }
}

/// Turns a received NOTIFICATION into an error.
fn notification_error(phase: Phase, msg: &[u8]) -> ReplayError {
    let body = msg.get(HEADER_LEN..).unwrap_or(&[]);
    ReplayError::Notification {
        phase,
        code: body.first().copied().unwrap_or(0),
        subcode: body.get(1).copied().unwrap_or(0),
    }
}

/// Waits for the next message until `deadline`, polling with short read
/// timeouts so the wait is bounded without a second thread.
fn wait_msg(
    rd: &mut MsgReader,
    stream: &mut TcpStream,
    ctx: ParseCtx,
    phase: Phase,
    deadline: Instant,
    total: Duration,
) -> Result<Msg, ReplayError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timeout(phase, total));
        }
        stream
            .set_read_timeout(Some(
                left.clamp(Duration::from_millis(10), Duration::from_millis(500)),
            ))
            .map_err(|e| ReplayError::io(phase, &e))?;
        if let Some(m) = rd.next(stream, ctx, phase)? {
            return Ok(m);
        }
    }
}

/// The OPEN/KEEPALIVE exchange from either side: send our OPEN, read
/// theirs, check it, send KEEPALIVE, wait for theirs (RFC 4271 §8.2.2,
/// OpenSent -> OpenConfirm -> Established). The sink (passive side) does
/// the same steps; BGP has no client/server asymmetry here.
pub fn handshake(
    stream: &mut TcpStream,
    rd: &mut MsgReader,
    cfg: &SessionConfig,
) -> Result<Negotiated, ReplayError> {
    let deadline = Instant::now() + cfg.open_timeout;
    let mut out = Vec::with_capacity(128);
    our_open(
        cfg.local_as,
        cfg.hold_time,
        cfg.bgp_id,
        cfg.graceful_restart,
    )
    .encode(ParseCtx::legacy(), &mut out)
    .map_err(|_| ReplayError::Encode)?;
    stream
        .set_write_timeout(Some(cfg.open_timeout))
        .map_err(|e| ReplayError::io(Phase::Open, &e))?;
    stream
        .write_all(&out)
        .map_err(|e| ReplayError::io(Phase::Open, &e))?;

    let legacy = ParseCtx::legacy();
    let m = wait_msg(rd, stream, legacy, Phase::Open, deadline, cfg.open_timeout)?;
    let (t, msg) = (m.msg_type, rd.bytes(m));
    let neg = match Message::parse(msg, legacy) {
        Ok((Message::Open(o), _)) => {
            if let Err(e) = o.validate() {
                let (code, subcode) = e.code();
                return Err(ReplayError::Malformed {
                    phase: Phase::Open,
                    code,
                    subcode,
                });
            }
            let peer_as = o.asn();
            if let Some(want) = cfg.peer_as {
                if want != peer_as {
                    send_notification(stream, 2, 2);
                    return Err(ReplayError::WrongPeerAs {
                        expected: want.0,
                        got: peer_as.0,
                    });
                }
            }
            let (mut four, mut v4) = (false, false);
            for c in o.capabilities().map_while(Result::ok) {
                match CapabilityView::parse(c.code, c.value) {
                    CapabilityView::FourOctetAsn(_) => four = true,
                    CapabilityView::Multiprotocol(af) if af == AfiSafi::IPV4_UNICAST => v4 = true,
                    _ => {}
                }
            }
            if !four {
                send_notification(stream, 2, 7);
                return Err(ReplayError::NoFourOctetAs);
            }
            // RFC 4760 §8: without any multiprotocol capability IPv4
            // unicast is implied; with some, it must be listed.
            let any_mp = o.capabilities().map_while(Result::ok).any(|c| c.code == 1);
            if any_mp && !v4 {
                send_notification(stream, 2, 7);
                return Err(ReplayError::NoIpv4Unicast);
            }
            Negotiated {
                peer_as,
                peer_id: o.bgp_id,
                hold_time: o.hold_time.min(cfg.hold_time),
                ctx: ParseCtx::legacy().with_four_octet_asn(true),
            }
        }
        Ok((Message::Notification(_), _)) => return Err(notification_error(Phase::Open, msg)),
        Ok(_) => {
            return Err(ReplayError::Unexpected {
                phase: Phase::Open,
                msg_type: t,
            })
        }
        Err(e) => {
            let (code, subcode) = e.code();
            return Err(ReplayError::Malformed {
                phase: Phase::Open,
                code,
                subcode,
            });
        }
    };

    out.clear();
    encode_keepalive(neg.ctx, &mut out).map_err(|_| ReplayError::Encode)?;
    stream
        .write_all(&out)
        .map_err(|e| ReplayError::io(Phase::OpenConfirm, &e))?;
    let m = wait_msg(
        rd,
        stream,
        neg.ctx,
        Phase::OpenConfirm,
        deadline,
        cfg.open_timeout,
    )?;
    let (t, msg) = (m.msg_type, rd.bytes(m));
    match t {
        bgp_wire::consts::msg_type::KEEPALIVE => Ok(neg),
        bgp_wire::consts::msg_type::NOTIFICATION => {
            Err(notification_error(Phase::OpenConfirm, msg))
        }
        _ => Err(ReplayError::Unexpected {
            phase: Phase::OpenConfirm,
            msg_type: t,
        }),
    }
}

/// Best effort: tells the peer why we leave, then closes. Errors are
/// ignored because the session is going away anyway.
pub fn send_notification(stream: &mut TcpStream, code: u8, subcode: u8) {
    let mut out = Vec::with_capacity(32);
    if NotificationMessage::new(code, subcode, Vec::new())
        .encode(ParseCtx::legacy(), &mut out)
        .is_ok()
    {
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = stream.write_all(&out);
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Maps a received message in an established session: NOTIFICATION is an
/// error, everything else is fine.
pub fn check_established(t: u8, msg: &[u8], phase: Phase) -> Result<(), ReplayError> {
    if t == bgp_wire::consts::msg_type::NOTIFICATION {
        return Err(notification_error(phase, msg));
    }
    Ok(())
}
