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
        ext_next_hop: [AfiSafi::IPV4_UNICAST, AfiSafi::IPV4_MULTICAST]
            .into_iter()
            .filter(|&af| n.ext_next_hop_tx_v6(af))
            .collect(),
        local_v4: link.v4,
        local_v6: link.v6,
        local_v6_link_local: link.v6_link_local,
        route_server: meta.rs_client,
    });
    // RFC 9234 §5: OTC is added on egress towards Customers, Peers and
    // RS-Clients.
    enc.set_peer_role(meta.role);
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
