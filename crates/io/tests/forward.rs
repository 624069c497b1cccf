//! hostA -- router -- hostB with our forwarder on the router, over AF_PACKET
//! and over AF_XDP: ping, a UDP transfer and a TCP transfer must succeed,
//! and the forwarder's counters must account for them. Kernel forwarding is
//! off in the router namespace and its interfaces have no addresses, and a
//! ping before the forwarder starts must fail. Needs root.

mod common;

use common::*;
#[allow(dead_code)]
#[path = "../examples/fwd/forwarder.rs"]
mod fwd;

use fwd::{FwdCounters, LoopConfig, Route4, StaticForwarder};
use io::packet::{PacketConfig, PacketSocket};
use io::xdp::{XdpMode, XdpProgram, XskConfig, XskSocket};
use io::IoError;
use pkt::{DevStats, Device};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const UDP_N: u32 = 2000;
const TCP_BYTES: usize = 4 << 20;

fn forwarder() -> StaticForwarder {
    let p = |a: [u8; 4], l| base::Prefix4::new(u32::from_be_bytes(a), l).expect("prefix");
    StaticForwarder::new(
        vec![MAC_R0, MAC_R1],
        vec![
            Route4 {
                prefix: p([198, 18, 1, 0], 24),
                port: 0,
                next_hop_mac: MAC_A0,
            },
            Route4 {
                prefix: p([198, 18, 2, 0], 24),
                port: 1,
                next_hop_mac: MAC_B0,
            },
        ],
    )
    .expect("forwarder")
}

/// Stops the forwarder when dropped, so a failing assertion does not leave
/// its thread spinning.
struct StopOnDrop(Arc<AtomicBool>);
impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn fnv(h: &mut u64, data: &[u8]) {
    for b in data {
        *h = (*h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
}

/// A receive buffer of 16 MiB (SO_RCVBUFFORCE: the tests run as root), so
/// a receiving thread descheduled for a while on the shared 2-core machine
/// does not drop datagrams the forwarder delivered: these tests are about
/// forwarding, not about the receiver keeping up.
fn big_rcvbuf(s: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = 16 << 20;
    // SAFETY: setsockopt reads one c_int from a live local; the fd is open.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&v as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUFFORCE: {}", std::io::Error::last_os_error());
}

fn udp_transfer(t: &Topo) -> u32 {
    let (ready_tx, ready_rx) = mpsc::channel();
    let server = in_ns(&t.b, move || {
        let s = UdpSocket::bind((B_IP, 5001)).expect("bind udp");
        big_rcvbuf(&s);
        s.set_read_timeout(Some(Duration::from_secs(3)))
            .expect("timeout");
        ready_tx.send(()).expect("ready");
        let mut buf = [0u8; 2048];
        let mut seen = vec![false; UDP_N as usize];
        let mut n = 0;
        while n < UDP_N {
            let Ok(len) = s.recv(&mut buf) else { break };
            if len == 1000 {
                let seq = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if let Some(slot) = seen.get_mut(seq) {
                    if !*slot {
                        *slot = true;
                        n += 1;
                    }
                }
            }
        }
        n
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("udp server ready");
    let client = in_ns(&t.a, move || {
        let s = UdpSocket::bind((A_IP, 0)).expect("bind");
        let mut buf = [0x5au8; 1000];
        for i in 0..UDP_N {
            buf[0..4].copy_from_slice(&i.to_be_bytes());
            s.send_to(&buf, (B_IP, 5001)).expect("send");
            // Paced (about 10k datagrams/s in bursts of 10) so that a
            // router or receiver thread descheduled for a few ms on this
            // shared 2-core machine does not overflow a ring or the
            // receiver's socket buffer: the test is about forwarding, not
            // about loss under overload.
            if i % 10 == 9 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    join_within(client, Duration::from_secs(20), "udp client");
    join_within(server, Duration::from_secs(20), "udp server")
}

fn tcp_transfer(t: &Topo) -> (usize, u64, u64) {
    let (ready_tx, ready_rx) = mpsc::channel();
    let server = in_ns(&t.b, move || {
        let l = TcpListener::bind((B_IP, 5002)).expect("bind tcp");
        l.set_nonblocking(true).expect("nonblocking");
        ready_tx.send(()).expect("ready");
        let end = Instant::now() + Duration::from_secs(10);
        let mut c = loop {
            match l.accept() {
                Ok((c, _)) => break c,
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => panic!("accept: {e}"),
            }
        };
        c.set_nonblocking(false).expect("blocking");
        c.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let mut buf = vec![0u8; 65536];
        let (mut n, mut h) = (0usize, 0xcbf2_9ce4_8422_2325u64);
        loop {
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    fnv(&mut h, &buf[..k]);
                    n += k;
                }
                Err(e) => panic!("tcp read after {n} bytes: {e}"),
            }
        }
        (n, h)
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("tcp server ready");
    let client = in_ns(&t.a, move || {
        let mut c = TcpStream::connect_timeout(
            &(B_IP.parse::<std::net::IpAddr>().expect("ip"), 5002).into(),
            Duration::from_secs(5),
        )
        .expect("tcp connect through the forwarder");
        c.set_write_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let data: Vec<u8> = (0..TCP_BYTES)
            .map(|i| (i.wrapping_mul(31) >> 3) as u8)
            .collect();
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        fnv(&mut h, &data);
        c.write_all(&data).expect("tcp write");
        c.shutdown(std::net::Shutdown::Write).expect("shutdown");
        h
    });
    let sent_hash = join_within(client, Duration::from_secs(30), "tcp client");
    let (n, h) = join_within(server, Duration::from_secs(30), "tcp server");
    (n, h, sent_hash)
}

fn ping(t: &Topo, count: u32) -> (bool, String) {
    let c = count.to_string();
    t.exec(
        &t.a,
        &["ping", "-n", "-c", &c, "-i", "0.2", "-W", "2", B_IP],
        Duration::from_secs(15),
    )
}

/// The whole scenario with router ports opened by `open` ("r0", "r1").
fn forward_through<D, F>(open: F)
where
    D: Device<Error = IoError>,
    F: Fn(&str) -> D + Send + 'static,
{
    let t = Topo::new(1);
    let (ok, out) = t.exec(
        &t.r,
        &["sysctl", "-n", "net.ipv4.ip_forward"],
        Duration::from_secs(5),
    );
    assert!(
        ok && out.trim() == "0",
        "kernel forwarding must be off in the router: {out}"
    );
    let (ok, out) = ping(&t, 1);
    assert!(
        !ok,
        "ping crossed the router before our forwarder ran: {out}"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    let (ready_tx, ready_rx) = mpsc::channel();
    let stop2 = Arc::clone(&stop);
    let router = in_ns(&t.r, move || -> (FwdCounters, Vec<DevStats>) {
        let mut ports = vec![open("r0"), open("r1")];
        let mut f = forwarder();
        ready_tx.send(()).expect("ready");
        fwd::run(&mut ports, &mut f, LoopConfig::default(), &stop2).expect("forwarding loop");
        (f.counters, ports.iter().map(|p| p.stats()).collect())
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("forwarder ready");

    let (ok, out) = ping(&t, 5);
    assert!(
        ok && out.contains("5 received"),
        "ping through the forwarder: {out}"
    );
    let udp = udp_transfer(&t);
    let (tcp_n, tcp_h, sent_h) = tcp_transfer(&t);

    stop.store(true, Ordering::Relaxed);
    let (c, stats) = join_within(router, Duration::from_secs(10), "forwarder");
    eprintln!(
        "forwarder counters {c:?}\nport stats {stats:?}\nudp {udp}/{UDP_N}, tcp {tcp_n} bytes"
    );
    assert_eq!(udp, UDP_N, "UDP datagrams delivered");
    assert_eq!(
        (tcp_n, tcp_h),
        (TCP_BYTES, sent_h),
        "TCP stream delivered intact"
    );
    // 5 echo requests + 5 replies, every datagram, and TCP's segments
    // (at least 4 MiB / 1448 B one way) all crossed our code.
    let min = 10 + u64::from(UDP_N) + (TCP_BYTES / 1448) as u64;
    assert!(
        c.forwarded >= min,
        "forwarded {} < {min}: {c:?}",
        c.forwarded
    );
    let tx: u64 = stats.iter().map(|s| s.tx).sum();
    assert_eq!(
        tx, c.forwarded,
        "every forwarded frame was queued on a TX ring"
    );
    assert!(
        stats[0].rx > u64::from(UDP_N) && stats[1].rx > 5,
        "{stats:?}"
    );
    assert_eq!(
        c.ttl_expired + c.no_route + c.hairpin + c.bad_header,
        0,
        "{c:?}"
    );
}

#[test]
fn forwards_ping_udp_tcp_over_af_packet() {
    forward_through(|ifc| PacketSocket::open(&PacketConfig::new(ifc)).expect("AF_PACKET socket"));
}

#[test]
fn forwards_ping_udp_tcp_over_af_xdp() {
    forward_through(|ifc| {
        let prog = XdpProgram::attach(ifc, XdpMode::Skb, 1).expect("attach XDP program");
        XskSocket::open(&prog, &XskConfig::new(0)).expect("AF_XDP socket")
    });
}
