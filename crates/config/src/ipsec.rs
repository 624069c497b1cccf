//! `[dataplane.ipsec]`: IPsec ESP tunnel mode (RFC 4303) with AES-GCM-128
//! (RFC 4106) in Tessera's dataplane, with manually keyed SAs (no IKE).
//!
//! ```toml
//! [[dataplane.ipsec.sa]]
//! spi = 0x1001                 # 256..=4294967295
//! direction = "out"            # out: we encrypt; in: we decrypt
//! key = "00112233445566778899aabbccddeeff"   # 16 bytes, hex
//! salt = "01020304"            # 4 bytes, hex (RFC 4106 §8.1)
//! tunnel_src = "198.18.2.1"    # outer source: one of our dataplane addresses
//! tunnel_dst = "198.18.2.2"    # outer destination: the peer
//! selectors = ["198.18.3.0/24"]  # the policy: inner destinations sent through it
//!
//! [[dataplane.ipsec.sa]]
//! spi = 0x2001
//! direction = "in"
//! key = "ffeeddccbbaa99887766554433221100"
//! salt = "05060708"
//! tunnel_src = "198.18.2.2"    # the peer
//! tunnel_dst = "198.18.2.1"    # one of our dataplane addresses
//! selectors = ["198.18.3.0/24"]  # inner sources it may carry (RFC 4301 §5.2)
//! replay_window = 128          # bits, a multiple of 64 in 64..=4096 (default 64)
//! ```
//!
//! The outbound SAs' selectors are the policy: a forwarded packet whose
//! destination falls in one is sealed toward that SA's `tunnel_dst`
//! (first SA in file order wins on overlap). Inbound SAs are found by SPI
//! among ESP packets addressed to the router.

use std::net::{IpAddr, Ipv4Addr};

use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIpsec {
    #[serde(default)]
    pub sa: Vec<RawSa>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSa {
    pub spi: i64,
    pub direction: String,
    pub key: String,
    pub salt: String,
    pub tunnel_src: String,
    pub tunnel_dst: String,
    #[serde(default)]
    pub selectors: Vec<String>,
    pub replay_window: Option<i64>,
}

/// Which way an SA carries traffic.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IpsecDirection {
    /// We encrypt toward `tunnel_dst`.
    Out,
    /// We decrypt what `tunnel_src` sends us.
    In,
}

/// One manually keyed SA, validated.
#[derive(Clone, PartialEq, Eq)]
pub struct IpsecSa {
    /// The SPI (256 and up).
    pub spi: u32,
    /// `direction`.
    pub direction: IpsecDirection,
    /// The AES-128 key.
    pub key: [u8; 16],
    /// The RFC 4106 salt.
    pub salt: [u8; 4],
    /// Outer source.
    pub tunnel_src: Ipv4Addr,
    /// Outer destination.
    pub tunnel_dst: Ipv4Addr,
    /// Prefixes as (network address, length): inner destinations (out)
    /// or inner sources (in).
    pub selectors: Vec<(IpAddr, u8)>,
    /// Anti-replay window in bits (inbound; 64 for outbound, unused).
    pub replay_window: u32,
}

impl std::fmt::Debug for IpsecSa {
    /// Never prints the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpsecSa")
            .field("spi", &self.spi)
            .field("direction", &self.direction)
            .field("tunnel_src", &self.tunnel_src)
            .field("tunnel_dst", &self.tunnel_dst)
            .field("selectors", &self.selectors)
            .field("replay_window", &self.replay_window)
            .finish_non_exhaustive()
    }
}

/// `[dataplane.ipsec]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ipsec {
    /// The SAs in file order.
    pub sas: Vec<IpsecSa>,
}

fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.strip_prefix("0x").unwrap_or(s);
    if s.len() != 2 * N || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

fn prefix(c: &Ctx<'_>, path: &str, s: &str) -> R<(IpAddr, u8)> {
    let bad = || {
        c.err(
            path,
            format!("{s:?}: expected PREFIX/LENGTH (198.18.3.0/24)"),
        )
    };
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    let a: IpAddr = a.parse().map_err(|_| bad())?;
    let l: u8 = l.parse().map_err(|_| bad())?;
    let ok = match a {
        IpAddr::V4(x) => {
            l <= 32 && u32::from(x) & !u32::MAX.checked_shl(32 - u32::from(l)).unwrap_or(0) == 0
        }
        IpAddr::V6(x) => {
            l <= 128 && u128::from(x) & !u128::MAX.checked_shl(128 - u32::from(l)).unwrap_or(0) == 0
        }
    };
    if !ok {
        return Err(c.err(
            path,
            format!("{s:?}: not a prefix (host bits set or length too long)"),
        ));
    }
    Ok((a, l))
}

/// Validates the section; `own` are the router's dataplane addresses.
pub(crate) fn validate(c: &Ctx<'_>, r: &RawIpsec, own: &[IpAddr]) -> R<Ipsec> {
    if r.sa.is_empty() {
        return Err(c.err(
            "dataplane.ipsec",
            "[dataplane.ipsec] needs [[dataplane.ipsec.sa]] entries",
        ));
    }
    let mut sas: Vec<IpsecSa> = Vec::new();
    for (i, s) in r.sa.iter().enumerate() {
        let p = |f: &str| format!("dataplane.ipsec.sa[{i}].{f}");
        let spi = u32::try_from(s.spi)
            .ok()
            .filter(|&x| x >= 256)
            .ok_or_else(|| {
                c.err(
                    &p("spi"),
                    format!("{}: an SPI is 256..=4294967295 (RFC 4303 §2.1)", s.spi),
                )
            })?;
        let direction = match s.direction.as_str() {
            "out" => IpsecDirection::Out,
            "in" => IpsecDirection::In,
            o => {
                return Err(c.err(
                    &p("direction"),
                    format!("{o:?}: expected \"in\" or \"out\""),
                ))
            }
        };
        if sas.iter().any(|x| x.spi == spi && x.direction == direction) {
            return Err(c.err(
                &p("spi"),
                format!("SPI {spi:#x} is used twice in one direction"),
            ));
        }
        let key = hex::<16>(&s.key)
            .ok_or_else(|| c.err(&p("key"), "an AES-128 key is 32 hex digits (16 bytes)"))?;
        let salt = hex::<4>(&s.salt).ok_or_else(|| {
            c.err(
                &p("salt"),
                "the salt is 8 hex digits (4 bytes, RFC 4106 §8.1)",
            )
        })?;
        let v4 = |f: &str, v: &str| -> R<Ipv4Addr> {
            match v.parse::<IpAddr>() {
                Ok(IpAddr::V4(a)) => Ok(a),
                Ok(IpAddr::V6(_)) => Err(c.err(
                    &p(f),
                    "an IPv6 tunnel (outer IPv6) is not supported yet: tunnel endpoints are IPv4",
                )),
                Err(_) => Err(c.err(&p(f), format!("{v:?}: expected an IPv4 address"))),
            }
        };
        let tunnel_src = v4("tunnel_src", &s.tunnel_src)?;
        let tunnel_dst = v4("tunnel_dst", &s.tunnel_dst)?;
        let (ours, f) = match direction {
            IpsecDirection::Out => (tunnel_src, "tunnel_src"),
            IpsecDirection::In => (tunnel_dst, "tunnel_dst"),
        };
        if !own.contains(&IpAddr::V4(ours)) {
            return Err(c.err(
                &p(f),
                format!(
                    "{ours} is not an address of a [[dataplane.interface]]: our tunnel end must be"
                ),
            ));
        }
        if s.selectors.is_empty() {
            return Err(c.err(
                &p("selectors"),
                "an SA needs selectors (out: the destinations it encrypts; in: the sources it may carry)",
            ));
        }
        let selectors = s
            .selectors
            .iter()
            .enumerate()
            .map(|(k, x)| prefix(c, &format!("{}[{k}]", p("selectors")), x))
            .collect::<R<Vec<_>>>()?;
        let replay_window = match (direction, s.replay_window) {
            (_, None) => 64,
            (IpsecDirection::Out, Some(_)) => {
                return Err(c.err(
                    &p("replay_window"),
                    "replay_window applies to inbound SAs (direction = \"in\")",
                ))
            }
            (IpsecDirection::In, Some(w)) if (64..=4096).contains(&w) && w % 64 == 0 => w as u32,
            (IpsecDirection::In, Some(w)) => {
                return Err(c.err(
                    &p("replay_window"),
                    format!("{w}: the window is a multiple of 64 in 64..=4096 bits"),
                ))
            }
        };
        sas.push(IpsecSa {
            spi,
            direction,
            key,
            salt,
            tunnel_src,
            tunnel_dst,
            selectors,
            replay_window,
        });
    }
    Ok(Ipsec { sas })
}

#[cfg(test)]
mod tests {
    const HEAD: &str =
        "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n[dataplane]\nio = \"af_packet\"\n\
        [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.2.1/24\"]\n";
    const OUT: &str = "[[dataplane.ipsec.sa]]\nspi = 0x1001\ndirection = \"out\"\n\
        key = \"00112233445566778899aabbccddeeff\"\nsalt = \"01020304\"\n\
        tunnel_src = \"198.18.2.1\"\ntunnel_dst = \"198.18.2.2\"\nselectors = [\"198.18.3.0/24\", \"2001:db8:3::/64\"]\n";
    const IN: &str = "[[dataplane.ipsec.sa]]\nspi = 0x2001\ndirection = \"in\"\n\
        key = \"ffeeddccbbaa99887766554433221100\"\nsalt = \"05060708\"\n\
        tunnel_src = \"198.18.2.2\"\ntunnel_dst = \"198.18.2.1\"\nselectors = [\"198.18.3.0/24\"]\nreplay_window = 128\n";

    #[test]
    fn parses_both_directions() {
        let c = crate::parse(&format!("{HEAD}{OUT}{IN}"), "t.toml").expect("valid");
        let s = c.dataplane.expect("dataplane").ipsec.expect("ipsec").sas;
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].spi, s[0].direction),
            (0x1001, super::IpsecDirection::Out)
        );
        assert_eq!(s[0].key[0], 0x00);
        assert_eq!(s[0].salt, [1, 2, 3, 4]);
        assert_eq!(s[0].selectors.len(), 2);
        assert_eq!((s[1].spi, s[1].replay_window), (0x2001, 128));
        assert!(
            !format!("{:?}", s[0]).contains("0011"),
            "the key is never printed"
        );
    }

    #[test]
    fn rejects_with_file_line_and_field() {
        for (from, to, field, msg) in [
            (
                "spi = 0x1001",
                "spi = 255",
                "dataplane.ipsec.sa[0].spi",
                "256",
            ),
            (
                "direction = \"out\"",
                "direction = \"both\"",
                "dataplane.ipsec.sa[0].direction",
                "expected",
            ),
            (
                "key = \"00112233445566778899aabbccddeeff\"",
                "key = \"0011\"",
                "dataplane.ipsec.sa[0].key",
                "32 hex",
            ),
            (
                "salt = \"01020304\"",
                "salt = \"0102030g\"",
                "dataplane.ipsec.sa[0].salt",
                "8 hex",
            ),
            (
                "tunnel_src = \"198.18.2.1\"",
                "tunnel_src = \"198.18.9.1\"",
                "dataplane.ipsec.sa[0].tunnel_src",
                "not an address",
            ),
            (
                "tunnel_dst = \"198.18.2.2\"",
                "tunnel_dst = \"2001:db8::2\"",
                "dataplane.ipsec.sa[0].tunnel_dst",
                "not supported yet",
            ),
            (
                "selectors = [\"198.18.3.0/24\", \"2001:db8:3::/64\"]",
                "selectors = []",
                "dataplane.ipsec.sa[0].selectors",
                "needs selectors",
            ),
            (
                "selectors = [\"198.18.3.0/24\", \"2001:db8:3::/64\"]",
                "selectors = [\"198.18.3.1/24\"]",
                "dataplane.ipsec.sa[0].selectors[0]",
                "not a prefix",
            ),
            (
                "tunnel_dst = \"198.18.2.2\"\n",
                "tunnel_dst = \"198.18.2.2\"\nreplay_window = 64\n",
                "dataplane.ipsec.sa[0].replay_window",
                "inbound",
            ),
        ] {
            let out = OUT.replace(from, to);
            assert_ne!(out, OUT, "{from}");
            let e = crate::parse(&format!("{HEAD}{out}"), "t.toml").expect_err(to);
            assert_eq!(e.field, field, "{to}: {e}");
            assert!(e.message.contains(msg), "{to}: {e}");
            assert!(e.line > 0, "{to}: a line: {e}");
        }
        let bad_window = IN.replace("replay_window = 128", "replay_window = 100");
        let e = crate::parse(&format!("{HEAD}{bad_window}"), "t.toml").expect_err("window");
        assert_eq!(e.field, "dataplane.ipsec.sa[0].replay_window");
        let twice = format!(
            "{HEAD}{OUT}{}",
            OUT.replace("198.18.3.0/24", "198.18.4.0/24")
        );
        let e = crate::parse(&twice, "t.toml").expect_err("spi twice");
        assert_eq!(e.field, "dataplane.ipsec.sa[1].spi");
        let e = crate::parse(&format!("{HEAD}[dataplane.ipsec]\n"), "t.toml").expect_err("empty");
        assert_eq!(e.field, "dataplane.ipsec");
        let e = crate::parse(&format!("{HEAD}{OUT}mode = \"transport\"\n"), "t.toml")
            .expect_err("unknown key");
        assert!(e.message.contains("mode"), "{e}");
        // One core and the graph engine only.
        let two = HEAD.replace("io = \"af_packet\"", "io = \"af_packet\"\ncores = 2");
        let e = crate::parse(&format!("{two}{OUT}"), "t.toml").expect_err("cores");
        assert_eq!(e.field, "dataplane.cores");
        assert!(e.message.contains("not supported yet"), "{e}");
        let fast = HEAD.replace(
            "io = \"af_packet\"",
            "io = \"af_packet\"\nengine = \"fast\"",
        );
        let e = crate::parse(&format!("{fast}{OUT}"), "t.toml").expect_err("fast");
        assert_eq!(e.field, "dataplane.engine");
        assert!(e.message.contains("not supported yet"), "{e}");
    }
}
