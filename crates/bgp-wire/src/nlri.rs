//! NLRI encoding: a sequence of (length, prefix) pairs, optionally each
//! preceded by a 4-octet path identifier (RFC 4271 §4.3, RFC 7911 §3).
//!
//! ```text
//! +--------------------------------+
//! | Path Identifier (4 octets)     |  only with ADD-PATH receive
//! +--------------------------------+
//! | Length (1 octet, in bits)      |
//! +--------------------------------+
//! | Prefix (ceil(Length/8) octets) |
//! +--------------------------------+
//! ```

use base::{Afi, Prefix, Prefix4, Prefix6};

use crate::error::WireError;
use crate::util::u32_at;

/// One NLRI entry: a prefix and its ADD-PATH path identifier, if any.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nlri {
    /// ADD-PATH path identifier (RFC 7911), when the family negotiated it.
    pub path_id: Option<u32>,
    /// The prefix; host bits kept as received.
    pub prefix: Prefix,
}

impl Nlri {
    /// An entry without a path identifier.
    pub const fn new(prefix: Prefix) -> Nlri {
        Nlri {
            path_id: None,
            prefix,
        }
    }

    /// An entry with ADD-PATH path identifier `path_id`.
    pub const fn with_path_id(prefix: Prefix, path_id: u32) -> Nlri {
        Nlri {
            path_id: Some(path_id),
            prefix,
        }
    }

    /// Octets this entry takes on the wire.
    pub const fn encoded_len(&self) -> usize {
        let pid = if self.path_id.is_some() { 4 } else { 0 };
        pid + 1 + self.prefix.nlri_octets()
    }

    /// Appends this entry. Host bits beyond the length that fall inside the
    /// last octet are written as held, so parsed input re-encodes exactly.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_prefix(out, &self.prefix, self.path_id);
    }
}

/// Borrowed iterator over an NLRI field. Yields `Err` once and then stops
/// when the field is malformed (error [`WireError::InvalidNetworkField`];
/// callers inside MP_REACH/MP_UNREACH re-map it to an attribute error).
#[derive(Clone, Debug)]
pub struct NlriIter<'a> {
    buf: &'a [u8],
    afi: Afi,
    add_path: bool,
}

impl<'a> NlriIter<'a> {
    /// Iterates the NLRI field `buf` of family `afi`, each entry led by a 4-octet path identifier
    /// when `add_path`.
    pub const fn new(buf: &'a [u8], afi: Afi, add_path: bool) -> NlriIter<'a> {
        NlriIter { buf, afi, add_path }
    }

    /// The bytes not yet read.
    pub const fn remaining(&self) -> &'a [u8] {
        self.buf
    }

    /// Walks the whole field; returns the number of entries.
    pub fn validate(self) -> Result<usize, WireError> {
        let mut n = 0;
        for r in self {
            r?;
            n += 1;
        }
        Ok(n)
    }

    fn parse_one(&mut self) -> Result<Nlri, WireError> {
        let bad = WireError::InvalidNetworkField;
        let mut b = self.buf;
        let path_id = if self.add_path {
            let id = u32_at(b, 0).ok_or(bad)?;
            b = b.get(4..).ok_or(bad)?;
            Some(id)
        } else {
            None
        };
        let (&len, rest) = b.split_first().ok_or(bad)?;
        let octets = (len as usize).div_ceil(8);
        let bytes = rest.get(..octets).ok_or(bad)?;
        let prefix = match self.afi {
            Afi::Ipv4 => Prefix::V4(Prefix4::from_nlri_bytes(len, bytes).map_err(|_| bad)?),
            Afi::Ipv6 => Prefix::V6(Prefix6::from_nlri_bytes(len, bytes).map_err(|_| bad)?),
            Afi::Other(_) => return Err(bad),
        };
        self.buf = rest.get(octets..).ok_or(bad)?;
        Ok(Nlri { path_id, prefix })
    }
}

impl Iterator for NlriIter<'_> {
    type Item = Result<Nlri, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let r = self.parse_one();
        if r.is_err() {
            self.buf = &[];
        }
        Some(r)
    }
}

/// Appends one NLRI entry (RFC 4271 §4.3; with the RFC 7911 path
/// identifier first when `path_id` is given): the length in bits, then
/// the prefix's significant octets.
#[inline]
pub fn put_prefix(out: &mut Vec<u8>, p: &Prefix, path_id: Option<u32>) {
    if let Some(id) = path_id {
        out.extend_from_slice(&id.to_be_bytes());
    }
    out.push(p.len());
    let n = p.nlri_octets();
    match p {
        Prefix::V4(x) => out.extend_from_slice(x.addr_bits().to_be_bytes().get(..n).unwrap_or(&[])),
        Prefix::V6(x) => out.extend_from_slice(x.addr_bits().to_be_bytes().get(..n).unwrap_or(&[])),
    }
}

/// Appends a list of entries.
pub fn encode_nlri(list: &[Nlri], out: &mut Vec<u8>) {
    for n in list {
        n.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Prefix {
        s.parse().unwrap()
    }

    #[test]
    fn parse_v4_and_v6() {
        let b = [24, 10, 1, 2, 0, 32, 192, 0, 2, 1, 9, 0x80, 0x80];
        let v: Vec<_> = NlriIter::new(&b, Afi::Ipv4, false).collect();
        assert_eq!(
            v,
            vec![
                Ok(Nlri::new(p("10.1.2.0/24"))),
                Ok(Nlri::new(p("0.0.0.0/0"))),
                Ok(Nlri::new(p("192.0.2.1/32"))),
                Ok(Nlri::new(p("128.128.0.0/9"))),
            ]
        );
        let b = [32, 0x20, 0x01, 0x0d, 0xb8];
        let v: Vec<_> = NlriIter::new(&b, Afi::Ipv6, false).collect();
        assert_eq!(v, vec![Ok(Nlri::new(p("2001:db8::/32")))]);
    }

    #[test]
    fn add_path_ids() {
        let b = [0, 0, 0, 7, 8, 10];
        let v: Vec<_> = NlriIter::new(&b, Afi::Ipv4, true).collect();
        assert_eq!(v, vec![Ok(Nlri::with_path_id(p("10.0.0.0/8"), 7))]);
        // Without ADD-PATH the same bytes are garbage: /0, /0, /0, /7 then
        // a /8 that runs off the end.
        let r = NlriIter::new(&b, Afi::Ipv4, false).validate();
        assert_eq!(r, Err(WireError::InvalidNetworkField));
    }

    #[test]
    fn malformed() {
        for (b, afi) in [
            (&[33u8, 1, 2, 3, 4, 5][..], Afi::Ipv4),
            (&[129u8; 18][..], Afi::Ipv6),
            (&[24u8, 1, 2][..], Afi::Ipv4),
            (&[0u8][..], Afi::Other(3)),
        ] {
            let mut it = NlriIter::new(b, afi, false);
            assert_eq!(it.next(), Some(Err(WireError::InvalidNetworkField)));
            assert_eq!(it.next(), None, "iterator must stop after an error");
        }
    }

    #[test]
    fn host_bits_roundtrip() {
        let b = [20, 10, 1, 255, 0, 0, 0, 3, 1, 0x80];
        let mut out = Vec::new();
        for n in NlriIter::new(&b[..4], Afi::Ipv4, false) {
            n.unwrap().encode(&mut out);
        }
        for n in NlriIter::new(&b[4..], Afi::Ipv4, true) {
            n.unwrap().encode(&mut out);
        }
        assert_eq!(out, b);
    }
}
