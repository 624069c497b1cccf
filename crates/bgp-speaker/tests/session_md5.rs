//! TCP-MD5 (RFC 2385): the socket option on two local sockets (matching
//! key connects, wrong or missing key does not), and a session to BIRD
//! with a password. Skipped, with the reason printed, only when the kernel
//! lacks TCP_MD5SIG (ENOPROTOOPT); any other failure fails.

mod session_common;

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use bgp_fsm::ConnectionMode;
use bgp_speaker::msg::RibInput;
use bgp_speaker::sess::md5::set_md5;
use bgp_speaker::sess::{spawn_session, Registry};
use session_common::*;
use tokio::net::{TcpListener, TcpSocket};

/// False (and a printed reason) when the kernel has no TCP_MD5SIG.
fn kernel_has_md5() -> bool {
    let s = TcpSocket::new_v4().expect("socket");
    match set_md5(s.as_raw_fd(), IpAddr::from([127, 79, 0, 9]), b"probe") {
        Ok(()) => true,
        Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => {
            eprintln!("SKIPPED: this kernel lacks TCP_MD5SIG (ENOPROTOOPT)");
            false
        }
        Err(e) => panic!("TCP_MD5SIG failed for another reason: {e}"),
    }
}

async fn try_connect(from: IpAddr, to: SocketAddr, key: Option<&[u8]>) -> bool {
    let c = TcpSocket::new_v4().expect("socket");
    c.bind(SocketAddr::new(from, 0)).expect("bind client");
    if let Some(k) = key {
        set_md5(c.as_raw_fd(), to.ip(), k).expect("client key");
    }
    matches!(
        tokio::time::timeout(Duration::from_millis(1500), c.connect(to)).await,
        Ok(Ok(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matching_key_connects_wrong_or_missing_key_does_not() {
    if !kernel_has_md5() {
        return;
    }
    let srv = IpAddr::from([127, 79, 1, 1]);
    let cli = IpAddr::from([127, 79, 1, 2]);
    let ls = TcpSocket::new_v4().expect("socket");
    ls.bind(SocketAddr::new(srv, 0)).expect("bind");
    set_md5(ls.as_raw_fd(), cli, b"s3cret").expect("listener key");
    let l: TcpListener = ls.listen(16).expect("listen");
    let addr = l.local_addr().expect("addr");

    assert!(
        !try_connect(cli, addr, Some(b"wrong")).await,
        "a wrong key must not connect"
    );
    assert!(
        !try_connect(cli, addr, None).await,
        "no key must not connect to a keyed listener"
    );
    assert!(
        try_connect(cli, addr, Some(b"s3cret")).await,
        "the matching key connects"
    );
    let accepted = tokio::time::timeout(Duration::from_secs(2), l.accept()).await;
    let (_, from) = accepted.expect("accept in time").expect("accept");
    assert_eq!(from.ip(), cli);

    // Removing the key (empty key) makes unsigned connections work again.
    set_md5(l.as_raw_fd(), cli, b"").expect("remove key");
    assert!(try_connect(cli, addr, None).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn session_with_password_reaches_established_with_bird() {
    if !kernel_has_md5() {
        return;
    }
    let dir = TempDir::new("bird-md5");
    let us = IpAddr::from([127, 77, 9, 1]);
    let bird_ip = IpAddr::from([127, 77, 9, 2]);
    let conf = bird_conf(
        dir.path(),
        us,
        bird_ip,
        true,
        9,
        "password \"tessera-md5\";",
    );
    let _bird = Bird::start(dir.path(), &conf);
    let (rib, mut rx) = rib_channel();
    let mut p = params(
        SocketAddr::new(bird_ip, 179),
        us,
        65002,
        ConnectionMode::Both,
    );
    p.md5_password = Some("tessera-md5".into());
    let _h = spawn_session(
        &tokio::runtime::Handle::current(),
        p,
        rib,
        &Registry::default(),
        None,
    );
    expect_input(&mut rx, 20, "Up with TCP-MD5", |i| {
        matches!(i, RibInput::Up { .. }).then_some(())
    })
    .await;
}
