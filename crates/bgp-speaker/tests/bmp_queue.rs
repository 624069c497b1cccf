//! The BMP edge against a collector that stops reading (a TCP listener on
//! 127.0.0.1 in the test): producers never wait, the full queue is dropped
//! and counted, the stuck connection is closed, tesserad reconnects and
//! resynchronises (Initiation, Peer Up again), live messages flow on the
//! new connection, and shutdown ends it with a Termination.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use base::{AfiSafi, Asn, Prefix};
use bgp_core::{LinkAddrs, SessionUp};
use bgp_fsm::Negotiated;
use bgp_speaker::bmp::{BmpHub, Counts, RibAccess};
use bgp_wire::{Nlri, ParseCtx, UpdateMessage};
use bmp::decode::{message_len, Message};

const PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9));

fn up() -> SessionUp {
    SessionUp {
        negotiated: Negotiated {
            peer_asn: Asn(65009),
            peer_bgp_id: Ipv4Addr::new(192, 0, 2, 9),
            hold_time: 90,
            keepalive_interval: 30,
            four_octet_asn: true,
            families: vec![AfiSafi::IPV4_UNICAST],
            add_path: Vec::new(),
            ext_next_hop_rx: Vec::new(),
            ext_next_hop_tx: Vec::new(),
            extended_message: false,
            route_refresh: true,
            enhanced_route_refresh: false,
            graceful_restart: None,
            llgr: None,
            local_role: None,
            peer_role: None,
            fqdn: None,
        },
        local_addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 179),
        remote_addr: SocketAddr::new(PEER, 40000),
        eor_barrier: None,
        since: std::time::SystemTime::now(),
        session: 1,
        link: LinkAddrs::default(),
    }
}

fn open(asn: u16, id: [u8; 4]) -> Vec<u8> {
    let o = bgp_wire::OpenMessage {
        version: 4,
        my_as: asn,
        hold_time: 90,
        bgp_id: Ipv4Addr::from(id),
        params: Vec::new(),
        extended_params: false,
    };
    let mut b = Vec::new();
    o.encode(ParseCtx::legacy(), &mut b).unwrap();
    b
}

/// An UPDATE withdrawing `n` /24s from 198.19.`k`.0 on: about 4 n octets.
fn big_update(n: u32) -> Vec<u8> {
    let withdrawn = (0..n)
        .map(|i| {
            Nlri::new(Prefix::V4(
                base::Prefix4::new(0xC613_0000 | (i << 8), 24).unwrap(),
            ))
        })
        .collect();
    let u = UpdateMessage {
        withdrawn,
        attributes: Vec::new(),
        nlri: Vec::new(),
    };
    let mut b = Vec::new();
    u.encode(ParseCtx::legacy(), &mut b).unwrap();
    b
}

fn accept(l: &TcpListener, within: Duration) -> TcpStream {
    let t0 = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(t0.elapsed() < within, "no BMP connection within {within:?}");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Reads whole BMP messages until `want` of them came (bounded by the
/// read timeout); returns their raw bytes.
fn read_msgs(s: &mut TcpStream, want: usize) -> Vec<Vec<u8>> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    while out.len() < want {
        while let Ok(Some(len)) = message_len(&buf) {
            if buf.len() < len {
                break;
            }
            out.push(buf.drain(..len).collect::<Vec<u8>>());
            if out.len() == want {
                return out;
            }
        }
        let n = s.read(&mut chunk).expect("read from tesserad");
        assert!(n > 0, "connection closed after {} messages", out.len());
        buf.extend_from_slice(&chunk[..n]);
    }
    out
}

fn msg_type(m: &[u8]) -> u8 {
    m[5]
}

#[test]
fn stuck_collector_overflows_is_dropped_and_resynced() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let cfg = config::Bmp {
        sys_name: Some("test".into()),
        sys_descr: None,
        collectors: vec![config::BmpCollector {
            addr,
            monitoring: config::BmpMonitoring {
                pre_policy: true,
                post_policy: false,
                loc_rib: false,
                ..Default::default()
            },
            stats_interval: 0,
            // About 15 MB of the UPDATEs below: more than the socket
            // buffers, so the task is blocked in a write when it overflows.
            queue: 4096,
            reconnect_max: 1,
        }],
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let hub = BmpHub::new(&cfg, Ipv4Addr::new(192, 0, 2, 1), 65000);
    // Established before the collector connects: in its first Peer Up list.
    hub.peer_up(
        &up(),
        &open(65000, [192, 0, 2, 1]),
        &open(65009, [192, 0, 2, 9]),
    );
    hub.start(
        rt.handle(),
        RibAccess {
            dump: Box::new(|_, _| Ok(Vec::new())),
            counts: Box::new(|| Ok(Counts::new())),
        },
    );

    // Connection 1: Initiation, Peer Up, End-of-RIB (IPv4 unicast), then
    // the collector stops reading.
    let mut c1 = accept(&l, Duration::from_secs(10));
    let first = read_msgs(&mut c1, 3);
    assert_eq!(
        first.iter().map(|m| msg_type(m)).collect::<Vec<_>>(),
        [4, 3, 0]
    );
    match Message::decode(&first[1]).unwrap().0 {
        Message::PeerUp { peer, .. } => assert_eq!((peer.address, peer.asn), (PEER, 65009)),
        m => panic!("{m:?}"),
    }

    // Producers never wait: push until the queue overflowed (socket
    // buffers hold a few MB; 100,000 x 3.6 kB is far more).
    let upd = big_update(900);
    let mut pushed = 0u32;
    while hub.info()[0].overflows == 0 {
        hub.received_update(PEER, &upd);
        pushed += 1;
        assert!(pushed < 100_000, "no overflow after {pushed} messages");
    }
    let i = &hub.info()[0];
    assert!(i.dropped > 4096, "{i:?}");

    // Without a byte read from connection 1, tesserad gives it up (in the
    // middle of a write: no Termination) and connects again.
    let mut c2 = accept(&l, Duration::from_secs(10));
    let t0 = Instant::now();
    let mut sink = [0u8; 65536];
    loop {
        match c1.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => assert!(t0.elapsed() < Duration::from_secs(20), "never closed"),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("connection 1: {e}"),
        }
    }

    // Connection 2: the resync, then live messages.
    let again = read_msgs(&mut c2, 3);
    assert_eq!(
        again.iter().map(|m| msg_type(m)).collect::<Vec<_>>(),
        [4, 3, 0]
    );
    let small = big_update(2);
    hub.received_update(PEER, &small);
    let live = read_msgs(&mut c2, 1);
    match Message::decode(&live[0]).unwrap().0 {
        Message::RouteMonitoring { peer, update } => {
            assert_eq!(peer.address, PEER);
            assert_eq!(update, &small[..]);
        }
        m => panic!("{m:?}"),
    }
    let i = &hub.info()[0];
    assert_eq!(
        (i.state.as_str(), i.connects, i.overflows),
        ("Up", 2, 1),
        "{i:?}"
    );
    assert!(i.last_error.contains("overflow"), "{i:?}");

    // Shutdown: Termination, then the connection closes.
    hub.shutdown();
    let term = read_msgs(&mut c2, 1);
    assert_eq!(msg_type(&term[0]), 5);
    let mut rest = Vec::new();
    let _ = c2.read_to_end(&mut rest);
    assert!(rest.is_empty(), "nothing after the Termination");
    rt.shutdown_timeout(Duration::from_secs(1));
}
