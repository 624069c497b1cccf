//! MRT dumps from a live session: every received message as BGP4MP_ET
//! MESSAGE_AS4 and every state change as STATE_CHANGE_AS4, read back with
//! the `mrt` crate and with Debian's `bgpdump -m`; file rotation.

mod session_common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use base::{AfiSafi, Asn};
use bgp_fsm::ConnectionMode;
use bgp_speaker::mrt_dump::{MrtDumpConfig, MrtPeer, MrtSink};
use bgp_speaker::msg::RibInput;
use bgp_speaker::sess::{spawn_session, Registry};
use mrt::{Body, MrtReader};
use session_common::*;
use tokio::net::TcpListener;

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_messages_and_states_dumped_and_readable_by_bgpdump() {
    let tmp = TempDir::new("mrt-session");
    let (sink, dumper) = MrtSink::start(MrtDumpConfig {
        template: format!("{}/updates.%Y%m%d.%H%M", tmp.path().display()),
        interval: None,
    })
    .expect("start MRT writer");

    let us = IpAddr::from([127, 78, 9, 1]);
    let peer_ip = IpAddr::from([127, 78, 9, 2]);
    let l = TcpListener::bind(SocketAddr::new(peer_ip, 0))
        .await
        .expect("bind");
    let (rib, mut rx) = rib_channel();
    let mut p = params(
        l.local_addr().expect("addr"),
        us,
        65002,
        ConnectionMode::Both,
    );
    p.fsm.families = vec![AfiSafi::IPV4_UNICAST];
    let h = spawn_session(
        &tokio::runtime::Handle::current(),
        p,
        rib,
        &Registry::default(),
        Some(sink.clone()),
    );
    let (s, _) = tokio::time::timeout(Duration::from_secs(5), l.accept())
        .await
        .expect("connect in time")
        .expect("accept");
    let mut peer = RawPeer::new(s);
    peer.handshake(65002, Ipv4Addr::new(10, 255, 0, 2)).await;
    expect_input(&mut rx, 5, "Up", |i| {
        matches!(i, RibInput::Up { .. }).then_some(())
    })
    .await;

    // 10.66.0.0/16, AS_PATH 65002 65010, NEXT_HOP 192.0.2.1, community
    // 65002:7.
    let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 10, 2, 2];
    a.extend_from_slice(&65002u32.to_be_bytes());
    a.extend_from_slice(&65010u32.to_be_bytes());
    a.extend_from_slice(&[0x40, 3, 4, 192, 0, 2, 1]);
    a.extend_from_slice(&[0xc0, 8, 4]);
    a.extend_from_slice(&((65002u32 << 16) | 7).to_be_bytes());
    let mut body = vec![0, 0];
    body.extend_from_slice(&(a.len() as u16).to_be_bytes());
    body.extend_from_slice(&a);
    body.extend_from_slice(&[16, 10, 66]);
    let upd = message(2, &body);
    peer.send(&upd).await;
    expect_input(&mut rx, 5, "Updates", |i| {
        matches!(i, RibInput::Updates { .. }).then_some(())
    })
    .await;
    assert!(sink.flush(Duration::from_secs(5)), "MRT writer flushed");
    drop(h);

    let fs = files(tmp.path());
    assert_eq!(fs.len(), 1, "one file without rotation: {fs:?}");
    let path = &fs[0];

    // Our reader: messages OPEN, KEEPALIVE, UPDATE in order with the
    // peering; state changes Idle -> Connect -> OpenSent -> OpenConfirm ->
    // Established (RFC 6396 numbering 1..6).
    let mut r = MrtReader::open(path).expect("open dump");
    let mut types = Vec::new();
    let mut states = Vec::new();
    let mut saw_update = false;
    while let Some(rec) = r.next_record() {
        let rec = rec.expect("valid record");
        assert_eq!(rec.header.mrt_type, mrt::types::BGP4MP_ET);
        assert!(rec.header.microseconds.is_some());
        match rec.body {
            Body::Message(m) => {
                assert_eq!(m.subtype, mrt::subtypes::MESSAGE_AS4);
                assert_eq!(m.peering.peer_ip, peer_ip);
                assert_eq!(m.peering.local_ip, us);
                assert_eq!(m.peering.local_as, Asn(65001));
                assert_eq!(m.peering.peer_as, Asn(65002));
                let ty = m.bgp_type().expect("BGP type");
                if ty == 2 {
                    assert_eq!(m.message, &upd[..], "the UPDATE as received");
                    saw_update = true;
                }
                types.push(ty);
            }
            Body::StateChange(s) => {
                assert_eq!(s.subtype, mrt::subtypes::STATE_CHANGE_AS4);
                states.push((s.old_state, s.new_state));
            }
            other => panic!("unexpected record {other:?}"),
        }
    }
    assert!(saw_update);
    assert_eq!(types.first(), Some(&1), "OPEN first: {types:?}");
    assert!(types.contains(&4), "KEEPALIVE recorded: {types:?}");
    assert_eq!(
        states,
        vec![(1, 2), (2, 4), (4, 5), (5, 6)],
        "Idle->Connect->OpenSent->OpenConfirm->Established"
    );

    // Debian bgpdump agrees.
    let out = std::process::Command::new("bgpdump")
        .arg("-m")
        .arg(path)
        .output()
        .expect("bgpdump must be installed (Debian bgpdump)");
    let text = String::from_utf8_lossy(&out.stdout);
    let announce = text
        .lines()
        .find(|l| l.contains("|A|"))
        .unwrap_or_else(|| panic!("no announcement line in bgpdump output:\n{text}"));
    let f: Vec<&str> = announce.split('|').collect();
    assert_eq!(f.first(), Some(&"BGP4MP_ET"), "{announce}");
    assert_eq!(f.get(3), Some(&"127.78.9.2"), "{announce}");
    assert_eq!(f.get(4), Some(&"65002"), "{announce}");
    assert_eq!(f.get(5), Some(&"10.66.0.0/16"), "{announce}");
    assert_eq!(f.get(6), Some(&"65002 65010"), "{announce}");
    assert_eq!(f.get(7), Some(&"IGP"), "{announce}");
    assert_eq!(f.get(8), Some(&"192.0.2.1"), "{announce}");
    assert_eq!(f.get(11), Some(&"65002:7"), "{announce}");
    let state_lines: Vec<&str> = text.lines().filter(|l| l.contains("|STATE|")).collect();
    assert_eq!(state_lines.len(), 4, "{text}");
    assert!(state_lines[3].ends_with("|5|6"), "{}", state_lines[3]);
    assert!(
        state_lines[3].starts_with("BGP4MP_ET|"),
        "{}",
        state_lines[3]
    );

    drop(sink);
    let _ = dumper;
}

#[test]
fn rotation_starts_a_new_file_per_interval() {
    let tmp = TempDir::new("mrt-rotate");
    let (sink, dumper) = MrtSink::start(MrtDumpConfig {
        template: format!("{}/u.%H%M%S.gz", tmp.path().display()),
        interval: Some(Duration::from_secs(1)),
    })
    .expect("start");
    let peer = MrtPeer {
        peer_as: Asn(65002),
        local_as: Asn(65001),
        peer_ip: IpAddr::from([192, 0, 2, 2]),
        local_ip: IpAddr::from([192, 0, 2, 1]),
    };
    let keepalive = message(4, &[]);
    sink.message(&peer, &keepalive);
    sink.state_change(&peer, 0, 1);
    std::thread::sleep(Duration::from_millis(1100));
    sink.message(&peer, &keepalive);
    assert!(sink.flush(Duration::from_secs(5)));
    drop(sink);
    dumper.finish().expect("writer ends cleanly");

    let fs = files(tmp.path());
    assert_eq!(fs.len(), 2, "two one-second intervals: {fs:?}");
    let mut total = 0;
    for f in &fs {
        assert!(f.to_string_lossy().ends_with(".gz"));
        let mut r = MrtReader::open(f).expect("open");
        assert_eq!(r.compression(), mrt::Compression::Gzip);
        while let Some(rec) = r.next_record() {
            rec.expect("valid record");
            total += 1;
        }
    }
    assert_eq!(total, 3);
}
