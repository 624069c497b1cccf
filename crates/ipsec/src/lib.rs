//! IPsec ESP (RFC 4303) in tunnel mode with AES-GCM-128 (RFC 4106), as
//! a pure core for the dataplane's `EspEncap` / `EspDecap` elements.
//!
//! What this crate owns:
//! * [`OutboundSa`]: one outbound security association (SPI, key and
//!   salt, tunnel endpoints, sequence counter) that seals an inner IP
//!   packet in place, in a buffer laid out by the caller with
//!   [`FRONT`] bytes before the inner packet and [`trailer_len`] after it.
//! * [`InboundSa`] and [`Sad`]: the inbound SA database, looked up by SPI,
//!   each SA with its anti-replay window ([`ReplayWindow`], RFC 4303
//!   §3.4.3) and its selectors (the inner sources it may carry, RFC 4301
//!   §5.2 step 4's inbound policy check). [`Sad::open`] authenticates and
//!   decrypts in place and says where the inner packet lies.
//! * [`wire`]: the outer IPv4 header and the ESP header as byte views,
//!   read after one length check, never panicking on short or hostile
//!   input (fuzzed by `fuzz/fuzz_targets/esp_decap.rs`).
//!
//! The cipher is RustCrypto's `aes-gcm` (AES-NI and CLMUL when the CPU has
//! them): nothing here implements cryptography; this crate only lays out
//! ESP around it. The ESP framing is our own because no maintained Rust
//! crate offers ESP packet processing on caller-owned buffers (the ones
//! that exist are IKE daemons' or kernel (XFRM) configuration wrappers).
//!
//! ```text
//!  RFC 4303 §2 / RFC 4106 §3, tunnel mode, as sealed here:
//!  +----------------------+ outer IPv4 (20 bytes, protocol 50)
//!  | SPI (4)  | Seq (4)   | ESP header         \ AAD (RFC 4106 §5)
//!  | IV (8) = sequence    | explicit IV
//!  | inner IPv4/IPv6 ...  | \
//!  | pad 1,2,3.. | padlen | next hdr (4 or 41) |  encrypted
//!  | ICV (16)             | GCM tag
//!  +----------------------+
//!  nonce = salt (4, from the key material) || IV (8)
//! ```
//!
//! Limits: no extended sequence numbers (RFC 4303 §2.2.1: without ESN a
//! sender stops at 2^32 - 1 and needs a new SA, so [`OutboundSa::seal`]
//! refuses and the element counts `seq_exhausted`); no NAT traversal
//! (UDP 4500), no outer IPv6, no fragment reassembly of outer packets, no
//! IKE (keys come from the configuration), no TFC padding. An SA belongs to
//! one core: sequence numbers and replay windows are not shared between
//! cores.
//!
//! ```
//! use ipsec::{Key, OutboundSa, InboundSa, Sad, FRONT, trailer_len};
//! let key = Key::from_hex("0x00112233445566778899aabbccddeeff01020304").unwrap();
//! let mut out = OutboundSa::new(0x1001, &key, [198, 18, 2, 1], [198, 18, 2, 2]);
//! let inner = [0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 1, 2, 198, 18, 3, 1];
//! let mut buf = vec![0u8; FRONT + inner.len() + trailer_len(inner.len())];
//! buf[FRONT..FRONT + inner.len()].copy_from_slice(&inner);
//! out.seal(&mut buf, inner.len(), 4, 0, 1).unwrap();
//! let mut sad = Sad::new();
//! sad.add(InboundSa::new(0x1001, &key, 64, vec!["198.18.1.0/24".parse().unwrap()]).unwrap());
//! let o = sad.open(&mut buf[20..]).unwrap();
//! assert_eq!(&buf[20..][o.inner.clone()], &inner);
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod replay;
mod sa;
pub mod wire;

pub use replay::ReplayWindow;
pub use sa::{
    trailer_len, InboundSa, Key, OpenError, Opened, OutboundSa, Sad, SealError, Selector,
};

/// Bytes the sealer writes in front of the inner packet: outer IPv4 (20),
/// ESP header (8) and the explicit IV (8).
pub const FRONT: usize = wire::IP4_LEN + wire::ESP_HDR + wire::IV_LEN;

/// The ICV (GCM tag) length: 16 bytes (RFC 4106 §6: ICV of 16 octets is
/// the one this crate supports, as the kernel's `rfc4106(gcm(aes))` with 128).
pub const ICV_LEN: usize = 16;

/// Next header value of an inner IPv4 packet (IP-in-IP, RFC 4303 §2.6).
pub const NEXT_IPV4: u8 = 4;
/// Next header value of an inner IPv6 packet.
pub const NEXT_IPV6: u8 = 41;
/// Next header value of a dummy packet (RFC 4303 §2.6: discarded).
pub const NEXT_NONE: u8 = 59;
