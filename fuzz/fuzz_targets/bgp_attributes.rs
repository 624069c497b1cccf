//! A path attribute list (RFC 4271 §4.3) under every session context: the
//! first byte selects the context (see `ctx.rs`), the rest is the list.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "ctx.rs"]
mod ctx;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, attrs)) = data.split_first() else {
        return;
    };
    bgp_wire::fuzz_support::decode_attributes(attrs, ctx::ctx_from_byte(sel));
});
