//! Every `pkt::hdr` decoder and mutator and the checksum helpers on one
//! input, through the walk shared with `crates/pkt/tests/never_panics.rs`
//! (its assertions are the decoders' documented bounds). The input is
//! walked as a raw frame; then, when it is long enough, its first byte
//! picks a valid frame from `pkt::build` (bits 0-2: builder, bit 3: VLAN
//! tag), the next bytes become its payload, edits and truncation.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/pkt/tests/support/hdr_walk.rs"]
mod hdr_walk;

use hdr_walk::{checksum_props, mutate, tagged, valid_frames, walk, Walk};

fuzz_target!(|data: &[u8]| {
    walk(data);
    mutate(data);
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let (sel16, new32) = match rest {
        [a, b, c, d, e, f, ..] => (
            u16::from_be_bytes([*a, *b]),
            u32::from_be_bytes([*c, *d, *e, *f]),
        ),
        _ => (0, 0),
    };
    checksum_props(rest, usize::from(sel), usize::from(sel16), sel16, new32);

    // A valid frame: addresses and payload from the input.
    let mut a4 = [10, 0, 0, 1];
    let mut a6 = [0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    for (i, b) in rest.iter().take(4).enumerate() {
        a4[i] = *b;
        a6[12 + i] = *b;
    }
    let payload = rest.get(4..).unwrap_or(&[]);
    let payload = &payload[..payload.len().min(64)];
    let frames = valid_frames(payload, a4, a6, sel16);
    let (f, has_l4) = &frames[usize::from(sel & 7)];
    let f = if sel & 8 != 0 {
        tagged(f, sel16)
    } else {
        f.clone()
    };
    assert_eq!(
        walk(&f),
        Walk {
            l2: true,
            l3: true,
            l4: *has_l4
        },
        "a built frame does not decode"
    );
    mutate(&f);
    // Garbage over the frame: the bytes after the payload overwrite it at
    // a stride picked by bits 4-7, and the frame is cut to a length taken
    // from the input.
    let edits = rest.get(4 + payload.len()..).unwrap_or(&[]);
    let mut g = f.clone();
    let stride = usize::from(sel >> 4) + 1;
    for (i, b) in edits.iter().enumerate() {
        let n = g.len();
        g[(i * stride) % n] ^= *b;
    }
    walk(&g);
    mutate(&g);
    let cut = usize::from(sel16) % (f.len() + 1);
    walk(&f[..cut]);
    mutate(&f[..cut]);
});
