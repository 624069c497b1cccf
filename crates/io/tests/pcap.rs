//! pcap in -> forwarder / pkt::Device -> pcap out, without root.

mod common;

use common::*;
#[allow(dead_code)]
#[path = "../examples/fwd/forwarder.rs"]
mod fwd;

use fwd::{Route4, StaticForwarder};
use io::pcap::PcapDevice;
use io::IoError;
use pkt::Device;

fn tmp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("io-pcap-{}-{name}", std::process::id()))
}

fn input(n: u32) -> (std::path::PathBuf, Vec<Vec<u8>>) {
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|s| test_frame(MAC_R0, MAC_A0, s, 60 + s as usize))
        .collect();
    let p = tmp(&format!("in{n}.pcap"));
    std::fs::write(&p, pkt::pcap::to_bytes(&frames)).expect("write input pcap");
    (p, frames)
}

#[test]
fn pcap_through_the_forwarder() {
    let (inp, frames) = input(20);
    let out = tmp("fwd-out.pcap");
    let mut dev = PcapDevice::open(Some(&inp), Some(&out)).expect("open");
    let p = base::Prefix4::new(0xc612_0200, 24).expect("prefix");
    let mut f = StaticForwarder::new(
        vec![MAC_R0, MAC_R1],
        vec![Route4 {
            prefix: p,
            port: 1,
            next_hop_mac: MAC_B0,
        }],
    )
    .expect("fwd");
    let pool = pkt::Pool::new(64);
    let mut b = pkt::Batch::with_capacity(8);
    let mut staged = pkt::Batch::with_capacity(64);
    while dev.rx_burst(&pool, &mut b, 8) > 0 {
        for mut p in b.drain() {
            if f.process(p.data_mut()) == Some(1) {
                staged.push(p).expect("room");
            }
        }
    }
    assert_eq!(dev.tx_burst(&mut staged), 20);
    dev.flush();
    assert_eq!(dev.last_error(), None);
    assert_eq!(dev.stats().rx, 20);
    dev.finish().expect("finish");
    let got = pkt::pcap::read_frames(&std::fs::read(&out).expect("read out")).expect("parse out");
    assert_eq!(got.len(), frames.len());
    for (g, o) in got.iter().zip(&frames) {
        assert_eq!(&g[0..6], &MAC_B0, "next-hop MAC");
        assert_eq!(&g[6..12], &MAC_R1, "our MAC");
        assert_eq!(g[22], o[22] - 1, "TTL decremented");
        assert_eq!(&g[34..], &o[34..], "payload untouched");
    }
    let _ = std::fs::remove_file(inp);
    let _ = std::fs::remove_file(out);
}

#[test]
fn pcap_as_a_pkt_device() {
    let (inp, frames) = input(300);
    let out = tmp("pkt-out.pcap");
    let mut d = PcapDevice::open(Some(&inp), Some(&out)).expect("open");
    d.set_name("pcap0");
    d.set_kn(16);
    assert_eq!(d.name(), "pcap0");
    let pool = pkt::Pool::new(128);
    let mut b = pkt::Batch::with_capacity(256);
    let mut total = 0;
    loop {
        let n = d.rx_burst(&pool, &mut b, 64);
        assert!(n <= 64, "max bounds one poll");
        if n == 0 {
            break;
        }
        total += n;
        assert_eq!(d.tx_burst(&mut b), n);
        assert!(b.is_empty());
    }
    d.flush();
    assert_eq!(total, 300);
    assert_eq!(pool.available(), 128, "every buffer went back to the pool");
    assert_eq!((d.stats().rx, d.stats().tx), (300, 300));
    d.finish().expect("finish");
    let got = pkt::pcap::read_frames(&std::fs::read(&out).expect("read")).expect("parse");
    assert_eq!(got, frames, "frames come out as they went in");
    let _ = std::fs::remove_file(inp);
    let _ = std::fs::remove_file(out);
}

#[test]
fn malformed_pcap_is_an_error() {
    let p = tmp("bad.pcap");
    std::fs::write(&p, b"not a pcap file at all, no").expect("write");
    assert_eq!(
        PcapDevice::open(Some(&p), None).err(),
        Some(IoError::Pcap("bad magic"))
    );
    let _ = std::fs::remove_file(p);
    let e = PcapDevice::open(Some(std::path::Path::new("/nonexistent/x.pcap")), None).err();
    assert_eq!(e.and_then(|e| e.errno()), Some(libc::ENOENT));
}
