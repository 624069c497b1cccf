//! Shared by the attribute targets: the first input byte picks the session
//! context, so one corpus explores every combination.

use base::AfiSafi;
use bgp_wire::ParseCtx;

/// bit 0: 4-octet AS numbers (RFC 6793); bit 1: ADD-PATH receive on all
/// four unicast/multicast families (RFC 7911); bit 2: extended messages
/// (RFC 8654); bits 3-4: MRT TABLE_DUMP_V2 RIB context (RFC 6396 §4.3.4):
/// 0 none, 1 IPv4 unicast, 2 IPv6 unicast, 3 IPv4 multicast.
pub fn ctx_from_byte(b: u8) -> ParseCtx {
    let mut ctx = ParseCtx::legacy()
        .with_four_octet_asn(b & 1 != 0)
        .with_extended_message(b & 4 != 0);
    if b & 2 != 0 {
        ctx = ctx.with_add_path_all();
    }
    ctx.mrt_rib = match (b >> 3) & 3 {
        0 => None,
        1 => Some(AfiSafi::IPV4_UNICAST),
        2 => Some(AfiSafi::IPV6_UNICAST),
        _ => Some(AfiSafi::IPV4_MULTICAST),
    };
    ctx
}
