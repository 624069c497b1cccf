//! ADD-PATH send (RFC 7911) end to end, against the real `tesserad` binary
//! on loopback: two eBGP peers announce the same prefix over different AS
//! paths, and a third peer that negotiated ADD-PATH receive must get both
//! paths under distinct path identifiers; with `add_path_send = "best-1"`
//! only one. When one source withdraws, exactly that path identifier is
//! withdrawn.
//!
//! Hand-written peers: the assertion is on the path identifiers on the
//! wire, which no Debian daemon's CLI shows. Needs nothing but loopback
//! (127.0.79.0/24, 127.0.80.0/24); every read has a timeout and tesserad is
//! killed on drop.

mod loopback;

use loopback::{announce_path, message, open_with, wait_for, Daemon, Peer, UPDATE};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};

/// ADD-PATH capability (69): IPv4 unicast, we want to receive (1).
const ADD_PATH_RECEIVE: [u8; 6] = [69, 4, 0, 1, 1, 1];

/// (announced, withdrawn) path identifiers of 198.51.100.0/24 in an
/// ADD-PATH IPv4 UPDATE body (NLRI = 4-octet id, length, prefix).
fn path_ids(body: &[u8]) -> (Vec<u32>, Vec<u32>) {
    let parse = |mut b: &[u8]| {
        let mut ids = Vec::new();
        while b.len() >= 5 {
            let id = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let len = usize::from(b[4]);
            let n = len.div_ceil(8);
            if b.len() < 5 + n {
                break;
            }
            if len == 24 && b[5..8] == [198, 51, 100] {
                ids.push(id);
            }
            b = &b[5 + n..];
        }
        ids
    };
    let wl = usize::from(u16::from_be_bytes([body[0], body[1]]));
    let withdrawn = parse(&body[2..2 + wl]);
    let al = usize::from(u16::from_be_bytes([body[2 + wl], body[3 + wl]]));
    let announced = parse(&body[4 + wl + al..]);
    (announced, withdrawn)
}

fn withdraw_plain() -> Vec<u8> {
    message(UPDATE, &[0, 4, 24, 198, 51, 100, 0, 0])
}

/// Runs the scenario; returns the path identifiers the receiver saw
/// announced before the withdrawal, and those withdrawn after it.
fn run(tag: &str, net: u8, port: u16, select: &str) -> (BTreeSet<u32>, BTreeSet<u32>) {
    let ip = |h| Ipv4Addr::new(127, 0, net, h);
    let (me, a, b, rx) = (ip(1), ip(2), ip(3), ip(4));
    let extra = format!(
        "\n[[neighbor]]\nname = \"b\"\naddress = \"{b}\"\nlocal_address = \"{me}\"\n\
         remote_as = 65002\npassive = true\nfamilies = [\"ipv4-unicast\"]\n\
         import = \"accept\"\nexport = \"accept\"\n\
         \n[[neighbor]]\nname = \"rx\"\naddress = \"{rx}\"\nlocal_address = \"{me}\"\n\
         remote_as = 65003\npassive = true\nfamilies = [\"ipv4-unicast\"]\n\
         add_path = \"send\"\n{select}\nimport = \"accept\"\nexport = \"accept\"\n"
    );
    let d = Daemon::start_with(tag, me, a, port, false, &extra);
    let to = SocketAddr::new(me.into(), port);
    let mut pa = Peer::connect_open(a, to, &open_with(65001, Ipv4Addr::new(10, 0, 0, 2), &[]));
    let mut pb = Peer::connect_open(b, to, &open_with(65002, Ipv4Addr::new(10, 0, 0, 3), &[]));
    pa.send(&announce_path(&[65001, 64512], a, &[[198, 51, 100]]));
    pb.send(&announce_path(&[65002, 64513, 64512], b, &[[198, 51, 100]]));
    wait_for(10, "both paths at tesserad", || {
        let r = d.request(r#"{"command":"show_route","prefix":"198.51.100.0/24","all":true}"#)?;
        Ok((r.matches("65001 64512").count() >= 1 && r.contains("65002 64513")).then_some(()))
    });

    let mut prx = Peer::connect_open(
        rx,
        to,
        &open_with(65003, Ipv4Addr::new(10, 0, 0, 4), &ADD_PATH_RECEIVE),
    );
    // The initial table ends with End-of-RIB (an UPDATE of 4 zero bytes).
    let mut announced = BTreeSet::new();
    loop {
        let (ty, body) = prx
            .read_non_keepalive()
            .expect("initial table and End-of-RIB");
        if ty != UPDATE {
            panic!("unexpected message type {ty} in the initial table");
        }
        if body == [0, 0, 0, 0] {
            break;
        }
        announced.extend(path_ids(&body).0);
    }

    // Peer b withdraws: the receiver must see its path's identifier go.
    pb.send(&withdraw_plain());
    let mut withdrawn = BTreeSet::new();
    if announced.len() > 1 {
        let (ty, body) = prx.read_non_keepalive().expect("the withdrawal");
        assert_eq!(ty, UPDATE);
        withdrawn.extend(path_ids(&body).1);
    }
    drop(d);
    (announced, withdrawn)
}

#[test]
fn every_path_is_sent_with_its_own_identifier() {
    let (announced, withdrawn) = run("addpath-all", 79, 17_979, "");
    assert_eq!(
        announced.len(),
        2,
        "expected two paths, got ids {announced:?}"
    );
    assert_eq!(
        withdrawn.len(),
        1,
        "expected one path withdrawn, got {withdrawn:?}"
    );
    assert!(
        withdrawn.is_subset(&announced),
        "withdrew an id never announced"
    );
}

#[test]
fn best_1_sends_one_path() {
    let (announced, _) = run("addpath-best1", 80, 17_980, "add_path_send = \"best-1\"");
    assert_eq!(
        announced.len(),
        1,
        "best-1 must send one path, got ids {announced:?}"
    );
}
