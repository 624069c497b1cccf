//! Wiring of cluster liveness: one BFD session (RFC 5880, single hop
//! RFC 5881) from this node's fabric address to every peer's, with the
//! `[cluster]` timers, run by the daemon's BFD task as sessions of no BGP
//! neighbour ([`bgp_speaker::daemon::Hooks::bfd_sessions`]); its state
//! changes drive [`fib::dataplane::Dataplane::set_node_live`]. A peer
//! counts as dead until its session first comes Up, and again whenever it
//! leaves Up (a dead node leaves the VLB set and the direct targets). The
//! iBGP session to a peer is torn down by the same BFD session when that
//! neighbour has `bfd = true` (fast fall-over, in `bgp_speaker::bfd`).

use std::io::Write;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ::bfd::State;
use bgp_speaker::bfd::{BfdEvent, BfdPeer};
use tokio::sync::mpsc;

/// The BFD sessions to the peers of `k`, sourced from our fabric address.
pub fn sessions(k: &config::Cluster) -> Vec<BfdPeer> {
    let t = Duration::from_millis(u64::from(k.bfd_min_tx_ms));
    k.peers
        .iter()
        .map(|p| BfdPeer {
            peer: p.fabric_address.ip(),
            local: Some(k.fabric_address.ip()),
            config: ::bfd::session::SessionConfig {
                desired_min_tx: t,
                required_min_rx: t,
                detect_mult: k.bfd_multiplier,
            },
            neighbor: None,
            owner: None,
        })
        .collect()
}

/// What a BFD state change means for the live set: `Some((node, live))`
/// for a peer of `k` entering Up (live) or leaving it (dead); `None` for
/// other changes and other addresses.
pub fn change(k: &config::Cluster, ev: &BfdEvent) -> Option<(u16, bool)> {
    let node = node_of(k, ev.peer)?;
    match (ev.from, ev.to) {
        (f, State::Up) if f != State::Up => Some((node, true)),
        (State::Up, t) if t != State::Up => Some((node, false)),
        _ => None,
    }
}

fn node_of(k: &config::Cluster, a: IpAddr) -> Option<u16> {
    k.peers
        .iter()
        .find(|p| p.fabric_address.ip() == a)
        .map(|p| p.node_id)
}

/// Marks every peer dead, then follows the BFD events until the daemon
/// drops its senders or the dataplane is gone. Returns the events' sender
/// for the daemon's hooks. The thread holds the dataplane weakly, so the
/// daemon's shutdown never waits for it.
pub fn start(
    k: &config::Cluster,
    dp: &Arc<fib::dataplane::Dataplane>,
) -> Result<mpsc::UnboundedSender<BfdEvent>, String> {
    for p in &k.peers {
        dp.set_node_live(p.node_id, false);
    }
    let dp = Arc::downgrade(dp);
    let (tx, mut rx) = mpsc::unbounded_channel::<BfdEvent>();
    let k = k.clone();
    let h = std::thread::Builder::new()
        .name("cluster-live".into())
        .spawn(move || {
            while let Some(ev) = rx.blocking_recv() {
                if let Some((node, live)) = change(&k, &ev) {
                    let Some(dp) = dp.upgrade() else { return };
                    dp.set_node_live(node, live);
                    // One write(2), so the line never interleaves with the
                    // log's (tests and operators grep for it).
                    let line = format!(
                        "cluster: node {node} ({}) {}\n",
                        ev.peer,
                        if live { "up" } else { "down" }
                    );
                    let _ = std::io::stderr().write_all(line.as_bytes());
                }
            }
        })
        .map_err(|e| e.to_string())?;
    drop(h);
    Ok(tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> config::Cluster {
        let text = "[router]\nid = \"198.18.100.1\"\nasn = 65000\n\
            [dataplane]\nio = \"af_packet\"\n[[dataplane.interface]]\nname = \"x0\"\n\
            [cluster]\nnode_id = 0\nfabric_address = \"198.18.100.1\"\nbfd_min_tx = 100\n\
            [[cluster.peer]]\nnode_id = 4\nfabric_address = \"198.18.100.5\"\nports = []\n";
        config::parse(text, "t.toml")
            .expect("valid")
            .cluster
            .expect("cluster")
    }

    fn ev(peer: &str, from: State, to: State) -> BfdEvent {
        BfdEvent {
            peer: peer.parse().expect("ip"),
            neighbor: None,
            from,
            to,
            diag: ::bfd::Diag::None,
            remote_state: to,
            at: std::time::SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn sessions_use_the_cluster_timers_and_fabric_addresses() {
        let s = sessions(&cluster());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].peer, "198.18.100.5".parse::<IpAddr>().expect("ip"));
        assert_eq!(s[0].local, Some("198.18.100.1".parse().expect("ip")));
        assert_eq!(s[0].config.desired_min_tx, Duration::from_millis(100));
        assert_eq!(s[0].config.required_min_rx, Duration::from_millis(100));
        assert_eq!(s[0].config.detect_mult, 3);
        assert!(s[0].owner.is_none());
    }

    #[test]
    fn up_and_leaving_up_flip_the_node() {
        let k = cluster();
        let p = "198.18.100.5";
        assert_eq!(change(&k, &ev(p, State::Init, State::Up)), Some((4, true)));
        assert_eq!(change(&k, &ev(p, State::Down, State::Up)), Some((4, true)));
        assert_eq!(change(&k, &ev(p, State::Up, State::Down)), Some((4, false)));
        assert_eq!(
            change(&k, &ev(p, State::Up, State::AdminDown)),
            Some((4, false))
        );
        assert_eq!(change(&k, &ev(p, State::Down, State::Init)), None);
        assert_eq!(change(&k, &ev(p, State::Init, State::Down)), None);
        // Not a peer of the cluster (a BGP neighbour's own session).
        assert_eq!(
            change(&k, &ev("198.18.100.9", State::Init, State::Up)),
            None
        );
    }
}
