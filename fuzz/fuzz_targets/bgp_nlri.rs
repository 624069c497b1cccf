//! An NLRI field (RFC 4271 §4.3, RFC 4760 §5) without path identifiers.
//! First byte, bit 0: 0 IPv4, 1 IPv6.
#![no_main]

use base::Afi;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, nlri)) = data.split_first() else {
        return;
    };
    let afi = if sel & 1 == 0 { Afi::Ipv4 } else { Afi::Ipv6 };
    bgp_wire::fuzz_support::decode_nlri(nlri, false, afi);
});
