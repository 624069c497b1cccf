//! Zero-copy header views and mutators.
//!
//! Each view borrows the packet bytes. `parse` checks lengths and the
//! fields the rest of the view relies on, so accessors never fail and
//! never panic: fixed header parts are held as `&[u8; N]` (indexing with a
//! constant is checked at compile time), variable parts as slices reached
//! through `get`. Decoders return a small `Copy` error, never panic on
//! short or garbage input (proptested in `tests/never_panics.rs`, fuzzed by
//! `fuzz/fuzz_targets/pkt_headers.rs`).

#![deny(clippy::indexing_slicing)]

pub mod arp;
pub mod ether;
pub mod flow;
pub mod icmp;
pub mod ip4;
pub mod ip6;
pub mod l4;

/// Why a header did not parse.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HdrError {
    /// Fewer bytes than the header needs.
    Short,
    /// The version field is wrong for this header.
    BadVersion,
    /// A header-length field is out of range.
    BadHeaderLen,
    /// A total/payload-length field disagrees with the bytes present.
    BadLength,
    /// A field value this view does not support (e.g. ARP for non-IPv4).
    Unsupported,
}

impl std::fmt::Display for HdrError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            HdrError::Short => "truncated header",
            HdrError::BadVersion => "bad version",
            HdrError::BadHeaderLen => "bad header length",
            HdrError::BadLength => "bad length",
            HdrError::Unsupported => "unsupported header",
        };
        f.write_str(s)
    }
}
impl std::error::Error for HdrError {}

#[inline]
pub(crate) fn be16(b: [u8; 2]) -> u16 {
    u16::from_be_bytes(b)
}

/// Copies the array at `off` out of a fixed-size header. `N + off <= L`
/// is checked when monomorphised (a failed check is a compile-time error
/// in practice: all callers use constants).
#[inline]
pub(crate) fn arr<const L: usize, const N: usize>(h: &[u8; L], off: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(s) = h.get(off..off + N) {
        out.copy_from_slice(s);
    }
    out
}

/// Writes `v` at `off` into a fixed-size header (ignored if out of range,
/// which constant offsets never are).
#[inline]
pub(crate) fn put<const L: usize>(h: &mut [u8; L], off: usize, v: &[u8]) {
    if let Some(s) = h.get_mut(off..off + v.len()) {
        s.copy_from_slice(v);
    }
}
