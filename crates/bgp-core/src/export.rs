//! Building the per-session UPDATE encoder from what was negotiated.

use base::AfiSafi;
use bgp_rib::{AddPathSend, EncodeParams, UpdateEncoder};

use crate::msg::SessionUp;
use crate::peer::PeerMeta;

/// The encoder for one Established session: the negotiated wire options
/// (4-octet ASN, extended message, ADD-PATH send) and the per-session
/// rewriting (next hop, AS prepend, route-server transparency).
pub(crate) fn encoder_for(meta: &PeerMeta, up: &SessionUp) -> UpdateEncoder {
    let n = &up.negotiated;
    // Next hops for both families from the addresses on the session's
    // link (read by the runtime when the session came up).
    let link = up.link;
    let ext_next_hop: Vec<AfiSafi> = [AfiSafi::IPV4_UNICAST, AfiSafi::IPV4_MULTICAST]
        .into_iter()
        .filter(|&af| n.ext_next_hop_tx_v6(af))
        .collect();
    // RFC 8950 over an IPv6 session: our next hop for IPv4 routes is our
    // IPv6 address, as in BIRD, not an IPv4 one the link may also have.
    let ip = up.local_addr.ip();
    let v6_session = matches!(ip, std::net::IpAddr::V6(a) if a.to_ipv4_mapped().is_none());
    let local_v4 = link
        .v4
        .filter(|_| !(v6_session && ext_next_hop.contains(&AfiSafi::IPV4_UNICAST)));
    let mut enc = UpdateEncoder::new(EncodeParams {
        local_asn: meta.local_asn,
        peer_asn: n.peer_asn,
        ebgp: meta.ebgp,
        four_octet_asn: n.four_octet_asn,
        extended_message: n.extended_message,
        families: n.families.clone(),
        add_path_tx: n
            .add_path
            .iter()
            .filter(|a| a.tx)
            .map(|a| a.afi_safi)
            .collect(),
        next_hop: meta.next_hop,
        ext_next_hop,
        local_v4,
        local_v6: link.v6,
        local_v6_link_local: link.v6_link_local,
        route_server: meta.rs_client,
    });
    // RFC 9234 §5: OTC is added on egress towards Customers, Peers and
    // RS-Clients.
    enc.set_peer_role(meta.role);
    // RFC 5065 §5: towards another member AS, our member AS in an
    // AS_CONFED_SEQUENCE, LOCAL_PREF kept, next hop as inside an AS.
    enc.set_confed_member(meta.confed);
    enc
}

/// What the RIB's Adj-RIB-Out keeps for this session: several paths per
/// prefix on the families where ADD-PATH send was negotiated (we sent
/// send, the peer receive; RFC 7911 §4), else `None` (the best path only).
/// Must agree with the encoder's `add_path_tx`, which comes from the same
/// negotiation.
pub(crate) fn add_path_send(meta: &PeerMeta, up: &SessionUp) -> Option<AddPathSend> {
    let n = &up.negotiated;
    let tx = |af: AfiSafi| n.add_path.iter().any(|a| a.afi_safi == af && a.tx);
    let (v4, v6) = (tx(AfiSafi::IPV4_UNICAST), tx(AfiSafi::IPV6_UNICAST));
    (v4 || v6).then_some(AddPathSend {
        ipv4_unicast: v4,
        ipv6_unicast: v6,
        select: meta.add_path_send,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::Asn;
    use bgp_fsm::SessionConfig;
    use bgp_wire::{Capability, ExtNextHop, OpenMessage};
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::time::Duration;

    fn meta() -> PeerMeta {
        PeerMeta {
            name: "p".into(),
            description: String::new(),
            addr: IpAddr::V6(Ipv6Addr::LOCALHOST),
            remote_asn: Asn(65001),
            local_asn: Asn(65000),
            ebgp: true,
            confed: false,
            confed_id: None,
            rr_client: false,
            rs_client: false,
            role: None,
            next_hop: bgp_rib::NextHopMode::Auto,
            max_prefix: None,
            import: crate::PolicyRef::AcceptAll,
            export: crate::PolicyRef::AcceptAll,
            keep_pre_policy: false,
            families: vec![AfiSafi::IPV4_UNICAST],
            mrai: Duration::ZERO,
            add_path_send: bgp_rib::PathSelection::All,
            damping: false,
        }
    }

    /// RFC 8950 over an IPv6 session: IPv4 routes get our IPv6 address as
    /// next hop (as in BIRD), not an IPv4 address of the link; without the
    /// capability they keep the IPv4 one.
    #[test]
    fn ipv4_over_an_ipv6_session_uses_our_ipv6_address_with_rfc8950() {
        let v6: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
        let link = crate::msg::LinkAddrs {
            v4: Some(Ipv4Addr::new(198, 18, 1, 1)),
            v6: Some(v6),
            v6_link_local: None,
        };
        for (enh, want_v4) in [(true, None), (false, link.v4)] {
            let mut cfg = SessionConfig::new(Asn(65000), None, Ipv4Addr::new(10, 0, 0, 1));
            let caps = vec![
                Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
                Capability::ExtendedNextHop(vec![ExtNextHop::IPV4_UNICAST_V6]),
            ];
            let peer = OpenMessage::new(Asn(65001), 90, Ipv4Addr::new(10, 0, 0, 2), caps);
            if enh {
                cfg.ext_next_hop = vec![ExtNextHop::IPV4_UNICAST_V6];
            }
            let n = bgp_fsm::negotiate(&cfg, &cfg.open_message(), &peer).unwrap();
            let up = SessionUp {
                negotiated: n,
                local_addr: SocketAddr::new(IpAddr::V6(v6), 179),
                remote_addr: SocketAddr::new(IpAddr::V6(v6), 40000),
                eor_barrier: None,
                since: std::time::SystemTime::UNIX_EPOCH,
                session: 1,
                link,
            };
            let e = encoder_for(&meta(), &up);
            assert_eq!(e.params().local_v4, want_v4, "extended next hop {enh}");
            assert_eq!(e.params().ext_next_hop.is_empty(), !enh);
        }
    }
}
