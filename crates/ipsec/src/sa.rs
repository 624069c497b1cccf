//! Security associations: keys, selectors, the outbound sealer and the
//! inbound SA database with its opener.

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::Range;

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce, Tag};

use crate::replay::{Replay, ReplayWindow};
use crate::wire::{self, ESP_HDR, IP4_LEN, IV_LEN};
use crate::{FRONT, ICV_LEN, NEXT_IPV4, NEXT_IPV6, NEXT_NONE};

/// AES-GCM-128 key material as RFC 4106 §8.1 defines it: 16 key bytes and
/// the 4-byte salt (the kernel's `aead 'rfc4106(gcm(aes))' 0x<key><salt> 128`).
#[derive(Clone)]
pub struct Key {
    key: [u8; 16],
    salt: [u8; 4],
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() != 2 * N || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (o, i) in out.iter_mut().zip((0..s.len()).step_by(2)) {
        *o = u8::from_str_radix(s.get(i..i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl Key {
    /// Key and salt from their bytes.
    pub fn new(key: [u8; 16], salt: [u8; 4]) -> Key {
        Key { key, salt }
    }
    /// Key and salt from 40 hex digits (optionally `0x`-prefixed): the key
    /// then the salt, as `ip xfrm state ... aead` takes them.
    pub fn from_hex(s: &str) -> Option<Key> {
        let b: [u8; 20] = unhex(s)?;
        let (k, t) = b.split_at(16);
        Some(Key {
            key: k.try_into().ok()?,
            salt: t.try_into().ok()?,
        })
    }
    /// Key (32 hex digits) and salt (8 hex digits) given apart.
    pub fn from_hex_parts(key: &str, salt: &str) -> Option<Key> {
        Some(Key {
            key: unhex(key)?,
            salt: unhex(salt)?,
        })
    }
    /// The key and salt as 40 hex digits (for `ip xfrm`).
    pub fn to_hex(&self) -> String {
        self.key
            .iter()
            .chain(&self.salt)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
    fn cipher(&self) -> Aes128Gcm {
        Aes128Gcm::new(&self.key.into())
    }
}

/// An address prefix an SA's traffic selectors are made of.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// IPv4 prefix: address (host order) and length.
    V4(u32, u8),
    /// IPv6 prefix.
    V6(u128, u8),
}

impl std::str::FromStr for Selector {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?}: expected ADDRESS/LENGTH");
        let (a, l) = s.split_once('/').ok_or_else(bad)?;
        let l: u8 = l.parse().map_err(|_| bad())?;
        match a.parse::<IpAddr>().map_err(|_| bad())? {
            IpAddr::V4(a) if l <= 32 => Ok(Selector::V4(u32::from(a) & mask32(l), l)),
            IpAddr::V6(a) if l <= 128 => Ok(Selector::V6(u128::from(a) & mask128(l), l)),
            _ => Err(format!("{s:?}: prefix length too long")),
        }
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Selector::V4(a, l) => write!(f, "{}/{l}", std::net::Ipv4Addr::from(a)),
            Selector::V6(a, l) => write!(f, "{}/{l}", std::net::Ipv6Addr::from(a)),
        }
    }
}

fn mask32(l: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(l)).unwrap_or(0)
}
fn mask128(l: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(l)).unwrap_or(0)
}

/// Which address of an inner packet a selector is matched against.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Field {
    Src,
    Dst,
}

/// True when the inner IP packet's address `f` is inside one of `sel`.
/// `false` for anything that is not a whole IPv4 or IPv6 header.
fn selected(sel: &[Selector], inner: &[u8], f: Field) -> bool {
    match inner.first().map(|b| b >> 4) {
        Some(4) => {
            let at = if f == Field::Src { 12 } else { 16 };
            let Some(a) = inner
                .get(at..at + 4)
                .and_then(|s| <[u8; 4]>::try_from(s).ok())
            else {
                return false;
            };
            let a = u32::from_be_bytes(a);
            sel.iter()
                .any(|s| matches!(*s, Selector::V4(p, l) if a & mask32(l) == p))
        }
        Some(6) => {
            let at = if f == Field::Src { 8 } else { 24 };
            let Some(a) = inner
                .get(at..at + 16)
                .and_then(|s| <[u8; 16]>::try_from(s).ok())
            else {
                return false;
            };
            let a = u128::from_be_bytes(a);
            sel.iter()
                .any(|s| matches!(*s, Selector::V6(p, l) if a & mask128(l) == p))
        }
        _ => false,
    }
}

/// The ESP trailer and ICV after an inner packet of `inner_len` bytes:
/// padding to a 4-byte boundary (RFC 4303 §2.4; GCM needs no block
/// alignment), pad length, next header, and the 16-byte ICV.
pub const fn trailer_len(inner_len: usize) -> usize {
    let pad = (4 - (inner_len + 2) % 4) % 4;
    pad + 2 + ICV_LEN
}

/// Why [`OutboundSa::seal`] refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SealError {
    /// The sequence number reached 2^32 - 1 (RFC 4303 §3.3.3: without ESN
    /// it must not cycle; the SA needs rekeying).
    SeqExhausted,
    /// The buffer is not `FRONT + inner_len + trailer_len(inner_len)`
    /// bytes, or is longer than an IPv4 packet can be.
    BadLength,
}

/// One outbound SA: seals inner packets toward the tunnel's far end.
pub struct OutboundSa {
    spi: u32,
    seq: u32,
    cipher: Aes128Gcm,
    salt: [u8; 4],
    src: [u8; 4],
    dst: [u8; 4],
    selectors: Vec<Selector>,
}

impl std::fmt::Debug for OutboundSa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundSa")
            .field("spi", &self.spi)
            .field("seq", &self.seq)
            .field("src", &self.src)
            .field("dst", &self.dst)
            .field("selectors", &self.selectors)
            .finish()
    }
}

impl OutboundSa {
    /// An SA with SPI `spi`, the tunnel from `src` to `dst`, no selectors.
    pub fn new(spi: u32, key: &Key, src: [u8; 4], dst: [u8; 4]) -> OutboundSa {
        OutboundSa {
            spi,
            seq: 0,
            cipher: key.cipher(),
            salt: key.salt,
            src,
            dst,
            selectors: Vec::new(),
        }
    }
    /// Sets the policy: the inner destinations this SA carries.
    pub fn with_selectors(mut self, s: Vec<Selector>) -> Self {
        self.selectors = s;
        self
    }
    /// Starts the sequence counter at `seq` (the next packet gets `seq + 1`);
    /// for tests of exhaustion.
    pub fn with_seq(mut self, seq: u32) -> Self {
        self.seq = seq;
        self
    }
    /// The SPI.
    pub fn spi(&self) -> u32 {
        self.spi
    }
    /// The last sequence number sent (0: none yet).
    pub fn seq(&self) -> u32 {
        self.seq
    }
    /// The tunnel's far end (outer destination).
    pub fn dst(&self) -> [u8; 4] {
        self.dst
    }
    /// Does the policy send this inner IP packet (by its destination)
    /// through this SA?
    pub fn matches(&self, inner: &[u8]) -> bool {
        selected(&self.selectors, inner, Field::Dst)
    }

    /// Seals in place. `buf` holds [`FRONT`] bytes (overwritten), the
    /// inner packet of `inner_len` bytes, and [`trailer_len`] bytes
    /// (overwritten): afterwards it is the whole outer IPv4 packet.
    /// `next` is [`NEXT_IPV4`] or [`NEXT_IPV6`]; `tos` is copied into the
    /// outer header (RFC 4301 §5.1.2.1: DSCP copied; ECN copied as in
    /// RFC 6040's normal mode); `id` is the outer identification.
    pub fn seal(
        &mut self,
        buf: &mut [u8],
        inner_len: usize,
        next: u8,
        tos: u8,
        id: u16,
    ) -> Result<(), SealError> {
        let total = FRONT + inner_len + trailer_len(inner_len);
        if buf.len() != total || total > usize::from(u16::MAX) {
            return Err(SealError::BadLength);
        }
        if self.seq == u32::MAX {
            return Err(SealError::SeqExhausted);
        }
        let seq = self.seq + 1;
        let (outer, rest) = buf.split_at_mut(IP4_LEN);
        if let Ok(h) = <&mut [u8; IP4_LEN]>::try_from(outer) {
            wire::write_outer4(h, total as u16, tos, id, self.src, self.dst);
        }
        let (aad, rest) = rest.split_at_mut(ESP_HDR);
        aad[..4].copy_from_slice(&self.spi.to_be_bytes());
        aad[4..].copy_from_slice(&seq.to_be_bytes());
        // RFC 4106 §3.1: the IV must be unique per key; the 64-bit
        // sequence number is (the kernel's seqiv does the same).
        let (iv, rest) = rest.split_at_mut(IV_LEN);
        iv.copy_from_slice(&u64::from(seq).to_be_bytes());
        let (plain, icv) = rest.split_at_mut(rest.len() - ICV_LEN);
        let pad = plain.len() - inner_len - 2;
        // RFC 4303 §2.4: padding bytes 1, 2, 3, ...
        for (k, b) in plain[inner_len..].iter_mut().enumerate().take(pad) {
            *b = (k + 1) as u8;
        }
        let n = plain.len();
        plain[n - 2] = pad as u8;
        plain[n - 1] = next;
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&self.salt);
        nonce[4..].copy_from_slice(iv);
        let tag = self
            .cipher
            .encrypt_in_place_detached(Nonce::from_slice(&nonce), aad, plain)
            .map_err(|_| SealError::BadLength)?;
        icv.copy_from_slice(&tag);
        self.seq = seq;
        Ok(())
    }
}

/// Why an inbound ESP packet was dropped (each a drop reason of
/// `EspDecap`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Shorter than the headers, IV, trailer and ICV.
    TooShort,
    /// Bad outer header, a fragment, a ciphertext not 4-aligned, bad
    /// padding, or a next header that is not IPv4/IPv6.
    Malformed,
    /// No inbound SA with this SPI.
    NoSa,
    /// A replayed or too old sequence number (RFC 4303 §3.4.3).
    Replay,
    /// The ICV did not verify (RFC 4303 §3.4.4).
    AuthFailed,
    /// The inner source is outside the SA's selectors (RFC 4301 §5.2).
    Policy,
    /// A dummy packet (next header 59, RFC 4303 §2.6).
    Dummy,
}

impl OpenError {
    /// Every reason, in the order of [`OpenError::name`]s.
    pub const ALL: [OpenError; 7] = [
        OpenError::TooShort,
        OpenError::Malformed,
        OpenError::NoSa,
        OpenError::Replay,
        OpenError::AuthFailed,
        OpenError::Policy,
        OpenError::Dummy,
    ];
    /// The counter name.
    pub const fn name(self) -> &'static str {
        match self {
            OpenError::TooShort => "too_short",
            OpenError::Malformed => "malformed",
            OpenError::NoSa => "no_sa",
            OpenError::Replay => "replay",
            OpenError::AuthFailed => "auth_failed",
            OpenError::Policy => "policy",
            OpenError::Dummy => "dummy",
        }
    }
}

/// One inbound SA.
pub struct InboundSa {
    spi: u32,
    cipher: Aes128Gcm,
    salt: [u8; 4],
    window: ReplayWindow,
    selectors: Vec<Selector>,
}

impl std::fmt::Debug for InboundSa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboundSa")
            .field("spi", &self.spi)
            .field("window", &self.window.size())
            .field("top", &self.window.top())
            .field("selectors", &self.selectors)
            .finish()
    }
}

impl InboundSa {
    /// An inbound SA with a replay window of `window` bits (a multiple of
    /// 64 in 64..=4096, else `None`) accepting inner packets whose source
    /// is in `selectors`.
    pub fn new(spi: u32, key: &Key, window: u32, selectors: Vec<Selector>) -> Option<InboundSa> {
        Some(InboundSa {
            spi,
            cipher: key.cipher(),
            salt: key.salt,
            window: ReplayWindow::new(window)?,
            selectors,
        })
    }
    /// The SPI.
    pub fn spi(&self) -> u32 {
        self.spi
    }
    /// The replay window.
    pub fn window(&self) -> &ReplayWindow {
        &self.window
    }
}

/// Where the inner packet lies after [`Sad::open`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The inner packet's bytes within the `esp` slice given to `open`.
    pub inner: Range<usize>,
    /// [`NEXT_IPV4`] or [`NEXT_IPV6`].
    pub next: u8,
    /// The SA's SPI.
    pub spi: u32,
}

/// The inbound SA database, by SPI.
#[derive(Debug, Default)]
pub struct Sad {
    sas: Vec<InboundSa>,
    by_spi: HashMap<u32, usize>,
}

impl Sad {
    /// An empty database.
    pub fn new() -> Sad {
        Sad::default()
    }
    /// Adds an SA; `false` (and nothing added) when its SPI is taken.
    pub fn add(&mut self, sa: InboundSa) -> bool {
        if self.by_spi.contains_key(&sa.spi) {
            return false;
        }
        self.by_spi.insert(sa.spi, self.sas.len());
        self.sas.push(sa);
        true
    }
    /// The SAs, in the order added.
    pub fn sas(&self) -> &[InboundSa] {
        &self.sas
    }
    /// The SA with SPI `spi`.
    pub fn get(&self, spi: u32) -> Option<&InboundSa> {
        self.by_spi.get(&spi).and_then(|&i| self.sas.get(i))
    }
    /// The position in [`Self::sas`] of the SA with SPI `spi`.
    pub fn position(&self, spi: u32) -> Option<usize> {
        self.by_spi.get(&spi).copied()
    }

    /// Opens an ESP packet in place: `esp` is everything after the outer
    /// IP header (ESP header to ICV). RFC 4303 §3.4's order: SA lookup,
    /// sequence check, ICV check, decryption, window update, then the
    /// trailer and the inbound policy. On success the inner packet is
    /// plaintext at `Opened::inner`.
    pub fn open(&mut self, esp: &mut [u8]) -> Result<Opened, OpenError> {
        let h = wire::esp_header(esp)?;
        let i = *self.by_spi.get(&h.spi).ok_or(OpenError::NoSa)?;
        let sa = self.sas.get_mut(i).ok_or(OpenError::NoSa)?;
        if esp.len() < ESP_HDR + IV_LEN + 2 + ICV_LEN {
            return Err(OpenError::TooShort);
        }
        if (esp.len() - ESP_HDR - IV_LEN - ICV_LEN) % 4 != 0 {
            return Err(OpenError::Malformed);
        }
        sa.window
            .check(h.seq)
            .map_err(|_: Replay| OpenError::Replay)?;
        let (aad, rest) = esp.split_at_mut(ESP_HDR);
        let (iv, rest) = rest.split_at_mut(IV_LEN);
        let (ct, icv) = rest.split_at_mut(rest.len() - ICV_LEN);
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&sa.salt);
        nonce[4..].copy_from_slice(iv);
        sa.cipher
            .decrypt_in_place_detached(Nonce::from_slice(&nonce), aad, ct, Tag::from_slice(icv))
            .map_err(|_| OpenError::AuthFailed)?;
        sa.window.update(h.seq);
        let n = ct.len();
        let (pad, next) = (usize::from(ct[n - 2]), ct[n - 1]);
        let inner_len = n.checked_sub(pad + 2).ok_or(OpenError::Malformed)?;
        let (inner, trailer) = ct.split_at(inner_len);
        if trailer
            .iter()
            .take(pad)
            .enumerate()
            .any(|(k, &b)| usize::from(b) != k + 1)
        {
            return Err(OpenError::Malformed);
        }
        let version = inner.first().map(|b| b >> 4);
        match (next, version) {
            (NEXT_NONE, _) => return Err(OpenError::Dummy),
            (NEXT_IPV4, Some(4)) | (NEXT_IPV6, Some(6)) => {}
            _ => return Err(OpenError::Malformed),
        }
        if !selected(&sa.selectors, inner, Field::Src) {
            // A short inner header is malformed, not a policy violation.
            let need = if next == NEXT_IPV4 { 20 } else { 40 };
            return Err(if inner.len() < need {
                OpenError::Malformed
            } else {
                OpenError::Policy
            });
        }
        let start = ESP_HDR + IV_LEN;
        Ok(Opened {
            inner: start..start + inner_len,
            next,
            spi: h.spi,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::from_hex("0x00112233445566778899aabbccddeeff01020304").unwrap()
    }

    fn ip4(src: [u8; 4], dst: [u8; 4], payload: usize) -> Vec<u8> {
        let mut p = vec![0u8; 20 + payload];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&((20 + payload) as u16).to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        for (i, b) in p[20..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    fn sealed(sa: &mut OutboundSa, inner: &[u8], next: u8) -> Vec<u8> {
        let mut b = vec![0u8; FRONT + inner.len() + trailer_len(inner.len())];
        b[FRONT..FRONT + inner.len()].copy_from_slice(inner);
        sa.seal(&mut b, inner.len(), next, 0, 0).unwrap();
        b
    }

    fn sad(window: u32) -> Sad {
        let mut s = Sad::new();
        let sel = vec![
            "198.18.1.0/24".parse().unwrap(),
            "2001:db8:1::/64".parse().unwrap(),
        ];
        assert!(s.add(InboundSa::new(0x1001, &key(), window, sel).unwrap()));
        s
    }

    #[test]
    fn key_hex_forms() {
        assert_eq!(key().to_hex(), "00112233445566778899aabbccddeeff01020304");
        let k = Key::from_hex_parts("00112233445566778899aabbccddeeff", "0x01020304").unwrap();
        assert_eq!(k.to_hex(), key().to_hex());
        assert!(Key::from_hex("0011").is_none());
        assert!(Key::from_hex("zz112233445566778899aabbccddeeff01020304").is_none());
        assert!(Key::from_hex("é0112233445566778899aabbccddeeff0102030").is_none());
        assert_eq!(format!("{:?}", key()), "Key(..)");
    }

    #[test]
    fn selectors() {
        let s: Selector = "198.18.3.7/24".parse().unwrap();
        assert_eq!(s.to_string(), "198.18.3.0/24");
        assert!("198.18.3.0/33".parse::<Selector>().is_err());
        assert!("nonsense".parse::<Selector>().is_err());
        let all: Selector = "0.0.0.0/0".parse().unwrap();
        assert!(selected(
            &[all],
            &ip4([1, 2, 3, 4], [5, 6, 7, 8], 0),
            Field::Dst
        ));
        assert!(!selected(
            &[s],
            &ip4([1, 2, 3, 4], [198, 18, 4, 1], 0),
            Field::Dst
        ));
        assert!(selected(
            &[s],
            &ip4([1, 2, 3, 4], [198, 18, 3, 1], 0),
            Field::Dst
        ));
        assert!(!selected(&[s], &[0x45, 0, 0], Field::Dst));
    }

    #[test]
    fn seal_layout_then_open_every_size() {
        let mut out = OutboundSa::new(0x1001, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
        let mut sad = sad(64);
        for payload in 0..40 {
            let inner = ip4([198, 18, 1, 2], [198, 18, 3, 1], payload);
            let mut b = sealed(&mut out, &inner, NEXT_IPV4);
            assert_eq!(b.len() % 4, 0, "4-byte aligned ESP");
            let o = wire::outer4(&b).unwrap();
            assert_eq!((o.total_len, o.dst), (b.len(), [198, 18, 2, 2]));
            assert_eq!(&b[20..24], &0x1001u32.to_be_bytes());
            assert_eq!(&b[24..28], &(payload as u32 + 1).to_be_bytes());
            assert_ne!(&b[FRONT..FRONT + inner.len()], &inner[..], "encrypted");
            let r = sad.open(&mut b[20..]).unwrap();
            assert_eq!(r.next, NEXT_IPV4);
            assert_eq!(&b[20..][r.inner], &inner[..]);
        }
    }

    #[test]
    fn every_drop_reason() {
        let mut out = OutboundSa::new(0x1001, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
        let mut sad = sad(64);
        let inner = ip4([198, 18, 1, 2], [198, 18, 3, 1], 10);
        let good = sealed(&mut out, &inner, NEXT_IPV4);
        // Replay: the same packet twice.
        let mut a = good.clone();
        assert!(sad.open(&mut a[20..]).is_ok());
        let mut a = good.clone();
        assert_eq!(sad.open(&mut a[20..]), Err(OpenError::Replay));
        // Auth: one flipped ciphertext bit; the window does not move.
        let mut f = sealed(&mut out, &inner, NEXT_IPV4);
        f[FRONT] ^= 1;
        assert_eq!(sad.open(&mut f[20..]), Err(OpenError::AuthFailed));
        assert_eq!(sad.get(0x1001).unwrap().window().top(), 1);
        assert_eq!(
            (sad.position(0x1001), sad.position(0x1002)),
            (Some(0), None)
        );
        // No SA.
        let mut n = sealed(&mut out, &inner, NEXT_IPV4);
        n[23] ^= 0xff;
        assert_eq!(sad.open(&mut n[20..]), Err(OpenError::NoSa));
        // Too short, misaligned.
        let mut s = good[..20 + 33].to_vec();
        assert_eq!(sad.open(&mut s[20..]), Err(OpenError::TooShort));
        assert_eq!(sad.open(&mut [0u8; 5]), Err(OpenError::TooShort));
        let mut m = good.clone();
        m.push(0);
        assert_eq!(sad.open(&mut m[20..]), Err(OpenError::Malformed));
        // Policy: an inner source outside 198.18.1.0/24.
        let mut p = sealed(
            &mut out,
            &ip4([10, 0, 0, 1], [198, 18, 3, 1], 10),
            NEXT_IPV4,
        );
        assert_eq!(sad.open(&mut p[20..]), Err(OpenError::Policy));
        // Dummy and a wrong next header.
        let mut d = sealed(&mut out, &inner, NEXT_NONE);
        assert_eq!(sad.open(&mut d[20..]), Err(OpenError::Dummy));
        let mut w = sealed(&mut out, &inner, NEXT_IPV6);
        assert_eq!(sad.open(&mut w[20..]), Err(OpenError::Malformed));
        // IPv6 inner.
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x60;
        v6[8..24].copy_from_slice(
            &"2001:db8:1::2"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        let mut b = sealed(&mut out, &v6, NEXT_IPV6);
        let r = sad.open(&mut b[20..]).unwrap();
        assert_eq!((r.next, &b[20..][r.inner]), (NEXT_IPV6, &v6[..]));
    }

    #[test]
    fn sequence_exhaustion_and_lengths() {
        let mut out = OutboundSa::new(1, &key(), [1; 4], [2; 4]).with_seq(u32::MAX - 1);
        let inner = ip4([1; 4], [2; 4], 0);
        let b = sealed(&mut out, &inner, NEXT_IPV4);
        assert_eq!(&b[24..28], &u32::MAX.to_be_bytes());
        let mut c = b.clone();
        assert_eq!(
            out.seal(&mut c, inner.len(), 4, 0, 0),
            Err(SealError::SeqExhausted)
        );
        let mut out = OutboundSa::new(1, &key(), [1; 4], [2; 4]);
        assert_eq!(
            out.seal(&mut c[1..], inner.len(), 4, 0, 0),
            Err(SealError::BadLength)
        );
        assert_eq!(out.seq(), 0);
        let mut s = Sad::new();
        assert!(s.add(InboundSa::new(7, &key(), 64, vec![]).unwrap()));
        assert!(!s.add(InboundSa::new(7, &key(), 128, vec![]).unwrap()));
        assert!(InboundSa::new(7, &key(), 65, vec![]).is_none());
    }
}
