//! One UMEM shared by the two ports of one core, as that core's packet
//! pool (`io::xdp::XskUmem`, `XDP_SHARED_UMEM`): hostA -- router -- hostB
//! with the crate's static forwarder on the router (kernel forwarding off,
//! no addresses on the router), both AF_XDP sockets on one UMEM.
//!
//! Proven, on the generic and on veth's native XDP hook:
//! * every UDP datagram crosses;
//! * no copy of ours: each socket counts zero frames copied in or out
//!   (`DevStats::rx_copied`/`tx_copied`), the UMEM counts every forwarded
//!   frame as sent in place and none copied, no bad descriptor;
//! * no frame leaks: once traffic stops, the pool's free list is back to
//!   its size after the sockets opened (and the kernel holds exactly the
//!   fill rings' frames again);
//! * the private UMEMs (copy mode, the fallback) do count their copies, so
//!   the zero above is a counter that moves.
//!
//! Also what the kernel gives for the bind flags on veth: `XDP_ZEROCOPY`
//! (printed: veth offers no zero-copy, the bind is refused) and no flag
//! (binds, in copy mode).
//!
//! Needs root; see common/mod.rs for the topology (deleted on drop, also on
//! failure). About 2 s per case.

mod common;

use common::*;
#[allow(dead_code)]
#[path = "../examples/fwd/forwarder.rs"]
mod fwd;

use fwd::{FwdCounters, LoopConfig, Route4, StaticForwarder};
use io::xdp::{UmemStats, XdpMode, XdpProgram, XskBind, XskConfig, XskSocket, XskUmem};
use pkt::{Batch, DevStats, Device};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const UDP_N: u32 = 3000;
/// Frames in each socket's fill ring (`XskConfig::frame_count / 2`): room
/// for about 100 ms of the paced load while the router thread waits for a
/// CPU on a loaded machine (256 lost datagrams once in 12 runs).
const FILL: u32 = 1024;

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
/// its thread running.
struct StopOnDrop(Arc<AtomicBool>);
impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A 16 MiB receive buffer (the receiver may be descheduled a while on a
/// shared machine; the test is about forwarding).
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

/// hostA sends UDP_N paced datagrams of 600 bytes to hostB; returns how
/// many distinct ones hostB got.
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
            if len == 600 {
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
        let mut buf = [0x5au8; 600];
        for i in 0..UDP_N {
            buf[0..4].copy_from_slice(&i.to_be_bytes());
            s.send_to(&buf, (B_IP, 5001)).expect("send");
            // Paced (bursts of 10, about 10k/s): a router descheduled for
            // a few ms must not overflow a ring.
            if i % 10 == 9 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    join_within(client, Duration::from_secs(20), "udp client");
    join_within(server, Duration::from_secs(20), "udp server")
}

/// What the router thread reports.
struct Report {
    c: FwdCounters,
    stats: Vec<DevStats>,
    buffers: Vec<&'static str>,
    /// The UMEM right after the sockets opened, and at the end.
    umem: Option<(UmemStats, UmemStats)>,
}

/// Forwards UDP_N datagrams through the router, its two sockets on one
/// shared UMEM (`shared`) or each on its own.
fn forward(mode: XdpMode, shared: bool) -> Report {
    let t = Topo::new(1);
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    let (ready_tx, ready_rx) = mpsc::channel();
    let stop2 = Arc::clone(&stop);
    let router = in_ns(&t.r, move || -> Report {
        let progs: Vec<_> = ["r0", "r1"]
            .iter()
            .map(|i| XdpProgram::attach(i, mode, 1).expect("attach XDP program"))
            .collect();
        let xc = XskConfig {
            frame_count: 2 * FILL,
            ring_size: FILL,
            ..XskConfig::new(0)
        };
        let umem = shared.then(|| XskUmem::new(4 * FILL, 2048).expect("UMEM"));
        let mut ports: Vec<XskSocket> = progs
            .iter()
            .map(|p| match &umem {
                Some(u) => XskSocket::open_shared(p, &xc, u).expect("AF_XDP socket, shared UMEM"),
                None => XskSocket::open(p, &xc).expect("AF_XDP socket"),
            })
            .collect();
        let at_start = umem.as_ref().map(XskUmem::stats);
        let mut f = forwarder();
        ready_tx.send(()).expect("ready");
        fwd::run(&mut ports, &mut f, LoopConfig::default(), &stop2).expect("forwarding loop");
        // Traffic has stopped: frames still in flight come back through
        // the completion rings, which a poll reads (bounded wait).
        let end = Instant::now() + Duration::from_secs(3);
        let pool = pkt::Pool::new(8);
        let mut b = Batch::with_capacity(32);
        while let (Some(u), Some(s0)) = (&umem, at_start) {
            for p in &mut ports {
                p.rx_burst(&pool, &mut b, 32);
                b.clear();
            }
            if u.stats().free == s0.free || Instant::now() > end {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Report {
            c: f.counters,
            stats: ports.iter().map(|p| p.stats()).collect(),
            buffers: ports.iter().map(|p| p.buffers()).collect(),
            umem: at_start.zip(umem.as_ref().map(XskUmem::stats)),
        }
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("forwarder ready");
    let udp = udp_transfer(&t);
    // Let the last completions arrive while the forwarder still polls.
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let r = join_within(router, Duration::from_secs(15), "forwarder");
    eprintln!(
        "{mode:?} shared={shared}: udp {udp}/{UDP_N}, counters {:?}\nports {:?}\nbuffers {:?}\numem {:?}",
        r.c, r.stats, r.buffers, r.umem
    );
    assert_eq!(udp, UDP_N, "UDP datagrams delivered");
    assert!(r.c.forwarded >= u64::from(UDP_N), "{:?}", r.c);
    let tx: u64 = r.stats.iter().map(|s| s.tx).sum();
    assert_eq!(
        tx, r.c.forwarded,
        "every forwarded frame queued on a TX ring"
    );
    r
}

fn shared_forwards_without_copies(mode: XdpMode) {
    let r = forward(mode, true);
    assert_eq!(r.buffers, ["shared-umem", "shared-umem"]);
    for s in &r.stats {
        assert_eq!((s.rx_copied, s.tx_copied, s.errors), (0, 0, 0), "{s:?}");
    }
    let (start, end) = r.umem.expect("UMEM counters");
    let fwd = r.c.forwarded;
    assert_eq!(end.tx_in_place, fwd, "every forwarded frame sent in place");
    assert!(end.rx_in_place >= fwd, "{end:?}");
    assert_eq!((end.tx_copied, end.bad_descs), (0, 0), "{end:?}");
    // No leak: the free list is back to its size after the sockets
    // opened, the kernel holds the two fill rings' frames, and every frame
    // is one or the other.
    assert_eq!(start.with_kernel, 2 * FILL as usize, "{start:?}");
    assert_eq!(
        (end.free, end.with_kernel),
        (start.free, start.with_kernel),
        "frames leaked: {start:?} -> {end:?}"
    );
    assert_eq!(end.free + end.with_kernel, end.frames);
}

#[test]
fn shared_umem_forwards_without_copies_generic_hook() {
    shared_forwards_without_copies(XdpMode::Skb);
}

#[test]
fn shared_umem_forwards_without_copies_native_hook() {
    shared_forwards_without_copies(XdpMode::Driver);
}

/// The fallback copies, and says so: the counters of the test above move.
#[test]
fn private_umems_count_their_copies() {
    let r = forward(XdpMode::Skb, false);
    assert_eq!(r.buffers, ["copy", "copy"]);
    let rx: u64 = r.stats.iter().map(|s| s.rx_copied).sum();
    let tx: u64 = r.stats.iter().map(|s| s.tx_copied).sum();
    assert!(rx >= r.c.forwarded && tx == r.c.forwarded, "{:?}", r.stats);
}

/// What the kernel gives on veth for each bind mode of a shared UMEM.
#[test]
fn bind_modes_on_veth() {
    let t = Topo::new(1);
    let h = in_ns(&t.r, || {
        let prog = XdpProgram::attach("r0", XdpMode::Driver, 1).expect("attach");
        let mut out = Vec::new();
        for bind in [XskBind::ZeroCopy, XskBind::Auto, XskBind::Copy] {
            let umem = XskUmem::new(1024, 2048).expect("UMEM");
            let xc = XskConfig {
                frame_count: 256,
                ring_size: 256,
                bind,
                ..XskConfig::new(0)
            };
            // The queue stays taken a moment after the previous probe's
            // socket closed (the kernel releases its buffer pool in a
            // deferred work item): EBUSY then, so retry for a while.
            let end = Instant::now() + Duration::from_secs(3);
            let r = loop {
                let r = XskSocket::open_shared(&prog, &xc, &umem).map(|s| s.zero_copy());
                match r {
                    Err(e) if e.errno() == Some(libc::EBUSY) && Instant::now() < end => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    r => break r,
                }
            };
            // A refused bind leaks no frame: the socket's fill ring frames
            // went back with it.
            assert_eq!(umem.stats().free, 1024, "{bind:?}");
            out.push((bind, r.map_err(|e| e.to_string())));
        }
        out
    });
    let out = join_within(h, Duration::from_secs(10), "bind probe");
    eprintln!("bind modes on veth (native hook): {out:?}");
    for (bind, r) in out {
        match bind {
            // Zero-copy where the driver offers it; veth does not, and
            // then the bind must fail rather than copy.
            XskBind::ZeroCopy => assert!(matches!(r, Err(_) | Ok(true)), "{r:?}"),
            // These bind; copy mode is copy mode.
            XskBind::Auto => assert!(r.is_ok(), "{r:?}"),
            XskBind::Copy => assert_eq!(r, Ok(false)),
        }
    }
}
