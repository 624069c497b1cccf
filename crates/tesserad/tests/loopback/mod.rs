//! A hand-written BGP peer and `tesserad` on loopback, for tests that need
//! to choose exactly what a peer sends (no Debian daemon can be told to,
//! e.g., skip a route between BoRR and EoRR). Needs nothing but loopback;
//! every read has a timeout and tesserad is killed on drop.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const KEEPALIVE: u8 = 4;
pub const UPDATE: u8 = 2;
pub const ROUTE_REFRESH: u8 = 5;

pub struct Daemon {
    child: Child,
    pub dir: PathBuf,
    sock: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("tesserad.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            eprintln!("--- tesserad log (last 40 lines, newest first) ---");
            for l in tail {
                eprintln!("{l}");
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Daemon {
    pub fn start(tag: &str, me: Ipv4Addr, peer: Ipv4Addr, port: u16, enhanced: bool) -> Daemon {
        Self::start_with(tag, me, peer, port, enhanced, "")
    }

    /// [`Self::start`] with `extra` appended to the config (TOML).
    pub fn start_with(
        tag: &str,
        me: Ipv4Addr,
        peer: Ipv4Addr,
        port: u16,
        enhanced: bool,
        extra: &str,
    ) -> Daemon {
        let families = "families = [\"ipv4-unicast\"]";
        Self::start_conf(
            tag,
            me,
            peer,
            port,
            &format!("{families}\nenhanced_route_refresh = {enhanced}\n{extra}"),
        )
    }

    /// [`Self::start`] with `neighbor` appended to the neighbour's keys
    /// (its `families` included) and what follows them (TOML).
    pub fn start_conf(
        tag: &str,
        me: Ipv4Addr,
        peer: Ipv4Addr,
        port: u16,
        neighbor: &str,
    ) -> Daemon {
        let dir = std::env::temp_dir().join(format!("tessera-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let sock = dir.join("ctl.sock");
        let conf = format!(
            "[router]\nid = \"10.0.0.1\"\nasn = 65000\nlisten = [\"{me}:{port}\"]\n\
             \n[control]\nsocket = \"{}\"\n\
             \n[[static]]\nprefix = \"192.0.2.0/24\"\n\
             \n[[neighbor]]\nname = \"raw\"\naddress = \"{peer}\"\nlocal_address = \"{me}\"\n\
             remote_as = 65001\npassive = true\nhold_time = 90\n\
             import = \"accept\"\nexport = \"accept\"\n{neighbor}",
            sock.display()
        );
        let cfg = dir.join("tesserad.toml");
        std::fs::write(&cfg, conf).expect("write config");
        let log = std::fs::File::create(dir.join("tesserad.log")).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_tesserad"))
            .arg("-c")
            .arg(&cfg)
            .env("RUST_LOG", "debug")
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("spawn tesserad");
        let d = Daemon { child, dir, sock };
        wait_for(10, "tesserad's CLI socket", || {
            d.request(r#"{"command":"show_status"}"#).map(|_| Some(()))
        });
        d
    }

    pub fn request(&self, req: &str) -> Result<String, String> {
        let mut s = UnixStream::connect(&self.sock).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        writeln!(s, "{{\"version\":1,\"request\":{req}}}").map_err(|e| e.to_string())?;
        let mut line = String::new();
        BufReader::new(s)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        Ok(line)
    }

    pub fn has_route(&self, prefix: &str) -> bool {
        self.request(&format!(
            r#"{{"command":"show_route","prefix":"{prefix}","all":true}}"#
        ))
        .map(|r| r.contains(prefix) && !r.contains("\"error\""))
        .unwrap_or(false)
    }
}

pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Result<Option<T>, String>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    let mut last = String::new();
    loop {
        match f() {
            Ok(Some(v)) => return v,
            Ok(None) => {}
            Err(e) => last = e,
        }
        assert!(
            Instant::now() < end,
            "timed out after {secs} s waiting for {what} (last error: {last})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn message(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(ty);
    m.extend_from_slice(body);
    m
}

pub fn open(asn: u16, id: Ipv4Addr, enhanced: bool) -> Vec<u8> {
    // Capabilities: MP IPv4 unicast (1), route refresh (2), 4-octet AS (65,
    // AS 65001), enhanced route refresh (70).
    let mut caps = vec![1, 4, 0, 1, 0, 1, 2, 0, 65, 4, 0, 0, 0xfd, 0xe9];
    if enhanced {
        caps.extend_from_slice(&[70, 0]);
    }
    let mut body = vec![4];
    body.extend_from_slice(&asn.to_be_bytes());
    body.extend_from_slice(&90u16.to_be_bytes());
    body.extend_from_slice(&id.octets());
    body.push(caps.len() as u8 + 2);
    body.push(2);
    body.push(caps.len() as u8);
    body.extend_from_slice(&caps);
    message(1, &body)
}

/// An OPEN from 2-octet `asn` with MP IPv4 unicast, route refresh, 4-octet
/// AS and the capabilities in `extra` (already TLV-encoded).
pub fn open_with(asn: u16, id: Ipv4Addr, extra: &[u8]) -> Vec<u8> {
    let mut caps = vec![1, 4, 0, 1, 0, 1, 2, 0, 65, 4, 0, 0];
    caps.extend_from_slice(&asn.to_be_bytes());
    caps.extend_from_slice(extra);
    let mut body = vec![4];
    body.extend_from_slice(&asn.to_be_bytes());
    body.extend_from_slice(&90u16.to_be_bytes());
    body.extend_from_slice(&id.octets());
    body.push(caps.len() as u8 + 2);
    body.push(2);
    body.push(caps.len() as u8);
    body.extend_from_slice(&caps);
    message(1, &body)
}

pub fn refresh(subtype: u8) -> Vec<u8> {
    message(ROUTE_REFRESH, &[0, 1, subtype, 1])
}

/// An IPv4 UPDATE announcing `/24`s `a.b.c.0` from AS 65001.
pub fn announce(nh: Ipv4Addr, prefixes: &[[u8; 3]]) -> Vec<u8> {
    announce_path(&[65001], nh, prefixes)
}

/// An IPv4 UPDATE announcing `/24`s `a.b.c.0` with AS_PATH `path` (one
/// AS_SEQUENCE, 4-octet ASNs).
pub fn announce_path(path: &[u32], nh: Ipv4Addr, prefixes: &[[u8; 3]]) -> Vec<u8> {
    let mut attrs = vec![0x40, 1, 1, 0]; // ORIGIN IGP
    attrs.extend_from_slice(&[0x40, 2, 2 + 4 * path.len() as u8, 2, path.len() as u8]);
    for a in path {
        attrs.extend_from_slice(&a.to_be_bytes());
    }
    attrs.extend_from_slice(&[0x40, 3, 4]);
    attrs.extend_from_slice(&nh.octets());
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(&attrs);
    for p in prefixes {
        body.push(24);
        body.extend_from_slice(p);
    }
    message(UPDATE, &body)
}

pub struct Peer {
    s: TcpStream,
}

impl Peer {
    pub fn connect(from: Ipv4Addr, to: SocketAddr, enhanced: bool) -> Peer {
        Self::connect_open(
            from,
            to,
            &open(65001u16, Ipv4Addr::new(10, 0, 0, 2), enhanced),
        )
    }

    /// Connects from `from` and completes the handshake with `open_msg`.
    pub fn connect_open(from: Ipv4Addr, to: SocketAddr, open_msg: &[u8]) -> Peer {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        sock.bind(&SocketAddr::new(from.into(), 0).into())
            .expect("bind source");
        let mut tries = 0;
        while let Err(e) = sock.connect_timeout(&to.into(), Duration::from_secs(2)) {
            tries += 1;
            assert!(tries < 50, "connect to tesserad at {to}: {e}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let s: TcpStream = sock.into();
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut p = Peer { s };
        p.send(open_msg);
        let (ty, _) = p.read().expect("OPEN from tesserad");
        assert_eq!(ty, 1, "expected OPEN");
        p.send(&message(KEEPALIVE, &[]));
        let (ty, _) = p.read().expect("KEEPALIVE from tesserad");
        assert_eq!(ty, KEEPALIVE, "expected KEEPALIVE after OPEN");
        p
    }

    pub fn send(&mut self, m: &[u8]) {
        self.s.write_all(m).expect("send to tesserad");
    }

    /// Next message (type, body); `None` on timeout or close.
    pub fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 19];
        self.s.read_exact(&mut h).ok()?;
        let len = usize::from(u16::from_be_bytes([h[16], h[17]]));
        let mut body = vec![0u8; len.checked_sub(19)?];
        self.s.read_exact(&mut body).ok()?;
        Some((h[18], body))
    }

    /// Next message that is not a KEEPALIVE.
    pub fn read_non_keepalive(&mut self) -> Option<(u8, Vec<u8>)> {
        loop {
            let m = self.read()?;
            if m.0 != KEEPALIVE {
                return Some(m);
            }
        }
    }
}
