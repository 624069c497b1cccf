//! The best-route feed end to end: tesserad with `[dataplane] feed_socket`
//! serves its Loc-RIB on a Unix socket (the channel a separate forwarding
//! process reads). A route learned from a peer must arrive with the peer's
//! next hop, and its withdrawal as "no route".
//!
//! Hand-written peer on loopback (127.0.82.0/24); every read has a
//! timeout; tesserad is killed on drop.

mod loopback;

use loopback::{announce, message, wait_for, Daemon, Peer, UPDATE};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::time::Duration;

#[test]
fn feed_carries_next_hops_and_withdrawals() {
    let (me, peer) = (Ipv4Addr::new(127, 0, 82, 1), Ipv4Addr::new(127, 0, 82, 2));
    let port = 17_982;
    let sock = std::env::temp_dir().join(format!("tessera-feed-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let extra = format!(
        "\n[dataplane]\nfeed_socket = \"{}\"\n\n[[dataplane.interface]]\nname = \"lo\"\n\
         addresses = [\"127.0.82.1/24\"]\n",
        sock.display()
    );
    let d = Daemon::start_with("feed", me, peer, port, false, &extra);
    let mut feed = wait_for(
        10,
        "the feed socket",
        || Ok(UnixStream::connect(&sock).ok()),
    );
    feed.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut p = Peer::connect(peer, SocketAddr::new(me.into(), port), false);
    p.send(&announce(peer, &[[198, 51, 100]]));
    let want: base::Prefix = "198.51.100.0/24".parse().expect("prefix");
    let hop = |feed: &mut UnixStream| -> Option<IpAddr> {
        loop {
            let b = fib::feed::read_batch(feed).expect("a feed batch");
            if let Some(c) = b.iter().rev().find(|c| c.prefix == want) {
                return c.next_hop;
            }
        }
    };
    assert_eq!(
        hop(&mut feed),
        Some(IpAddr::V4(peer)),
        "next hop of the learned route"
    );
    p.send(&message(UPDATE, &[0, 4, 24, 198, 51, 100, 0, 0]));
    assert_eq!(hop(&mut feed), None, "withdrawal must read as no route");
    drop(d);
    let _ = std::fs::remove_file(&sock);
}
