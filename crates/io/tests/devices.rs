//! Frames from hostA arrive on an AF_PACKET and on an AF_XDP socket on the
//! router's interface, and frames the router's socket sends arrive at hostA.
//! Needs root; see common/mod.rs for the topology.

mod common;

use common::*;
use io::packet::{PacketConfig, PacketSocket};
use io::xdp::{XdpMode, XdpProgram, XskConfig, XskSocket};
use pkt::{Batch, Device, Pool};
use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const N: u32 = 500;

/// Sleeps until `dev` may have frames, up to `ms`.
fn wait_rx<D: Device>(dev: &D, ms: i32) {
    match dev.poll_fd() {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            unsafe { libc::poll(&mut p, 1, ms) };
        }
        None => std::thread::sleep(Duration::from_millis(ms as u64)),
    }
}

/// Receives until every seq in 0..N was seen or `timeout`; returns the set.
fn collect<D: Device>(dev: &mut D, timeout: Duration) -> BTreeSet<u32> {
    let pool = Pool::new(256);
    let mut b = Batch::with_capacity(64);
    let mut seen = BTreeSet::new();
    let end = Instant::now() + timeout;
    while (seen.len() as u32) < N && Instant::now() < end {
        let got = dev.rx_burst(&pool, &mut b, 64);
        for p in b.drain() {
            if let Some(s) = frame_seq(p.data()) {
                seen.insert(s);
            }
        }
        assert!(dev.last_error().is_none(), "rx: {:?}", dev.last_error());
        if got == 0 {
            wait_rx(dev, 20);
        }
    }
    seen
}

fn send_all<D: Device>(dev: &mut D, dst: [u8; 6], src: [u8; 6]) {
    let pool = Pool::new(64);
    let mut b = Batch::with_capacity(1);
    for s in 0..N {
        let f = test_frame(dst, src, s, 100 + (s as usize % 1200));
        b.push(pool.alloc_from(&f).expect("buffer")).expect("room");
        let end = Instant::now() + Duration::from_secs(5);
        while dev.tx_burst(&mut b) == 0 {
            assert!(dev.last_error().is_none(), "tx: {:?}", dev.last_error());
            assert!(Instant::now() < end, "TX ring stayed full");
            dev.flush();
            std::thread::sleep(Duration::from_millis(1));
        }
        if s % 32 == 31 {
            dev.flush();
        }
    }
    dev.flush();
    assert!(dev.last_error().is_none(), "tx: {:?}", dev.last_error());
}

/// Router side opens its device with `open`, receives N frames from hostA,
/// then sends N frames back; hostA uses AF_PACKET both ways.
fn round_trip<D, F>(open: F)
where
    D: Device,
    F: FnOnce() -> D + Send + 'static,
{
    let t = Topo::new(1);
    let (ready_tx, ready_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let router = in_ns(&t.r, move || {
        let mut dev = open();
        ready_tx.send(()).expect("ready");
        let seen = collect(&mut dev, Duration::from_secs(10));
        go_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("hostA listening");
        send_all(&mut dev, MAC_A0, MAC_R0);
        (seen, dev.stats())
    });
    let (a_ready_tx, a_ready_rx) = mpsc::channel();
    let host = in_ns(&t.a, move || {
        let mut dev = PacketSocket::open(&PacketConfig::new("a0")).expect("AF_PACKET on a0");
        ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("router ready");
        send_all(&mut dev, MAC_R0, MAC_A0);
        a_ready_tx.send(()).expect("a ready");
        collect(&mut dev, Duration::from_secs(10))
    });
    a_ready_rx
        .recv_timeout(Duration::from_secs(20))
        .expect("hostA sent");
    go_tx.send(()).expect("go");
    let (seen_r, stats) = join_within(router, Duration::from_secs(30), "router thread");
    let seen_a = join_within(host, Duration::from_secs(30), "hostA thread");
    assert_eq!(
        seen_r.len() as u32,
        N,
        "router received {} of {N} frames",
        seen_r.len()
    );
    assert_eq!(
        seen_a.len() as u32,
        N,
        "hostA received {} of {N} frames back",
        seen_a.len()
    );
    assert!(
        stats.rx >= u64::from(N) && stats.tx == u64::from(N),
        "{stats:?}"
    );
}

#[test]
fn af_packet_receives_and_sends() {
    round_trip(|| PacketSocket::open(&PacketConfig::new("r0")).expect("AF_PACKET on r0"));
}

#[test]
fn af_xdp_receives_and_sends() {
    round_trip(|| {
        let prog = XdpProgram::attach("r0", XdpMode::Skb, 1).expect("attach XDP program to r0");
        XskSocket::open(&prog, &XskConfig::new(0)).expect("AF_XDP socket on r0 queue 0")
    });
}

#[test]
fn missing_interface_is_a_clear_error() {
    let e = PacketSocket::open(&PacketConfig::new("no-such-if0")).err();
    assert_eq!(e, Some(io::IoError::NoSuchInterface));
    let e = XdpProgram::attach("no-such-if0", XdpMode::Skb, 1).err();
    assert_eq!(e, Some(io::IoError::NoSuchInterface));
}
