//! One path attribute of a chosen type, so that every attribute decoder
//! (ORIGIN, AS_PATH, NEXT_HOP, MED, LOCAL_PREF, ATOMIC_AGGREGATE,
//! AGGREGATOR, COMMUNITIES, ORIGINATOR_ID, CLUSTER_LIST, MP_REACH_NLRI,
//! MP_UNREACH_NLRI, EXTENDED_COMMUNITIES, AS4_PATH, AS4_AGGREGATOR,
//! IPV6_EXTENDED_COMMUNITIES, LARGE_COMMUNITY, ONLY_TO_CUSTOMER, unknown)
//! gets inputs with a well-formed TLV frame around them.
//!
//! Input: context byte (see `ctx.rs`), type code, flags, then the value.
//! The TLV is rebuilt with the right length field (extended length when
//! the value needs it, RFC 4271 §4.3) and decoded as a one-entry list.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "ctx.rs"]
mod ctx;

fuzz_target!(|data: &[u8]| {
    let [sel, type_code, flags, value @ ..] = data else {
        return;
    };
    let Ok(len) = u16::try_from(value.len()) else {
        return;
    };
    let mut flags = *flags;
    if len > 255 {
        flags |= 0x10;
    }
    let mut tlv = Vec::with_capacity(value.len() + 4);
    tlv.push(flags);
    tlv.push(*type_code);
    if flags & 0x10 != 0 {
        tlv.extend_from_slice(&len.to_be_bytes());
    } else {
        tlv.push(len as u8);
    }
    tlv.extend_from_slice(value);
    bgp_wire::fuzz_support::decode_attributes(&tlv, ctx::ctx_from_byte(*sel));
});
