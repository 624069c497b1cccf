//! Community values and patterns: standard (RFC 1997), extended (RFC 4360,
//! RFC 5668) and large (RFC 8092).
//!
//! Patterns (for matches and removals) allow `*` for a whole field and, for
//! standard and large communities, `LO-HI` ranges. Values (for additions
//! and `community_set`) must be exact.
//!
//! * standard: `ASN:VALUE` (each 0..=65535), or a well-known name:
//!   `no-export`, `no-advertise`, `no-export-subconfed`, `no-peer`,
//!   `blackhole`, `graceful-shutdown`, `accept-own`, `llgr-stale`,
//!   `no-llgr` (`_` may replace `-`, case is ignored).
//! * extended: `rt:X:Y` (route target) or `soo:X:Y` (route origin), where X
//!   is an ASN or an IPv4 address. Values pick the encoding: 2-octet AS
//!   specific when X <= 65535 (Y up to 2^32-1), 4-octet AS specific
//!   (RFC 5668, Y <= 65535) for larger X, IPv4 address specific for an
//!   address (Y <= 65535). Patterns match every encoding the numbers fit,
//!   so `rt:65000:1` matches both the 2- and the 4-octet AS form. Any other
//!   extended community: `0x` and 16 hex digits (exact only).
//! * large: `GLOBAL:LOCAL1:LOCAL2`, each 0..=4294967295.

use std::net::Ipv4Addr;

use bgp_wire::{Community, ExtCommunity, LargeCommunity};

use crate::error::ErrorKind;

/// An inclusive range for one field.
type Span = (u32, u32);

fn field(s: &str, max: u32) -> Result<Span, ErrorKind> {
    let num = |t: &str| -> Result<u32, ErrorKind> {
        let v: u64 = t.trim().parse().map_err(|_| ErrorKind::CommunitySyntax)?;
        u32::try_from(v)
            .ok()
            .filter(|v| *v <= max)
            .ok_or(ErrorKind::ValueTooLarge { max })
    };
    let s = s.trim();
    if s == "*" {
        return Ok((0, max));
    }
    match s.split_once('-') {
        Some((lo, hi)) => {
            let (lo, hi) = (num(lo)?, num(hi)?);
            if lo > hi {
                return Err(ErrorKind::CommunitySyntax);
            }
            Ok((lo, hi))
        }
        None => num(s).map(|v| (v, v)),
    }
}

fn exact(s: Span) -> Result<u32, ErrorKind> {
    if s.0 == s.1 {
        Ok(s.0)
    } else {
        Err(ErrorKind::WildcardNotAllowed)
    }
}

fn well_known(s: &str) -> Option<Community> {
    let n = s.trim().to_ascii_lowercase().replace('_', "-");
    Some(match n.as_str() {
        "no-export" => Community::NO_EXPORT,
        "no-advertise" => Community::NO_ADVERTISE,
        "no-export-subconfed" => Community::NO_EXPORT_SUBCONFED,
        "no-peer" => Community::NO_PEER,
        "blackhole" => Community::BLACKHOLE,
        "graceful-shutdown" => Community::GRACEFUL_SHUTDOWN,
        // RFC 7611.
        "accept-own" => Community(0xffff_0001),
        // RFC 9494.
        "llgr-stale" => Community(0xffff_0006),
        "no-llgr" => Community(0xffff_0007),
        _ => return None,
    })
}

/// A standard community pattern.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StdPat {
    asn: Span,
    val: Span,
}

impl StdPat {
    /// Parses a pattern: `ASN:VALUE` with `*` or `LO-HI` fields, or a well-known name.
    pub fn parse(s: &str) -> Result<StdPat, ErrorKind> {
        if let Some(c) = well_known(s) {
            let (a, v) = (u32::from(c.asn()), u32::from(c.value()));
            return Ok(StdPat {
                asn: (a, a),
                val: (v, v),
            });
        }
        let (a, v) = s.split_once(':').ok_or(ErrorKind::CommunitySyntax)?;
        Ok(StdPat {
            asn: field(a, 0xffff)?,
            val: field(v, 0xffff)?,
        })
    }
    /// Whether community value `c` matches.
    #[inline]
    pub fn matches(&self, c: u32) -> bool {
        let (a, v) = (c >> 16, c & 0xffff);
        self.asn.0 <= a && a <= self.asn.1 && self.val.0 <= v && v <= self.val.1
    }
}

/// An exact standard community.
pub fn parse_std(s: &str) -> Result<Community, ErrorKind> {
    let p = StdPat::parse(s)?;
    Ok(Community((exact(p.asn)? << 16) | exact(p.val)?))
}

/// A large community pattern.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LargePat([Span; 3]);

impl LargePat {
    /// Parses `GLOBAL:LOCAL1:LOCAL2`, each field a number, `*` or `LO-HI`.
    pub fn parse(s: &str) -> Result<LargePat, ErrorKind> {
        let mut it = s.split(':');
        let mut f = [(0, 0); 3];
        for slot in &mut f {
            *slot = field(it.next().ok_or(ErrorKind::CommunitySyntax)?, u32::MAX)?;
        }
        if it.next().is_some() {
            return Err(ErrorKind::CommunitySyntax);
        }
        Ok(LargePat(f))
    }
    /// Whether `c` matches.
    #[inline]
    pub fn matches(&self, c: &LargeCommunity) -> bool {
        let [g, a, b] = &self.0;
        let inr = |s: &Span, v: u32| s.0 <= v && v <= s.1;
        inr(g, c.global_admin) && inr(a, c.local_data1) && inr(b, c.local_data2)
    }
}

/// An exact large community `GLOBAL:LOCAL1:LOCAL2`.
pub fn parse_large(s: &str) -> Result<LargeCommunity, ErrorKind> {
    let LargePat([g, a, b]) = LargePat::parse(s)?;
    Ok(LargeCommunity {
        global_admin: exact(g)?,
        local_data1: exact(a)?,
        local_data2: exact(b)?,
    })
}

/// An extended community pattern: up to three (value, mask) alternatives
/// over the 8 octets read as a big-endian integer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ExtPat {
    alts: [(u64, u64); 3],
    n: u8,
}

/// RFC 4360 §3.1, §3.2 and RFC 5668 type octets (transitive forms).
const T_AS2: u8 = 0x00;
const T_IP4: u8 = 0x01;
const T_AS4: u8 = 0x02;

enum Global {
    Any,
    Num(u32),
    Ip(Ipv4Addr),
}

/// Parses `rt:X:Y` / `soo:X:Y` into (subtype, global, local).
fn split_ext(s: &str) -> Result<(u8, Global, Option<u32>), ErrorKind> {
    let s = s.trim();
    let (kind, rest) = s.split_once(':').ok_or(ErrorKind::CommunitySyntax)?;
    let sub = match kind.to_ascii_lowercase().as_str() {
        "rt" | "target" => 0x02,
        "soo" | "origin" => 0x03,
        _ => return Err(ErrorKind::CommunitySyntax),
    };
    let (g, l) = rest.rsplit_once(':').ok_or(ErrorKind::CommunitySyntax)?;
    let g = if g == "*" {
        Global::Any
    } else if let Ok(ip) = g.parse::<Ipv4Addr>() {
        Global::Ip(ip)
    } else {
        Global::Num(exact(field(g, u32::MAX)?)?)
    };
    let l = if l == "*" {
        None
    } else {
        Some(exact(field(l, u32::MAX)?)?)
    };
    Ok((sub, g, l))
}

/// (value, mask) for one encoding; `None` when the numbers do not fit it.
fn encode(ty: u8, sub: u8, g: &Global, l: Option<u32>) -> Option<(u64, u64)> {
    let (gbits, gwidth) = match ty {
        T_AS2 => (16, 16u32),
        _ => (32, 32u32),
    };
    let lwidth = 48 - gwidth;
    let (gv, gm) = match (ty, g) {
        (_, Global::Any) => (0u64, 0u64),
        (T_IP4, Global::Ip(a)) => (u64::from(u32::from(*a)), 0xffff_ffff),
        (T_IP4, Global::Num(_)) | (_, Global::Ip(_)) => return None,
        (_, Global::Num(n)) if u64::from(*n) < (1u64 << gbits) => (u64::from(*n), (1 << gbits) - 1),
        _ => return None,
    };
    let (lv, lm) = match l {
        None => (0u64, 0u64),
        Some(v) if u64::from(v) < (1u64 << lwidth) => (u64::from(v), (1 << lwidth) - 1),
        Some(_) => return None,
    };
    let head = (u64::from(ty) << 56) | (u64::from(sub) << 48);
    Some((
        head | (gv << lwidth) | lv,
        0xffff_u64 << 48 | (gm << lwidth) | lm,
    ))
}

fn hex_ext(s: &str) -> Option<u64> {
    let h = s.trim().strip_prefix("0x")?;
    if h.len() != 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

impl ExtPat {
    /// Parses `rt:X:Y`, `soo:X:Y` (`*` allowed) or `0x` and 16 hex digits.
    pub fn parse(s: &str) -> Result<ExtPat, ErrorKind> {
        let mut p = ExtPat {
            alts: [(0, 0); 3],
            n: 0,
        };
        if let Some(v) = hex_ext(s) {
            p.alts[0] = (v, u64::MAX);
            p.n = 1;
            return Ok(p);
        }
        let (sub, g, l) = split_ext(s)?;
        for ty in [T_AS2, T_AS4, T_IP4] {
            if let Some(a) = encode(ty, sub, &g, l) {
                if let Some(slot) = p.alts.get_mut(usize::from(p.n)) {
                    *slot = a;
                    p.n += 1;
                }
            }
        }
        if p.n == 0 {
            return Err(ErrorKind::ValueTooLarge { max: 0xffff });
        }
        Ok(p)
    }
    /// Whether `c` matches one of the alternatives.
    #[inline]
    pub fn matches(&self, c: &ExtCommunity) -> bool {
        let v = u64::from_be_bytes(c.0);
        self.alts
            .iter()
            .take(usize::from(self.n))
            .any(|(val, m)| v & m == *val)
    }
}

/// An exact extended community (see the module docs for the encoding).
pub fn parse_ext(s: &str) -> Result<ExtCommunity, ErrorKind> {
    if let Some(v) = hex_ext(s) {
        return Ok(ExtCommunity(v.to_be_bytes()));
    }
    let (sub, g, l) = split_ext(s)?;
    let Some(l) = l else {
        return Err(ErrorKind::WildcardNotAllowed);
    };
    let ty = match g {
        Global::Any => return Err(ErrorKind::WildcardNotAllowed),
        Global::Ip(_) => T_IP4,
        Global::Num(n) if n <= 0xffff => T_AS2,
        Global::Num(_) => T_AS4,
    };
    encode(ty, sub, &g, Some(l))
        .map(|(v, _)| ExtCommunity(v.to_be_bytes()))
        .ok_or(ErrorKind::ValueTooLarge { max: 0xffff })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_patterns_and_values() {
        let p = StdPat::parse("65000:*").unwrap();
        assert!(p.matches(65000 << 16));
        assert!(p.matches((65000 << 16) | 0xffff));
        assert!(!p.matches(65001 << 16));
        let p = StdPat::parse("*:100-200").unwrap();
        assert!(p.matches((1 << 16) | 100));
        assert!(p.matches((7 << 16) | 200));
        assert!(!p.matches((7 << 16) | 99));
        assert!(!p.matches((7 << 16) | 201));
        assert!(StdPat::parse("NO_EXPORT")
            .unwrap()
            .matches(Community::NO_EXPORT.0));
        assert_eq!(parse_std("65000:1"), Ok(Community((65000 << 16) | 1)));
        assert_eq!(parse_std("no-advertise"), Ok(Community::NO_ADVERTISE));
        assert_eq!(parse_std("65000:*"), Err(ErrorKind::WildcardNotAllowed));
        assert_eq!(
            parse_std("65536:1"),
            Err(ErrorKind::ValueTooLarge { max: 0xffff })
        );
        assert_eq!(parse_std("65000"), Err(ErrorKind::CommunitySyntax));
        assert_eq!(parse_std("a:1"), Err(ErrorKind::CommunitySyntax));
        assert_eq!(StdPat::parse("1:9-3"), Err(ErrorKind::CommunitySyntax));
    }

    #[test]
    fn large_patterns_and_values() {
        let p = LargePat::parse("65000:*:7").unwrap();
        let lc = |g, a, b| LargeCommunity {
            global_admin: g,
            local_data1: a,
            local_data2: b,
        };
        assert!(p.matches(&lc(65000, 123, 7)));
        assert!(!p.matches(&lc(65000, 123, 8)));
        assert!(!p.matches(&lc(65001, 123, 7)));
        assert_eq!(parse_large("4200000000:1:2"), Ok(lc(4_200_000_000, 1, 2)));
        assert_eq!(parse_large("1:2"), Err(ErrorKind::CommunitySyntax));
        assert_eq!(parse_large("1:2:3:4"), Err(ErrorKind::CommunitySyntax));
        assert_eq!(parse_large("1:*:3"), Err(ErrorKind::WildcardNotAllowed));
        assert_eq!(
            parse_large("4294967296:1:1"),
            Err(ErrorKind::ValueTooLarge { max: u32::MAX })
        );
    }

    #[test]
    fn extended_encodings() {
        // RFC 4360 §3.1: type 0, subtype 2, AS 65000 (0xfde8), value 1.
        let v = parse_ext("rt:65000:1").unwrap();
        assert_eq!(v.0, [0x00, 0x02, 0xfd, 0xe8, 0, 0, 0, 1]);
        // RFC 5668: 4-octet AS.
        let v = parse_ext("rt:4200000000:5").unwrap();
        assert_eq!(v.0, [0x02, 0x02, 0xfa, 0x56, 0xea, 0x00, 0, 5]);
        // RFC 4360 §3.2: IPv4 address specific, route origin.
        let v = parse_ext("soo:192.0.2.1:7").unwrap();
        assert_eq!(v.0, [0x01, 0x03, 192, 0, 2, 1, 0, 7]);
        assert_eq!(
            parse_ext("rt:4200000000:65536"),
            Err(ErrorKind::ValueTooLarge { max: 0xffff })
        );
        assert_eq!(parse_ext("rt:*:1"), Err(ErrorKind::WildcardNotAllowed));
        assert_eq!(parse_ext("xx:1:1"), Err(ErrorKind::CommunitySyntax));
        assert_eq!(
            parse_ext("0x0002fde800000001").unwrap().0,
            [0, 2, 0xfd, 0xe8, 0, 0, 0, 1]
        );

        let p = ExtPat::parse("rt:65000:1").unwrap();
        assert!(p.matches(&ExtCommunity([0x00, 0x02, 0xfd, 0xe8, 0, 0, 0, 1])));
        // The same numbers in the 4-octet AS form.
        assert!(p.matches(&ExtCommunity([0x02, 0x02, 0, 0, 0xfd, 0xe8, 0, 1])));
        // Route origin is a different subtype.
        assert!(!p.matches(&ExtCommunity([0x00, 0x03, 0xfd, 0xe8, 0, 0, 0, 1])));
        let p = ExtPat::parse("rt:65000:*").unwrap();
        assert!(p.matches(&ExtCommunity([0x00, 0x02, 0xfd, 0xe8, 1, 2, 3, 4])));
        assert!(!p.matches(&ExtCommunity([0x00, 0x02, 0xfd, 0xe9, 1, 2, 3, 4])));
        let p = ExtPat::parse("soo:*:7").unwrap();
        assert!(p.matches(&ExtCommunity([0x01, 0x03, 10, 0, 0, 1, 0, 7])));
        assert!(p.matches(&ExtCommunity([0x00, 0x03, 0, 1, 0, 0, 0, 7])));
        assert!(!p.matches(&ExtCommunity([0x01, 0x03, 10, 0, 0, 1, 0, 8])));
        let p = ExtPat::parse("rt:10.0.0.1:*").unwrap();
        assert!(p.matches(&ExtCommunity([0x01, 0x02, 10, 0, 0, 1, 0, 8])));
        assert!(!p.matches(&ExtCommunity([0x00, 0x02, 10, 0, 0, 1, 0, 8])));
    }
}
