//! One-prefix UPDATEs for Route Monitoring of RIB contents (RFC 7854 §4.6:
//! "a BGP Update PDU"): a route as the RIB holds it (an attribute block
//! whose MP_REACH_NLRI, if any, carries only the next hop, the form
//! `bgp_rib::AttrSet::raw` keeps) becomes an announcement; a vanished one
//! a withdrawal; and End-of-RIB (RFC 4724 §2) marks the end of a table
//! dump (RFC 7854 §5). ASNs are the block's (4 octets in the RIB: the
//! per-peer header then has no A flag).

use base::{Afi, Prefix, Safi};
use bgp_wire::consts::attr_flags as af;
use bgp_wire::consts::attr_type as at;
use bgp_wire::consts::msg_type;
use bgp_wire::header::{begin_message, finish_message};
use bgp_wire::nlri::put_prefix;
use bgp_wire::{AttrIter, ParseCtx};

/// BMP carries PDUs as long as RFC 8654 allows.
const CTX: ParseCtx = ParseCtx::modern();

fn attr_header(flags: u8, ty: u8, len: usize, out: &mut Vec<u8>) {
    if len > 255 {
        out.extend_from_slice(&[flags | af::EXTENDED_LENGTH, ty]);
        out.extend_from_slice(&(len.min(usize::from(u16::MAX)) as u16).to_be_bytes());
    } else {
        out.extend_from_slice(&[flags & !af::EXTENDED_LENGTH, ty, len as u8]);
    }
}

/// Patches the 2-octet length field at `at` with what follows it.
fn patch_len(out: &mut [u8], at: usize) -> bool {
    let Ok(n) = u16::try_from(out.len() - at - 2) else {
        return false;
    };
    if let Some(f) = out.get_mut(at..at + 2) {
        f.copy_from_slice(&n.to_be_bytes());
    }
    true
}

fn is_v4_unicast(p: &Prefix, safi: Safi) -> bool {
    p.afi() == Afi::Ipv4 && safi == Safi::Unicast
}

/// Appends an UPDATE announcing `prefix` (with ADD-PATH `path_id` when
/// the peer's session carries path identifiers) with the attributes
/// `attrs`. A route of another family without an MP_REACH_NLRI gets one
/// with the unspecified next hop. False (and nothing appended) when the
/// block is malformed.
pub fn announce(
    prefix: &Prefix,
    safi: Safi,
    path_id: Option<u32>,
    attrs: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let s = begin_message(out, msg_type::UPDATE);
    out.extend_from_slice(&[0, 0]); // no withdrawn routes
    let alen = out.len();
    out.extend_from_slice(&[0, 0]);
    let mut in_mp = false;
    for a in AttrIter::new(attrs) {
        let Ok(a) = a else {
            out.truncate(s);
            return false;
        };
        if a.type_code == at::MP_REACH_NLRI {
            // AFI (2) SAFI (1) NH length (1) NH, Reserved (1), NLRI.
            let nh = a
                .value
                .get(3)
                .and_then(|&l| a.value.get(4..4 + usize::from(l)));
            let Some(nh) = nh else {
                out.truncate(s);
                return false;
            };
            let mut v = Vec::with_capacity(nh.len() + 30);
            v.extend_from_slice(&prefix.afi().to_u16().to_be_bytes());
            v.push(safi.to_u8());
            v.push(nh.len() as u8);
            v.extend_from_slice(nh);
            v.push(0);
            put_prefix(&mut v, prefix, path_id);
            attr_header(a.flags, at::MP_REACH_NLRI, v.len(), out);
            out.extend_from_slice(&v);
            in_mp = true;
        } else if a.type_code == at::NEXT_HOP && !is_v4_unicast(prefix, safi) {
            // Only IPv4 unicast NLRI use NEXT_HOP (RFC 4760 §3).
            continue;
        } else {
            let start = a.offset as usize;
            let Some(tlv) = attrs.get(start..start + a.tlv_len as usize) else {
                out.truncate(s);
                return false;
            };
            out.extend_from_slice(tlv);
        }
    }
    if !in_mp && !is_v4_unicast(prefix, safi) {
        // A route without a next hop (one this router originates, whose
        // next hop is only chosen per neighbour on export): the
        // unspecified address of the prefix's family.
        let nh_len = if prefix.afi() == Afi::Ipv6 { 16 } else { 4 };
        let mut v = Vec::with_capacity(nh_len + 30);
        v.extend_from_slice(&prefix.afi().to_u16().to_be_bytes());
        v.push(safi.to_u8());
        v.push(nh_len as u8);
        v.resize(v.len() + nh_len, 0);
        v.push(0);
        put_prefix(&mut v, prefix, path_id);
        attr_header(af::OPTIONAL, at::MP_REACH_NLRI, v.len(), out);
        out.extend_from_slice(&v);
        in_mp = true;
    }
    if !patch_len(out, alen) {
        out.truncate(s);
        return false;
    }
    if !in_mp {
        put_prefix(out, prefix, path_id);
    }
    if finish_message(out, s, CTX).is_err() {
        out.truncate(s);
        return false;
    }
    true
}

/// Appends an UPDATE withdrawing `prefix`.
pub fn withdraw(prefix: &Prefix, safi: Safi, path_id: Option<u32>, out: &mut Vec<u8>) {
    let s = begin_message(out, msg_type::UPDATE);
    if is_v4_unicast(prefix, safi) {
        let w = out.len();
        out.extend_from_slice(&[0, 0]);
        put_prefix(out, prefix, path_id);
        patch_len(out, w);
        out.extend_from_slice(&[0, 0]);
    } else {
        out.extend_from_slice(&[0, 0]);
        let mut v = Vec::with_capacity(24);
        v.extend_from_slice(&prefix.afi().to_u16().to_be_bytes());
        v.push(safi.to_u8());
        put_prefix(&mut v, prefix, path_id);
        let mut a = Vec::with_capacity(v.len() + 4);
        attr_header(af::OPTIONAL, at::MP_UNREACH_NLRI, v.len(), &mut a);
        a.extend_from_slice(&v);
        out.extend_from_slice(&(a.len() as u16).to_be_bytes());
        out.extend_from_slice(&a);
    }
    // A one-prefix UPDATE is always below 4096 octets.
    let _ = finish_message(out, s, CTX);
}

/// Appends an End-of-RIB marker of (`afi`, `safi`) (RFC 4724 §2): an empty
/// UPDATE for IPv4 unicast, else an empty MP_UNREACH_NLRI.
pub fn end_of_rib(afi: Afi, safi: Safi, out: &mut Vec<u8>) {
    let s = begin_message(out, msg_type::UPDATE);
    if afi == Afi::Ipv4 && safi == Safi::Unicast {
        out.extend_from_slice(&[0, 0, 0, 0]);
    } else {
        out.extend_from_slice(&[0, 0, 0, 6, af::OPTIONAL, at::MP_UNREACH_NLRI, 3]);
        out.extend_from_slice(&afi.to_u16().to_be_bytes());
        out.push(safi.to_u8());
    }
    let _ = finish_message(out, s, CTX);
}
