//! The raw peer of `rfc7606_exabgp.rs`: a hand-rolled BGP speaker (OPEN,
//! KEEPALIVE, then UPDATE bytes built here) for the RFC 7606 classes that
//! ExaBGP 4.2 cannot produce (see the parent module's docs). Its socket
//! lives in the lab's leaf namespace through `raw_relay_child`.

use super::{compact, config, neighbor, poll, Lab, Report, Tesserad, Want};
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

/// Set in the environment of the re-run test binary: `UNIX_PATH|ADDR:PORT`.
const RELAY_ENV: &str = "TESSERA_RFC7606_RELAY";

/// Not a test of its own: when run with `TESSERA_RFC7606_RELAY` set (by
/// `raw_peer_framing_errors`, inside a leaf namespace) it connects to
/// tesserad over TCP, then to the test's unix socket, and copies bytes both
/// ways until either side closes. Without the variable it does nothing.
#[test]
fn raw_relay_child() {
    let Ok(spec) = std::env::var(RELAY_ENV) else {
        return;
    };
    let (path, target) = spec.split_once('|').expect("RELAY spec PATH|ADDR");
    let addr: std::net::SocketAddr = target.parse().expect("relay target address");
    let end = Instant::now() + Duration::from_secs(10);
    let tcp = loop {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(s) => break s,
            Err(e) if Instant::now() > end => panic!("relay: connect {addr}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let _ = tcp.set_nodelay(true);
    let unix = UnixStream::connect(path).expect("relay: connect to the test's unix socket");
    let (mut t_r, mut u_w) = (
        tcp.try_clone().expect("clone"),
        unix.try_clone().expect("clone"),
    );
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut t_r, &mut u_w);
        let _ = u_w.shutdown(std::net::Shutdown::Both);
    });
    let (mut u_r, mut t_w) = (unix, tcp);
    let _ = std::io::copy(&mut u_r, &mut t_w);
    let _ = t_w.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
    std::process::exit(0);
}

/// A BGP message: marker, length, type, body.
fn msg(t: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(t);
    m.extend_from_slice(body);
    m
}

/// A path attribute TLV (extended length when the value needs it).
fn attr(flags: u8, code: u8, value: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    if value.len() > 255 {
        a.extend_from_slice(&[flags | 0x10, code]);
        a.extend_from_slice(&(value.len() as u16).to_be_bytes());
    } else {
        a.extend_from_slice(&[flags, code, value.len() as u8]);
    }
    a.extend_from_slice(value);
    a
}

fn update(withdrawn: &[u8], attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut b = (withdrawn.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(withdrawn);
    b.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    b.extend_from_slice(attrs);
    b.extend_from_slice(nlri);
    msg(2, &b)
}

const RAW_AS: u32 = 65003;

fn origin() -> Vec<u8> {
    attr(0x40, 1, &[0])
}
fn as_path() -> Vec<u8> {
    let mut v = vec![2, 1];
    v.extend_from_slice(&RAW_AS.to_be_bytes());
    attr(0x40, 2, &v)
}
fn next_hop(nh: [u8; 4]) -> Vec<u8> {
    attr(0x40, 3, &nh)
}

/// The raw speaker's end of one session, through the relay.
struct RawPeer {
    s: UnixStream,
    buf: Vec<u8>,
}

impl RawPeer {
    /// Starts relay `n` in `ns` towards `target` and waits for it.
    fn connect(lab: &Lab, n: usize, ns: &str, target: &str) -> Result<RawPeer, String> {
        let path = lab.path(&format!("relay{n}.sock"));
        let _ = std::fs::remove_file(&path);
        let l = UnixListener::bind(&path).map_err(|e| format!("bind {}: {e}", path.display()))?;
        l.set_nonblocking(true).map_err(|e| e.to_string())?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let spec = format!("{}|{target}", path.display());
        lab.spawn(
            &format!("relay{n}"),
            ns,
            &[
                &exe.display().to_string(),
                "raw::raw_relay_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ],
            &[(RELAY_ENV, spec.as_str())],
        );
        let end = Instant::now() + Duration::from_secs(12);
        loop {
            match l.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).map_err(|e| e.to_string())?;
                    return Ok(RawPeer { s, buf: Vec::new() });
                }
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => return Err(format!("relay{n} never connected to tesserad: {e}")),
            }
        }
    }

    fn send(&mut self, m: &[u8]) -> Result<(), String> {
        self.s.write_all(m).map_err(|e| format!("send: {e}"))
    }

    /// The next message, `Ok(None)` on timeout, `Err` when the connection
    /// closed.
    fn recv(&mut self, timeout: Duration) -> Result<Option<(u8, Vec<u8>)>, String> {
        let end = Instant::now() + timeout;
        loop {
            if self.buf.len() >= 19 {
                let len = usize::from(u16::from_be_bytes([self.buf[16], self.buf[17]]));
                if len < 19 {
                    return Err(format!("bad length {len} from tesserad"));
                }
                if self.buf.len() >= len {
                    let t = self.buf[18];
                    let body = self.buf[19..len].to_vec();
                    self.buf.drain(..len);
                    return Ok(Some((t, body)));
                }
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.s
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|e| e.to_string())?;
            let mut tmp = [0u8; 4096];
            match self.s.read(&mut tmp) {
                Ok(0) => return Err("connection closed by tesserad".into()),
                Ok(k) => self.buf.extend_from_slice(&tmp[..k]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    /// OPEN (AS 65003, hold 90, MP IPv4+IPv6 unicast, 4-octet AS), then
    /// KEEPALIVE both ways.
    fn establish(&mut self, id: [u8; 4]) -> Result<(), String> {
        let mut caps = vec![2, 6, 1, 4, 0, 1, 0, 1, 2, 6, 1, 4, 0, 2, 0, 1, 2, 6, 65, 4];
        caps.extend_from_slice(&RAW_AS.to_be_bytes());
        let mut open = vec![4];
        open.extend_from_slice(&(RAW_AS as u16).to_be_bytes());
        open.extend_from_slice(&90u16.to_be_bytes());
        open.extend_from_slice(&id);
        open.push(caps.len() as u8);
        open.extend_from_slice(&caps);
        self.send(&msg(1, &open))?;
        let end = Instant::now() + Duration::from_secs(10);
        let mut got_open = false;
        while Instant::now() < end {
            match self.recv(Duration::from_millis(200))? {
                Some((1, _)) => {
                    got_open = true;
                    self.send(&msg(4, &[]))?;
                }
                Some((4, _)) if got_open => return Ok(()),
                Some((3, b)) => return Err(format!("NOTIFICATION during OPEN: {b:02x?}")),
                _ => {}
            }
        }
        Err("no OPEN + KEEPALIVE from tesserad within 10 s".into())
    }

    /// Reads for `d`; returns the first NOTIFICATION body if one came.
    fn notification_within(&mut self, d: Duration) -> Result<Option<Vec<u8>>, String> {
        let end = Instant::now() + d;
        while Instant::now() < end {
            if let Some((3, b)) = self.recv(end.saturating_duration_since(Instant::now()))? {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }
}

/// `10.88.k.0/24` as NLRI and as CLI text.
fn pfx(k: u8) -> (Vec<u8>, String) {
    (vec![24, 10, 88, k], format!("10.88.{k}.0/24"))
}

#[test]
fn raw_peer_framing_errors() {
    if !super::common::ready(&["ip"]) {
        return;
    }
    let lab = Lab::star("rfc7606-raw", 1);
    let leaf = lab.leaf(1).clone();
    let t = Tesserad::start(&lab, &config(vec![neighbor(&lab, 1, RAW_AS, 90)]));
    let target = format!("{}:179", leaf.center_v4);
    let id = [198, 18, 1, 2];
    let nh = next_hop(id);
    let own_v4: [u8; 4] = leaf
        .center_v4
        .parse::<std::net::Ipv4Addr>()
        .expect("center address")
        .octets();
    let mut n = 0;
    let mut connect = |lab: &Lab| -> RawPeer {
        n += 1;
        let mut p = RawPeer::connect(lab, n, &leaf.ns, &target).unwrap_or_else(|e| lab.fail(&e));
        p.establish(id)
            .unwrap_or_else(|e| lab.fail(&format!("raw peer session {n}: {e}")));
        lab.wait(10, "tesserad: raw peer Established", || {
            t.established(&leaf.v4).map(|u| u.then_some(()))
        });
        p
    };
    let mut rep = Report::default();
    let mut p = connect(&lab);

    // Session-keeping cases, one prefix each.
    let base = [origin(), as_path(), nh.clone()].concat();
    let comm = |v: u32| attr(0xc0, 8, &((RAW_AS << 16) | v).to_be_bytes());
    type Raw = (&'static str, &'static str, Vec<u8>, Want);
    let keep: Vec<Raw> = vec![
        (
            "NEXT_HOP length 5",
            "§7.3",
            [origin(), as_path(), attr(0x40, 3, &[198, 18, 1, 2, 0])].concat(),
            Want::Withdraw,
        ),
        (
            "last attribute overruns the attribute block",
            "§4",
            [base.clone(), vec![0xc0, 8, 8, 0, 0, 0, 1]].concat(),
            Want::Withdraw,
        ),
        (
            "2 octets left after the last attribute",
            "§4",
            [base.clone(), vec![0xc0, 8]].concat(),
            Want::Withdraw,
        ),
        (
            "ORIGIN missing",
            "§3 d",
            [as_path(), nh.clone()].concat(),
            Want::Withdraw,
        ),
        (
            "AS_PATH missing",
            "§3 d",
            [origin(), nh.clone()].concat(),
            Want::Withdraw,
        ),
        (
            "NEXT_HOP missing (IPv4 NLRI)",
            "§3 d",
            [origin(), as_path()].concat(),
            Want::Withdraw,
        ),
        (
            "LOCAL_PREF length 2 from eBGP",
            "§7.5",
            [base.clone(), attr(0x40, 5, &[0, 7])].concat(),
            Want::Discard("\"local_pref\":7"),
        ),
        (
            "LOCAL_PREF 7 from eBGP",
            "§7.5",
            [base.clone(), attr(0x40, 5, &7u32.to_be_bytes())].concat(),
            Want::Discard("\"local_pref\":7"),
        ),
        (
            "COMMUNITIES twice (keep the first)",
            "§3 g",
            [base.clone(), comm(1), comm(2)].concat(),
            Want::Discard("[65003,2]"),
        ),
        (
            "NEXT_HOP 0.0.0.0",
            "§7.3; RFC 4271 §6.3",
            [origin(), as_path(), next_hop([0, 0, 0, 0])].concat(),
            Want::Withdraw,
        ),
        (
            "NEXT_HOP multicast 224.0.0.5",
            "§7.3; RFC 4271 §6.3",
            [origin(), as_path(), next_hop([224, 0, 0, 5])].concat(),
            Want::Withdraw,
        ),
        (
            "NEXT_HOP broadcast 255.255.255.255",
            "§7.3; RFC 4271 §6.3",
            [origin(), as_path(), next_hop([255; 4])].concat(),
            Want::Withdraw,
        ),
        (
            "NEXT_HOP class E 240.0.0.1",
            "§7.3; RFC 4271 §6.3",
            [origin(), as_path(), next_hop([240, 0, 0, 1])].concat(),
            Want::Withdraw,
        ),
        (
            "NEXT_HOP is tesserad's own address",
            "§7.3; RFC 4271 §6.3",
            [origin(), as_path(), next_hop(own_v4)].concat(),
            Want::Withdraw,
        ),
        (
            "AS_PATH holds AS 0",
            "RFC 7607 §2; §7.2",
            [
                origin(),
                attr(0x40, 2, &[2, 2, 0, 0, 0xfd, 0xeb, 0, 0, 0, 0]),
                nh.clone(),
            ]
            .concat(),
            Want::Withdraw,
        ),
        (
            "AS_CONFED_SEQUENCE from a peer outside the confederation",
            "RFC 5065 §5; §7.2",
            [
                origin(),
                attr(0x40, 2, &[3, 1, 0, 0, 0xfd, 0xf2, 2, 1, 0, 0, 0xfd, 0xeb]),
                nh.clone(),
            ]
            .concat(),
            Want::Withdraw,
        ),
        (
            "AS_CONFED_SET from a peer outside the confederation",
            "RFC 5065 §5; §7.2",
            [
                origin(),
                attr(0x40, 2, &[2, 1, 0, 0, 0xfd, 0xeb, 4, 1, 0, 0, 0xfd, 0xf2]),
                nh.clone(),
            ]
            .concat(),
            Want::Withdraw,
        ),
        (
            "AGGREGATOR AS 0",
            "RFC 7607 §2; §7.7",
            [base.clone(), attr(0xc0, 7, &[0, 0, 0, 0, 10, 0, 1, 2])].concat(),
            Want::Discard("\"aggregator\":["),
        ),
    ];
    for (k, (name, rfc, attrs, want)) in keep.into_iter().enumerate() {
        let (nlri, prefix) = pfx(k as u8 + 1);
        let got = (|| -> Result<String, String> {
            p.send(&msg(4, &[]))?;
            let closed = |p: &mut RawPeer, what: &str| -> String {
                match p.notification_within(Duration::from_millis(300)) {
                    Ok(Some(b)) => format!("session reset instead ({what}): NOTIFICATION {b:02x?}"),
                    Ok(None) => format!("{what}; session still up"),
                    Err(e) => format!("{what}; session closed: {e}"),
                }
            };
            if let Want::Withdraw = want {
                p.send(&update(&[], &base, &nlri))?;
                poll(5.0, || t.route(&prefix))
                    .map_err(|_| format!("setup: well-formed {prefix} never installed"))?;
            }
            p.send(&update(&[], &attrs, &nlri))?;
            let res = match want {
                Want::Withdraw => poll(4.0, || Ok(t.route(&prefix)?.is_none().then_some(())))
                    .map(|()| "withdrawn".to_string())
                    .map_err(|_| {
                        let r = t.route(&prefix).ok().flatten().unwrap_or_default();
                        closed(&mut p, &format!("route kept: {}", compact(&r)))
                    })?,
                Want::Discard(needle) => {
                    let r = poll(4.0, || t.route(&prefix))
                        .map(|r| compact(&r))
                        .map_err(|_| {
                            closed(&mut p, "route not installed (treated as withdraw?)")
                        })?;
                    if r.contains(needle) {
                        return Err(format!(
                            "route kept WITH the attribute to discard ({needle}): {r}"
                        ));
                    }
                    if name.starts_with("COMMUNITIES") && !r.contains("[65003,1]") {
                        return Err(format!("the first COMMUNITIES was not kept: {r}"));
                    }
                    "installed without the attribute".to_string()
                }
                Want::Reset(..) | Want::Accept => unreachable!("not a keep case"),
            };
            if let Some(b) = p.notification_within(Duration::from_millis(100))? {
                return Err(format!("{res}, but tesserad sent NOTIFICATION {b:02x?}"));
            }
            if !t.established(&leaf.v4)? {
                return Err(format!("{res}, but the session is no longer Established"));
            }
            Ok(format!("{res}, session up"))
        })();
        let broken = got
            .as_ref()
            .is_err_and(|e| e.contains("closed") || e.contains("reset"));
        rep.add(name, rfc, want, got);
        if broken {
            p = connect(&lab);
        }
    }

    // MP_REACH_NLRI next hops (RFC 4760 §3, RFC 2545 §3) held to the
    // same rule as NEXT_HOP: treat-as-withdraw, session up.
    let v6 = |a: &str| -> Vec<u8> {
        a.parse::<std::net::Ipv6Addr>()
            .expect("IPv6 address")
            .octets()
            .to_vec()
    };
    let mp_nh = |nh: &[u8], k: u8| -> Vec<u8> {
        let mut v = vec![0, 2, 1, nh.len() as u8];
        v.extend_from_slice(nh);
        v.extend_from_slice(&[0, 64, 0x20, 0x01, 0x0d, 0xb8, 0x88, 0x00, 0x00, k]);
        [origin(), as_path(), attr(0x80, 14, &v)].concat()
    };
    let good6 = v6(&leaf.v6);
    let mp_cases: Vec<(&str, Vec<u8>)> = vec![
        ("MP_REACH_NLRI next hop ::1 (loopback)", v6("::1")),
        ("MP_REACH_NLRI next hop :: (unspecified)", v6("::")),
        ("MP_REACH_NLRI next hop ff02::1 (multicast)", v6("ff02::1")),
        (
            "MP_REACH_NLRI next hop is tesserad's own address",
            v6(&leaf.center_v6),
        ),
        (
            "MP_REACH_NLRI 32-octet next hop, second not link-local",
            [good6.clone(), v6("2001:db8::1")].concat(),
        ),
    ];
    for (k, (name, bad)) in mp_cases.into_iter().enumerate() {
        let k = k as u8 + 1;
        let prefix = format!("2001:db8:8800:{k}::/64");
        let got = (|| -> Result<String, String> {
            p.send(&update(&[], &mp_nh(&good6, k), &[]))?;
            poll(5.0, || t.route(&prefix))
                .map_err(|_| format!("setup: well-formed {prefix} never installed"))?;
            p.send(&update(&[], &mp_nh(&bad, k), &[]))?;
            poll(4.0, || Ok(t.route(&prefix)?.is_none().then_some(()))).map_err(|_| {
                let r = t.route(&prefix).ok().flatten().unwrap_or_default();
                format!("route kept: {}", compact(&r))
            })?;
            if let Some(b) = p.notification_within(Duration::from_millis(100))? {
                return Err(format!(
                    "withdrawn, but tesserad sent NOTIFICATION {b:02x?}"
                ));
            }
            if !t.established(&leaf.v4)? {
                return Err("withdrawn, but the session is no longer Established".into());
            }
            Ok("withdrawn, session up".into())
        })();
        let broken = got.as_ref().is_err_and(|e| e.contains("closed"));
        rep.add(
            name,
            "§7.3, §7.11; RFC 4271 §6.3; RFC 4291 §2.5",
            Want::Withdraw,
            got,
        );
        if broken {
            p = connect(&lab);
        }
    }

    // Session-reset cases: one session each.
    let mp = |nh_len: u8, nlri: &[u8]| -> Vec<u8> {
        let mut v = vec![0, 2, 1, nh_len];
        v.extend_from_slice(
            &[0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2][..usize::from(nh_len)],
        );
        v.push(0);
        v.extend_from_slice(nlri);
        attr(0x80, 14, &v)
    };
    let v6_nlri = [48u8, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x88];
    let (nlri1, _) = pfx(100);
    let resets: Vec<(&str, &str, Vec<u8>, Want)> = vec![
        (
            "MP_REACH_NLRI twice",
            "§3 g",
            update(
                &[],
                &[origin(), as_path(), mp(16, &v6_nlri), mp(16, &v6_nlri)].concat(),
                &[],
            ),
            Want::Reset(3, 1),
        ),
        (
            "NLRI field: prefix length 33",
            "§5.3; RFC 4271 §6.3",
            update(&[], &base, &[33, 10, 88, 9, 0, 0]),
            Want::Reset(3, 10),
        ),
        (
            "withdrawn routes length overruns the message",
            "§4; RFC 4271 §6.3",
            {
                let mut m = update(&[], &base, &nlri1);
                m[19] = 0x01; // withdrawn length 256+ : past the end
                m
            },
            Want::Reset(3, 1),
        ),
        (
            "MP_REACH_NLRI IPv6 prefix length 200",
            "§5.3, §7.11; RFC 4760 §7",
            update(
                &[],
                &[origin(), as_path(), mp(16, &[200, 0x20, 0x01])].concat(),
                &[],
            ),
            Want::Reset(3, 9),
        ),
        (
            "MP_UNREACH_NLRI IPv6 prefix length 200",
            "§5.3, §7.11; RFC 4760 §7",
            update(&[], &attr(0x80, 15, &[0, 2, 1, 200, 0x20, 0x01]), &[]),
            Want::Reset(3, 9),
        ),
        // RFC 4271 §6.1: a length that does not suit the type is a header
        // error, Bad Message Length, whatever the body holds.
        (
            "KEEPALIVE with a 1-octet body (length 20)",
            "RFC 4271 §4.4, §6.1",
            msg(4, &[0]),
            Want::Reset(1, 2),
        ),
        (
            "UPDATE of 22 octets",
            "RFC 4271 §4.3, §6.1",
            msg(2, &[0, 0, 0]),
            Want::Reset(1, 2),
        ),
        (
            "OPEN of 28 octets",
            "RFC 4271 §4.2, §6.1",
            msg(1, &[4, 0xfd, 0xeb, 0, 90, 10, 0, 1, 2]),
            Want::Reset(1, 2),
        ),
        (
            "NOTIFICATION of 20 octets",
            "RFC 4271 §4.5, §6.1",
            msg(3, &[6]),
            Want::Reset(1, 2),
        ),
        (
            "ROUTE-REFRESH of 22 octets (no enhanced route refresh)",
            "RFC 2918 §3; RFC 4271 §6.1",
            msg(5, &[0, 1, 0]),
            Want::Reset(1, 2),
        ),
    ];
    for (name, rfc, m, want) in resets {
        let Want::Reset(code, sub) = want else {
            unreachable!("reset table")
        };
        let got = (|| -> Result<String, String> {
            p.send(&m)?;
            let b = match p.notification_within(Duration::from_secs(5)) {
                Ok(Some(b)) => b,
                Ok(None) => {
                    return Err(format!(
                        "no NOTIFICATION within 5 s; tesserad {}",
                        if t.established(&leaf.v4).unwrap_or(false) {
                            "still Established"
                        } else {
                            "not Established"
                        }
                    ))
                }
                Err(e) => return Err(format!("closed without NOTIFICATION: {e}")),
            };
            if b.len() < 2 || (b[0], b[1]) != (code, sub) {
                return Err(format!("wrong NOTIFICATION {b:02x?}"));
            }
            // The connection must close after the NOTIFICATION.
            match p.recv(Duration::from_secs(3)) {
                Err(_) => {}
                Ok(x) => {
                    return Err(format!(
                        "NOTIFICATION {code}/{sub} but the connection stayed open ({x:02x?})"
                    ))
                }
            }
            Ok(format!("NOTIFICATION {code}/{sub}, session reset"))
        })();
        let still_up = got.as_ref().is_err_and(|e| e.contains("still Established"));
        rep.add(name, rfc, want, got);
        if !still_up {
            lab.wait(10, "tesserad: raw peer session down", || {
                t.established(&leaf.v4).map(|u| (!u).then_some(()))
            });
            p = connect(&lab);
        }
    }
    drop(p);
    rep.finish(&lab, "raw peer cases");
}
