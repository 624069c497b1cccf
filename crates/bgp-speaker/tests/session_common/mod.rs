//! Helpers shared by the session tests: temp dirs, a BIRD process guard,
//! a raw BGP peer on a local socket (with the Established session and the
//! UPDATEs of `session_raw` and `session_streams`), and a stand-in for the
//! RIB thread (the `RibMsg` receiver read directly).
#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base::{AfiSafi, Asn};
use bgp_fsm::{ConnectionMode, SessionConfig};
use bgp_rib::PeerId;
use bgp_speaker::msg::{RibInput, RibTx};
use bgp_speaker::pipeline::ChannelSender;
use bgp_speaker::rib::RibMsg;
use bgp_speaker::sess::{spawn_session, Registry, SessionHandle, SessionParams};
use bgp_wire::{Capability, OpenMessage, ParseCtx, HEADER_LEN, MARKER};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "tessera-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Polls `f` every 100 ms until it returns Some, or panics after `secs`
/// with `what` and the last diagnostic `f` produced.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Result<T, String>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let last = match f() {
            Ok(v) => return v,
            Err(e) => e,
        };
        if Instant::now() >= end {
            panic!("timed out after {secs} s waiting for {what}; last: {last}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A BIRD 2 daemon in the foreground, killed (and continued first, should
/// a test have stopped it) on drop.
pub struct Bird {
    child: Child,
    pub sock: PathBuf,
    pub dir: PathBuf,
}

impl Bird {
    /// Writes `conf` to `dir/bird.conf` and starts BIRD on it; waits for
    /// its control socket.
    pub fn start(dir: &Path, conf: &str) -> Bird {
        let conf_path = dir.join("bird.conf");
        std::fs::write(&conf_path, conf).expect("write bird.conf");
        let sock = dir.join("bird.ctl");
        let child = Command::new("/usr/sbin/bird")
            .arg("-f")
            .arg("-c")
            .arg(&conf_path)
            .arg("-s")
            .arg(&sock)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("/usr/sbin/bird must be installed (Debian bird2)");
        let b = Bird {
            child,
            sock,
            dir: dir.to_path_buf(),
        };
        wait_for(10, "BIRD control socket", || {
            b.birdc(&["show", "status"])
                .map(|_| ())
                .map_err(|e| format!("{e}; log: {}", b.log()))
        });
        b
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn birdc(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("/usr/sbin/birdc")
            .arg("-s")
            .arg(&self.sock)
            .args(args)
            .output()
            .map_err(|e| format!("birdc: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!(
                "birdc {args:?}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("bird.log")).unwrap_or_default()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: sends a signal to the child we started.
        unsafe {
            libc::kill(self.pid(), sig);
        }
    }
}

impl Drop for Bird {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The RIB thread's end: a bounded channel like the daemon's.
pub fn rib_channel() -> (RibTx, mpsc::Receiver<RibMsg>) {
    rib_channel_cap(1024)
}

/// A RIB channel of `cap` messages (small: to exercise back-pressure).
pub fn rib_channel_cap(cap: usize) -> (RibTx, mpsc::Receiver<RibMsg>) {
    let (tx, rx) = mpsc::channel(cap);
    (ChannelSender::shared(vec![tx]), rx)
}

/// The next `RibInput`, or None after `timeout`.
pub async fn next_input(rx: &mut mpsc::Receiver<RibMsg>, timeout: Duration) -> Option<RibInput> {
    let end = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(end, rx.recv()).await {
            Ok(Some(RibMsg::Input(i))) => return Some(i),
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => return None,
        }
    }
}

/// Reads inputs until `pick` accepts one; panics after `secs`, listing
/// what came instead.
pub async fn expect_input<T>(
    rx: &mut mpsc::Receiver<RibMsg>,
    secs: u64,
    what: &str,
    mut pick: impl FnMut(&RibInput) -> Option<T>,
) -> T {
    let end = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut seen = Vec::new();
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        match next_input(rx, left).await {
            Some(i) => {
                if let Some(v) = pick(&i) {
                    return v;
                }
                seen.push(format!("{i:?}").chars().take(300).collect::<String>());
            }
            None => panic!("no {what} within {secs} s; saw: {seen:#?}"),
        }
    }
}

/// Session parameters for tests: AS 65001, router id 10.255.0.1, IPv4 and
/// IPv6 unicast, quick retries.
pub fn params(
    remote: SocketAddr,
    local: IpAddr,
    peer_as: u32,
    mode: ConnectionMode,
) -> SessionParams {
    let mut fsm = SessionConfig::new(Asn(65001), Some(Asn(peer_as)), Ipv4Addr::new(10, 255, 0, 1));
    fsm.families = vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST];
    fsm.connect_retry_time = Duration::from_secs(1);
    fsm.connection_mode = mode;
    SessionParams {
        peer: PeerId(1),
        name: "test".into(),
        remote,
        local: Some(local),
        fsm,
        md5_password: None,
        ttl: None,
        ttl_security: None,
        start: true,
        confed: bgp_wire::ConfedSender::Outside,
    }
}

/// The raw peer's AS in [`connect_raw`], [`established_raw`] and
/// [`good_attrs`].
pub const RAW_PEER_AS: u32 = 65002;

/// Our session (127.`net`.`n`.1, AS 65001, IPv4 unicast, `tune` applied
/// to its parameters) over `rib`, connected to a raw peer at
/// 127.`net`.`n`.2 that has sent nothing yet. Each test file takes its
/// own `net` and each test its own `n`, so tests that run at once never
/// share an address.
pub async fn connect_raw(
    net: u8,
    n: u8,
    rib: RibTx,
    tune: impl FnOnce(&mut SessionParams),
) -> (SessionHandle, RawPeer) {
    let us = IpAddr::from([127, net, n, 1]);
    let peer_ip = IpAddr::from([127, net, n, 2]);
    let l = TcpListener::bind(SocketAddr::new(peer_ip, 0))
        .await
        .expect("bind raw peer");
    let remote = l.local_addr().expect("addr");
    let mut p = params(remote, us, RAW_PEER_AS, ConnectionMode::Both);
    p.fsm.families = vec![AfiSafi::IPV4_UNICAST];
    tune(&mut p);
    let h = spawn_session(
        &tokio::runtime::Handle::current(),
        p,
        rib,
        &Registry::default(),
        None,
    );
    let (s, from) = tokio::time::timeout(Duration::from_secs(5), l.accept())
        .await
        .expect("the session connects within 5 s")
        .expect("accept");
    assert_eq!(from.ip(), us, "connects from the configured local address");
    (h, RawPeer::new(s))
}

/// [`connect_raw`], then the OPEN exchange with the raw peer
/// ([`RAW_PEER_AS`], with the capabilities `caps` besides the usual
/// ones): both Established, and the RIB told `Up` through `rx`.
pub async fn established_raw(
    net: u8,
    n: u8,
    rib: RibTx,
    rx: &mut mpsc::Receiver<RibMsg>,
    tune: impl FnOnce(&mut SessionParams),
    caps: &[Capability],
) -> (SessionHandle, RawPeer) {
    let (h, mut peer) = connect_raw(net, n, rib, tune).await;
    peer.handshake_caps(RAW_PEER_AS, Ipv4Addr::new(10, 255, 0, 2), caps)
        .await;
    expect_input(rx, 5, "Up", |i| {
        matches!(i, RibInput::Up { .. }).then_some(())
    })
    .await;
    (h, peer)
}

/// ORIGIN IGP, AS_PATH [[`RAW_PEER_AS`]] (4-octet), NEXT_HOP 192.0.2.1.
pub fn good_attrs() -> Vec<u8> {
    let mut a = vec![0x40, 1, 1, 0];
    a.extend_from_slice(&[0x40, 2, 6, 2, 1]);
    a.extend_from_slice(&RAW_PEER_AS.to_be_bytes());
    a.extend_from_slice(&[0x40, 3, 4, 192, 0, 2, 1]);
    a
}

/// An UPDATE message (RFC 4271 §4.3) of these withdrawn routes, path
/// attributes and NLRI, each already encoded.
pub fn update(withdrawn: &[u8], attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(withdrawn.len() as u16).to_be_bytes());
    b.extend_from_slice(withdrawn);
    b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    b.extend_from_slice(attrs);
    b.extend_from_slice(nlri);
    message(2, &b)
}

/// The next batch of UPDATEs the RIB gets (within 5 s).
pub async fn next_updates(rx: &mut mpsc::Receiver<RibMsg>) -> Vec<bgp_speaker::msg::DecodedUpdate> {
    expect_input(rx, 5, "UPDATEs", |i| match i {
        RibInput::Updates { updates, .. } => Some(updates.clone()),
        _ => None,
    })
    .await
}

/// Sends an UPDATE whose Total Path Attribute Length (200) runs past its
/// 23-octet body: the NLRI cannot be located, so RFC 7606 §4 leaves only
/// a session reset with UPDATE Message Error / Malformed Attribute List
/// (3/1, RFC 4271 §6.3), no data. Checks exactly that NOTIFICATION, the
/// closed connection, a non-graceful `Down` with 3/1 at the RIB, and the
/// session's last error.
pub async fn unparsable_update_resets_3_1(
    h: &SessionHandle,
    peer: &mut RawPeer,
    rx: &mut mpsc::Receiver<RibMsg>,
) {
    let mut b = vec![0, 0, 0, 200];
    b.extend_from_slice(&good_attrs());
    peer.send(&message(2, &b)).await;
    let (ty, body) = peer.read_non_keepalive(5).await.expect("NOTIFICATION");
    assert_eq!(ty, 3, "NOTIFICATION");
    assert_eq!(body, vec![3, 1], "exactly 3/1 with no data");
    assert!(peer.read(5).await.is_none(), "connection closed after it");
    let reason = expect_input(rx, 5, "Down", |i| match i {
        RibInput::Down {
            reason, graceful, ..
        } => Some((*reason, *graceful)),
        _ => None,
    })
    .await;
    let want = bgp_fsm::DownReason::MessageError {
        code: 3,
        subcode: 1,
    };
    assert_eq!(reason, (want, false));
    assert!(
        h.status.last_error().contains("3/1"),
        "{}",
        h.status.last_error()
    );
}

/// BIRD as AS 65002 at `bird`, neighbour `us` (AS 65001). It announces
/// 10.77.1.0/24 with community (65002,100) and large community
/// (65002,1,2), 10.77.2.0/24 bare, and 2001:db8:77::/48 with (65002,600).
/// `extra` goes into the `protocol bgp` block.
pub fn bird_conf(
    dir: &Path,
    us: IpAddr,
    bird: IpAddr,
    passive: bool,
    hold: u16,
    extra: &str,
) -> String {
    format!(
        r#"router id 10.255.0.2;
log "{dir}/bird.log" all;
protocol device {{ scan time 10; }}
protocol static s4 {{
  ipv4;
  route 10.77.1.0/24 unreachable {{
    bgp_community.add((65002,100));
    bgp_large_community.add((65002,1,2));
  }};
  route 10.77.2.0/24 unreachable;
}}
protocol static s6 {{
  ipv6;
  route 2001:db8:77::/48 unreachable {{ bgp_community.add((65002,600)); }};
}}
protocol bgp peer {{
  local {bird} as 65002;
  neighbor {us} as 65001;
  multihop 2;
  strict bind on;
  hold time {hold};
  keepalive time 1;
  connect retry time 1;
  error wait time 1, 2;
  passive {passive};
  {extra}
  ipv4 {{ import all; export all; next hop self; }};
  ipv6 {{ import all; export all; next hop address 2001:db8::2; }};
}}
"#,
        dir = dir.display(),
        passive = if passive { "on" } else { "off" },
    )
}

/// One BGP message: type and body.
pub type Msg = (u8, Vec<u8>);

/// A hand-driven BGP peer on one TCP connection.
pub struct RawPeer {
    pub s: TcpStream,
    buf: Vec<u8>,
}

/// Wraps a body into a message with header.
pub fn message(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(HEADER_LEN + body.len());
    m.extend_from_slice(&MARKER);
    m.extend_from_slice(&((HEADER_LEN + body.len()) as u16).to_be_bytes());
    m.push(ty);
    m.extend_from_slice(body);
    m
}

impl RawPeer {
    pub fn new(s: TcpStream) -> RawPeer {
        RawPeer { s, buf: Vec::new() }
    }

    pub async fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).await.expect("raw peer write");
    }

    /// The next message, or None on EOF or after `secs`.
    pub async fn read(&mut self, secs: u64) -> Option<Msg> {
        let end = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            if self.buf.len() >= HEADER_LEN {
                let len = usize::from(u16::from_be_bytes([self.buf[16], self.buf[17]]));
                assert!(len >= HEADER_LEN, "bad length from the speaker");
                if self.buf.len() >= len {
                    let ty = self.buf[18];
                    let body = self.buf[HEADER_LEN..len].to_vec();
                    self.buf.drain(..len);
                    return Some((ty, body));
                }
            }
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout_at(end, self.s.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return None,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next message that is not a KEEPALIVE.
    pub async fn read_non_keepalive(&mut self, secs: u64) -> Option<Msg> {
        loop {
            let m = self.read(secs).await?;
            if m.0 != 4 {
                return Some(m);
            }
        }
    }

    /// Completes the OPEN exchange as AS `asn` (4-octet, IPv4 unicast)
    /// and waits for the speaker's KEEPALIVE.
    pub async fn handshake(&mut self, asn: u32, id: Ipv4Addr) {
        self.handshake_caps(asn, id, &[]).await;
    }

    /// [`Self::handshake`] that also advertises `extra` capabilities.
    pub async fn handshake_caps(&mut self, asn: u32, id: Ipv4Addr, extra: &[Capability]) {
        let (ty, _open) = self.read(5).await.expect("OPEN from the speaker");
        assert_eq!(ty, 1, "first message must be OPEN");
        let mut caps = vec![
            Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
            Capability::RouteRefresh,
            Capability::FourOctetAsn(Asn(asn)),
        ];
        caps.extend_from_slice(extra);
        let open = OpenMessage::new(Asn(asn), 90, id, caps);
        let mut b = Vec::new();
        open.encode(ParseCtx::legacy(), &mut b)
            .expect("encode OPEN");
        self.send(&b).await;
        self.send(&message(4, &[])).await;
        let (ty, _) = self.read(5).await.expect("KEEPALIVE from the speaker");
        assert_eq!(ty, 4, "the speaker answers OPEN with KEEPALIVE");
    }
}
