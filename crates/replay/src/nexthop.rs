//! Next-hop rewriting of stored UPDATEs, in place.
//!
//! A recorded UPDATE carries the next hops of the collector's link, which
//! do not exist where it is replayed: DUTs that check next-hop
//! reachability (RFC 4271 §9.1.2, "the NEXT_HOP ... is resolvable") drop
//! such routes, others keep them, so the DUTs would end with different
//! tables. Replay therefore sends what the peer itself would send on an
//! eBGP session: its own address as the next hop (§5.1.3).
//!
//! The value is overwritten where it sits, so a stored UPDATE is not
//! decoded and re-encoded:
//! - NEXT_HOP (type 3, 4 octets): the session's IPv4 address.
//! - MP_REACH_NLRI (type 14, RFC 4760 §3) for AFI 1 with a 4-octet next
//!   hop: the same.
//! - MP_REACH_NLRI for AFI 2 (RFC 2545 §3): a 16-octet next hop becomes the
//!   caller's IPv6 address; a 32-octet one (global + link-local) loses its
//!   link-local half, since the recorded link-local address means nothing on
//!   our link and §3 allows the global address alone. That removal shortens
//!   the attribute, the path-attribute block and the message by 16 octets
//!   (three length fields patched, the tail moved).
//!
//! Other next-hop forms (RFC 8950 IPv6 next hops for IPv4 routes, VPN
//! families) are left as they are and counted by the caller.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Why an UPDATE could not be patched.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum NhError {
    /// The message does not frame (lengths run past its end).
    Malformed,
}

/// What [`set_next_hops`] did to one message.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NhPatch {
    /// Next hops overwritten (NEXT_HOP and MP_REACH together).
    pub rewritten: u32,
    /// MP_REACH next hops of a form we leave alone.
    pub kept: u32,
}

const HEADER: usize = 19;
const NEXT_HOP: u8 = 3;
const MP_REACH: u8 = 14;
const EXTENDED_LENGTH: u8 = 0x10;

fn get16(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at..at + 2)? {
        [x, y] => Some(usize::from(u16::from_be_bytes([*x, *y]))),
        _ => None,
    }
}

fn put16(b: &mut [u8], at: usize, v: usize) -> Option<()> {
    let v = u16::try_from(v).ok()?;
    b.get_mut(at..at + 2)?.copy_from_slice(&v.to_be_bytes());
    Some(())
}

fn put(b: &mut [u8], at: usize, v: &[u8]) -> Option<()> {
    b.get_mut(at..at + v.len())?.copy_from_slice(v);
    Some(())
}

/// Sets every next hop of the UPDATE `msg` (a whole message, header
/// included) to `nh4` / `nh6`. On error `msg` may be partly patched and
/// must be dropped.
pub(crate) fn set_next_hops(
    msg: &mut Vec<u8>,
    nh4: Ipv4Addr,
    nh6: Ipv6Addr,
) -> Result<NhPatch, NhError> {
    patch(msg, nh4, nh6).ok_or(NhError::Malformed)
}

fn patch(msg: &mut Vec<u8>, nh4: Ipv4Addr, nh6: Ipv6Addr) -> Option<NhPatch> {
    let mut done = NhPatch::default();
    if get16(msg, 16)? != msg.len() {
        return None;
    }
    let wl = get16(msg, HEADER)?;
    let tpa_at = HEADER + 2 + wl;
    let mut end = tpa_at + 2 + get16(msg, tpa_at)?;
    if end > msg.len() {
        return None;
    }
    let mut i = tpa_at + 2;
    while i < end {
        let flags = *msg.get(i)?;
        let typ = *msg.get(i + 1)?;
        let (hl, len) = if flags & EXTENDED_LENGTH != 0 {
            (4, get16(msg, i + 2)?)
        } else {
            (3, usize::from(*msg.get(i + 2)?))
        };
        let v = i + hl;
        let mut vend = v + len;
        if vend > end {
            return None;
        }
        match typ {
            NEXT_HOP if len == 4 => {
                put(msg, v, &nh4.octets())?;
                done.rewritten += 1;
            }
            MP_REACH if len >= 4 => {
                let afi = get16(msg, v)?;
                let nhl = usize::from(*msg.get(v + 3)?);
                let at = v + 4;
                if at + nhl > vend {
                    return None;
                }
                match (afi, nhl) {
                    (1, 4) => put(msg, at, &nh4.octets())?,
                    (2, 16) => put(msg, at, &nh6.octets())?,
                    (2, 32) => {
                        put(msg, at, &nh6.octets())?;
                        msg.drain(at + 16..at + 32);
                        *msg.get_mut(v + 3)? = 16;
                        if hl == 4 {
                            put16(msg, i + 2, len - 16)?;
                        } else {
                            *msg.get_mut(i + 2)? = u8::try_from(len - 16).ok()?;
                        }
                        put16(msg, tpa_at, end - 16 - (tpa_at + 2))?;
                        let total = msg.len();
                        put16(msg, 16, total)?;
                        end -= 16;
                        vend -= 16;
                    }
                    _ => {
                        done.kept += 1;
                        i = vend;
                        continue;
                    }
                }
                done.rewritten += 1;
            }
            _ => {}
        }
        i = vend;
    }
    Some(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::send_ctx;
    use bgp_wire::{
        AttrValue, Message, MpReach, NextHop, Nlri, Origin, PathAttr, PathAttribute, UpdateMessage,
    };

    const NH4: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 7);
    const NH6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 2);

    fn encode(m: &UpdateMessage) -> Vec<u8> {
        let mut out = Vec::new();
        m.encode(send_ctx(), &mut out).expect("encodes");
        out
    }

    /// (NEXT_HOP, MP_REACH next hop, MP_REACH NLRI count) as decoded.
    fn next_hops(msg: &[u8]) -> (Option<Ipv4Addr>, Option<NextHop>, usize) {
        let (Message::Update(u), n) = Message::parse(msg, send_ctx()).expect("parses") else {
            panic!("not an UPDATE")
        };
        assert_eq!(n, msg.len());
        let mut nh = None;
        for a in u.attributes() {
            if let PathAttribute::NextHop(x) = a.expect("frames").typed(send_ctx()).expect("ok") {
                nh = Some(x);
            }
        }
        let (mut hops, mut count) = (None, 0);
        if let Some(mp) = u.mp_reach() {
            let mp = mp.expect("MP_REACH decodes");
            hops = mp.next_hop();
            count = mp.nlri().map_while(Result::ok).count();
        }
        (nh, hops, count)
    }

    #[test]
    fn ipv4_next_hop_is_patched_in_place() {
        let m = UpdateMessage {
            withdrawn: vec![Nlri::new("10.9.0.0/16".parse().expect("prefix"))],
            attributes: vec![
                PathAttr::new(AttrValue::Origin(Origin::Igp)),
                PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 1))),
            ],
            nlri: vec![Nlri::new("10.0.0.0/8".parse().expect("prefix"))],
        };
        let mut msg = encode(&m);
        let len = msg.len();
        let p = set_next_hops(&mut msg, NH4, NH6).expect("patches");
        assert_eq!(
            p,
            NhPatch {
                rewritten: 1,
                kept: 0
            }
        );
        assert_eq!(msg.len(), len, "same size: patched, not re-encoded");
        assert_eq!(next_hops(&msg).0, Some(NH4));
    }

    fn v6_update(hop: NextHop) -> UpdateMessage {
        UpdateMessage {
            withdrawn: vec![],
            attributes: vec![
                PathAttr::new(AttrValue::Origin(Origin::Igp)),
                PathAttr::new(AttrValue::MpReach(MpReach::new(
                    base::AfiSafi::IPV6_UNICAST,
                    hop,
                    vec![
                        Nlri::new("2001:db8::/32".parse().expect("prefix")),
                        Nlri::new("2001:db9::/48".parse().expect("prefix")),
                    ],
                ))),
            ],
            nlri: vec![],
        }
    }

    #[test]
    fn ipv6_global_next_hop_is_replaced() {
        let mut msg = encode(&v6_update(NextHop::V6(
            "2001:7f8::1".parse().expect("addr"),
        )));
        let len = msg.len();
        let p = set_next_hops(&mut msg, NH4, NH6).expect("patches");
        assert_eq!(p.rewritten, 1);
        assert_eq!(msg.len(), len);
        assert_eq!(next_hops(&msg), (None, Some(NextHop::V6(NH6)), 2));
    }

    #[test]
    fn link_local_half_is_dropped_and_lengths_follow() {
        let mut msg = encode(&v6_update(NextHop::V6LinkLocal(
            "2001:7f8::1".parse().expect("addr"),
            "fe80::1".parse().expect("addr"),
        )));
        let len = msg.len();
        let p = set_next_hops(&mut msg, NH4, NH6).expect("patches");
        assert_eq!(p.rewritten, 1);
        assert_eq!(msg.len(), len - 16);
        // Parses as a whole message again, with both prefixes intact.
        assert_eq!(next_hops(&msg), (None, Some(NextHop::V6(NH6)), 2));
    }

    #[test]
    fn bad_framing_is_refused_without_panic() {
        let good = encode(&v6_update(NextHop::V6(
            "2001:7f8::1".parse().expect("addr"),
        )));
        for cut in 0..good.len() {
            let mut m = good.get(..cut).unwrap_or_default().to_vec();
            assert_eq!(
                set_next_hops(&mut m, NH4, NH6),
                Err(NhError::Malformed),
                "{cut}"
            );
        }
        // A path-attribute length past the end.
        let mut m = good.clone();
        if let Some(b) = m.get_mut(HEADER + 3) {
            *b = 0xff;
        }
        assert_eq!(set_next_hops(&mut m, NH4, NH6), Err(NhError::Malformed));
    }
}
