//! Rewriting a stored route's path attributes for our session: what a
//! speaker that learned the route would send to the DUT.
//!
//! The propagation rules are bgp-rib's, the same the daemon's encoder
//! follows: which attributes go, which are dropped and which get the
//! Partial bit ([`bgp_rib::attr_fate`]), the AS_PATH sent
//! ([`bgp_rib::export_as_path`]: our AS prepended on eBGP, RFC 4271
//! §5.1.2; confederation segments left out on eBGP, RFC 5065 §5.3) and the
//! LOCAL_PREF added on iBGP ([`bgp_rib::DEFAULT_LOCAL_PREF`]). What is left
//! here is replay's own framing, one pass over raw bytes into a reused
//! buffer (no allocation per route):
//! - 2-octet input (legacy TABLE_DUMP, RFC 6396 §4.2) is widened to the
//!   4-octet form our session uses (RFC 6793 §4.1): AS_PATH and AGGREGATOR.
//! - NEXT_HOP: ours (§5.1.3), for IPv4; IPv6 routes get MP_REACH_NLRI
//!   built by the packer.
//! - Attributes keep the input's order; missing ORIGIN (IGP), AS_PATH and,
//!   for IPv4, NEXT_HOP (and LOCAL_PREF on iBGP) are inserted in type-code
//!   position so that the DUT does not treat the route as withdrawn
//!   (RFC 7606 §3.d). AS_PATH is always written in the extended-length
//!   form.

use crate::feed::FeedParams;
use crate::pack::put_attr;
use bgp_rib::{attr_fate, export_as_path, AttrFate, DEFAULT_LOCAL_PREF};
use bgp_wire::consts::{attr_flags as af, attr_type as at};
use bgp_wire::{AsPathView, AttrIter, RawAttr};

/// Why a stored route was left out.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    /// The attribute block does not frame (RFC 7606 §4).
    Malformed,
}

const WELL_KNOWN: u8 = af::TRANSITIVE;

/// Writes the rewritten attributes of one stored route into `out`.
/// `as4`: the stored AS_PATH/AGGREGATOR use 4-octet ASNs. `v6`: the route
/// is IPv6 (no NEXT_HOP attribute).
pub(crate) fn rewrite(
    raw: &[u8],
    p: &FeedParams,
    as4: bool,
    v6: bool,
    out: &mut Vec<u8>,
) -> Result<(), Skip> {
    // Validate framing first so that a bad block leaves `out` untouched.
    if AttrIter::new(raw).any(|a| a.is_err()) {
        return Err(Skip::Malformed);
    }
    let mut next = 1u8; // the lowest mandatory type code not yet handled
    for a in AttrIter::new(raw).map_while(Result::ok) {
        fill_mandatory(p, v6, a.type_code, &mut next, out);
        copy_attr(&a, p, as4, out);
    }
    fill_mandatory(p, v6, u8::MAX, &mut next, out);
    Ok(())
}

/// Emits the attributes we always send (ORIGIN, AS_PATH, NEXT_HOP for
/// IPv4, LOCAL_PREF on iBGP) with type codes below `upto` that the input
/// skipped, keeping the output in type-code order.
fn fill_mandatory(p: &FeedParams, v6: bool, upto: u8, next: &mut u8, out: &mut Vec<u8>) {
    // A stored NEXT_HOP is replaced by ours, so it is emitted when reached.
    let upto_incl = if upto == at::NEXT_HOP { upto + 1 } else { upto };
    while *next < upto_incl && *next <= at::LOCAL_PREF {
        match *next {
            // IGP: the most common value (RFC 4271 §5.1.1).
            at::ORIGIN => put_attr(out, WELL_KNOWN, at::ORIGIN, &[0]),
            at::AS_PATH => {
                let mut v = Vec::with_capacity(6);
                export_as_path(&mut v, None, p.local_as, !p.ibgp, false, true);
                put_attr(out, WELL_KNOWN, at::AS_PATH, &v);
            }
            at::NEXT_HOP if !v6 => put_attr(out, WELL_KNOWN, at::NEXT_HOP, &p.next_hop.octets()),
            at::LOCAL_PREF if p.ibgp => put_attr(
                out,
                WELL_KNOWN,
                at::LOCAL_PREF,
                &DEFAULT_LOCAL_PREF.to_be_bytes(),
            ),
            _ => {}
        }
        *next += 1;
    }
    // A present mandatory attribute counts as handled.
    if upto <= at::LOCAL_PREF && *next == upto {
        *next += 1;
    }
}

fn copy_attr(a: &RawAttr<'_>, p: &FeedParams, as4: bool, out: &mut Vec<u8>) {
    match attr_fate(a.type_code, a.flags, !p.ibgp) {
        // NEXT_HOP is ours (fill_mandatory), MP_REACH the packer's.
        AttrFate::Drop => {}
        AttrFate::Rebuild if a.type_code == at::AS_PATH => put_as_path(a.value, p, as4, out),
        AttrFate::Rebuild if !as4 && a.value.len() == 6 => {
            // AGGREGATOR: 2-octet AS + address -> 4-octet AS + address.
            let mut v = [0u8; 8];
            v[2..].copy_from_slice(a.value);
            put_attr(out, a.flags, a.type_code, &v);
        }
        AttrFate::Rebuild => put_attr(out, a.flags, a.type_code, a.value),
        AttrFate::Keep(flags) => put_attr(out, flags, a.type_code, a.value),
    }
}

/// Appends AS_PATH in 4-octet form as bgp-rib builds it for the session.
fn put_as_path(value: &[u8], p: &FeedParams, as4: bool, out: &mut Vec<u8>) {
    let hdr = out.len();
    // Extended length always: the final length is unknown until written.
    out.extend_from_slice(&[WELL_KNOWN | af::EXTENDED_LENGTH, at::AS_PATH, 0, 0]);
    let vstart = out.len();
    // A path that does not parse is sent as empty (plus our AS on eBGP).
    // Speaking as the recorded peer, the path goes as recorded: no AS
    // prepended, as a route server sends it (confederation segments are
    // still left out on eBGP).
    let path = AsPathView::parse(value, as4);
    export_as_path(out, path, p.local_as, !p.ibgp, p.as_recorded, true);
    let vlen = (out.len() - vstart).min(usize::from(u16::MAX)) as u16;
    if let Some(l) = out.get_mut(hdr + 2..hdr + 4) {
        l.copy_from_slice(&vlen.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::Asn;
    use bgp_wire::{ParseCtx, PathAttribute};
    use std::net::Ipv4Addr;

    fn params(ibgp: bool) -> FeedParams {
        FeedParams {
            local_as: Asn(65001),
            as_recorded: false,
            ibgp,
            next_hop: Ipv4Addr::new(127, 0, 0, 9),
            next_hop6: None,
        }
    }

    fn typed(out: &[u8]) -> Vec<(u8, String)> {
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        AttrIter::new(out)
            .map(|a| {
                let a = a.expect("frames");
                (a.type_code, format!("{:?}", a.typed(ctx).expect("valid")))
            })
            .collect()
    }

    #[test]
    fn ebgp_prepends_and_replaces_next_hop() {
        // ORIGIN IGP, AS_PATH 4-octet [3356 174], NEXT_HOP 1.2.3.4,
        // LOCAL_PREF 200, MP_REACH (abbreviated), COMMUNITIES 1:2.
        let raw = [
            0x40, 1, 1, 0, //
            0x40, 2, 10, 2, 2, 0, 0, 0x0d, 0x1c, 0, 0, 0, 174, //
            0x40, 3, 4, 1, 2, 3, 4, //
            0x40, 5, 4, 0, 0, 0, 200, //
            0x80, 14, 5, 4, 10, 0, 0, 1, //
            0xc0, 8, 4, 0, 1, 0, 2,
        ];
        let mut out = Vec::new();
        rewrite(&raw, &params(false), true, false, &mut out).unwrap();
        let t = typed(&out);
        let codes: Vec<u8> = t.iter().map(|x| x.0).collect();
        assert_eq!(codes, vec![1, 2, 3, 8], "{t:?}");
        assert!(t[2].1.contains("127.0.0.9"), "{t:?}");
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        let path = AttrIter::new(&out)
            .nth(1)
            .unwrap()
            .unwrap()
            .typed(ctx)
            .unwrap();
        let PathAttribute::AsPath(p) = path else {
            panic!()
        };
        let asns: Vec<u32> = p.segments().flat_map(|s| s.asns()).map(|a| a.0).collect();
        assert_eq!(asns, vec![65001, 3356, 174]);
    }

    #[test]
    fn two_octet_paths_widen_and_missing_attributes_are_added() {
        // AS_PATH 2-octet [701 1239] only; IPv4 route, iBGP.
        let raw = [0x40, 2, 6, 2, 2, 0x02, 0xbd, 0x04, 0xd7];
        let mut out = Vec::new();
        rewrite(&raw, &params(true), false, false, &mut out).unwrap();
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        let codes: Vec<u8> = AttrIter::new(&out).map(|a| a.unwrap().type_code).collect();
        assert_eq!(codes, vec![1, 2, 3, 5]);
        let PathAttribute::AsPath(p) = AttrIter::new(&out)
            .nth(1)
            .unwrap()
            .unwrap()
            .typed(ctx)
            .unwrap()
        else {
            panic!()
        };
        let asns: Vec<u32> = p.segments().flat_map(|s| s.asns()).map(|a| a.0).collect();
        assert_eq!(asns, vec![701, 1239], "iBGP does not prepend");
        // IPv6 routes get no NEXT_HOP; a bad block is refused.
        out.clear();
        rewrite(&raw, &params(false), false, true, &mut out).unwrap();
        let codes: Vec<u8> = AttrIter::new(&out).map(|a| a.unwrap().type_code).collect();
        assert_eq!(codes, vec![1, 2]);
        assert_eq!(
            rewrite(&[0x40, 1, 5, 0], &params(false), true, false, &mut out),
            Err(Skip::Malformed)
        );
    }

    /// Attribute blocks covering every rule: (raw, as4).
    fn samples() -> Vec<(Vec<u8>, bool)> {
        let mut v = vec![
            // The eBGP sample above: 4-octet path, LOCAL_PREF, MP_REACH.
            (
                vec![
                    0x40, 1, 1, 0, 0x40, 2, 10, 2, 2, 0, 0, 0x0d, 0x1c, 0, 0, 0, 174, 0x40, 3, 4,
                    1, 2, 3, 4, 0x40, 5, 4, 0, 0, 0, 200, 0x80, 14, 5, 4, 10, 0, 0, 1, 0xc0, 8, 4,
                    0, 1, 0, 2,
                ],
                true,
            ),
            // 2-octet AS_PATH only.
            (vec![0x40, 2, 6, 2, 2, 0x02, 0xbd, 0x04, 0xd7], false),
            // Nothing at all.
            (vec![], true),
            (vec![], false),
            // Legacy: AS_SET first, NEXT_HOP, MED, LOCAL_PREF,
            // ATOMIC_AGGREGATE, AGGREGATOR (6), COMMUNITIES, ORIGINATOR_ID,
            // CLUSTER_LIST, AS4_PATH, AS4_AGGREGATOR, unknown transitive and
            // non-transitive, extended length on a short value.
            (
                vec![
                    0x40, 1, 1, 2, //
                    0x40, 2, 8, 1, 1, 0x0d, 0x1c, 2, 1, 0, 174, //
                    0x40, 3, 4, 10, 0, 0, 1, //
                    0x80, 4, 4, 0, 0, 0, 7, //
                    0x40, 5, 4, 0, 0, 0, 50, //
                    0x40, 6, 0, //
                    0xc0, 7, 6, 0x0d, 0x1c, 10, 0, 0, 9, //
                    0xd0, 8, 0, 8, 0, 1, 0, 2, 0xff, 0xff, 0xff, 0x01, //
                    0x80, 9, 4, 1, 1, 1, 1, //
                    0x80, 10, 8, 2, 2, 2, 2, 3, 3, 3, 3, //
                    0xc0, 17, 6, 2, 1, 0, 3, 0, 0, //
                    0xc0, 18, 8, 0, 3, 0, 0, 10, 0, 0, 9, //
                    0xc0, 99, 2, 0xab, 0xcd, //
                    0x80, 98, 1, 0x01, //
                ],
                false,
            ),
            // 4-octet: no ORIGIN, MED before a missing LOCAL_PREF, AGGREGATOR
            // (8), large communities, OTC, unknown transitive with Partial.
            (
                vec![
                    0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe8, //
                    0x80, 4, 4, 0, 0, 0, 1, //
                    0xc0, 7, 8, 0, 1, 0, 0, 192, 0, 2, 1, //
                    0xc0, 32, 12, 0, 0, 0xfd, 0xe8, 0, 0, 0, 1, 0, 0, 0, 2, //
                    0xc0, 35, 4, 0, 0, 0xfd, 0xe9, //
                    0xe0, 200, 3, 1, 2, 3, //
                ],
                true,
            ),
            // Out of type-code order: COMMUNITIES before ORIGIN.
            (
                vec![
                    0xc0, 8, 4, 0, 1, 0, 2, 0x40, 1, 1, 1, 0x40, 2, 0, 0x40, 3, 4, 1, 1, 1, 1,
                ],
                true,
            ),
        ];
        // A full leading AS_SEQUENCE (255 ASNs: our AS gets its own
        // segment) and a path over 255 octets.
        let mut path = vec![2u8, 255];
        for i in 0..255u32 {
            path.extend_from_slice(&(64_512 + i).to_be_bytes());
        }
        path.extend_from_slice(&[1, 2, 0, 0, 0, 1, 0, 0, 0, 2]);
        let mut raw = vec![0x40, 1, 1, 0, 0x50, 2];
        raw.extend_from_slice(&(path.len() as u16).to_be_bytes());
        raw.extend_from_slice(&path);
        v.push((raw, true));
        v
    }

    /// FNV-1a over the outcome and bytes of the four rewrites (eBGP/iBGP x
    /// IPv4/IPv6) of one block.
    fn digest(raw: &[u8], as4: bool, h: &mut u64) {
        let mut put = |bytes: &[u8]| {
            for &b in bytes {
                *h ^= u64::from(b);
                *h = h.wrapping_mul(0x100_0000_01b3);
            }
        };
        for ibgp in [false, true] {
            for v6 in [false, true] {
                let mut out = Vec::new();
                let r = rewrite(raw, &params(ibgp), as4, v6, &mut out);
                put(&[u8::from(r.is_ok())]);
                put(&(out.len() as u32).to_be_bytes());
                put(&out);
            }
        }
    }

    const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

    // The digests below were recorded with replay's own rewrite before the
    // rules moved to bgp-rib (commit d826992 has it next to a byte-for-byte
    // comparison): the output must not change.

    #[test]
    fn same_bytes_as_before_on_samples() {
        let want = [
            0x9b43_de2d_7dd8_92df_u64,
            0x0096_ee95_5e66_fc7b,
            0x25c9_0043_4427_630b,
            0x25c9_0043_4427_630b,
            0xf969_ccbe_3bac_1945,
            0x60fa_7469_6b8a_af57,
            0x05c4_9ff3_1055_6681,
            0x0939_d6ba_7298_e72b,
        ];
        let samples = samples();
        assert_eq!(samples.len(), want.len());
        for (i, ((raw, as4), want)) in samples.iter().zip(want).enumerate() {
            let mut h = FNV_START;
            digest(raw, *as4, &mut h);
            assert_eq!(h, want, "sample {i}: {raw:02x?}");
        }
    }

    #[test]
    fn same_bytes_as_before_on_shared_dumps() {
        use mrt::{Body, MrtReader};
        let dir =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
        // (file, routes, digest) over the first 100,000 routes.
        let want = [
            ("bview.20020722.2337.gz", 100_000, 0x57e9_f7b3_ed1a_cded_u64),
            (
                "rib.20140523.0600_firstMB.bz2",
                100_018,
                0x7562_a35e_a5e9_14f5,
            ),
            (
                "rib6.20151101.0600_firstMB.bz2",
                100_001,
                0x88af_04ff_bdc0_7f63,
            ),
            (
                "routeviews.route-views.jinx.ribs.1401487200.bz2",
                100_000,
                0x7899_6cb2_e8ae_6ad1,
            ),
        ];
        for (name, routes, digest_want) in want {
            let path = dir.join(name);
            let mut r = MrtReader::open(&path)
                .unwrap_or_else(|e| panic!("shared MRT data missing: {}: {e}", path.display()));
            let mut h = FNV_START;
            let mut n = 0usize;
            while let Some(rec) = r.next_record() {
                let Ok(rec) = rec else { continue };
                match rec.body {
                    Body::Rib(rib) => {
                        for e in rib.entries() {
                            digest(e.attributes, true, &mut h);
                            n += 1;
                        }
                    }
                    Body::TableDump(td) => {
                        digest(td.attributes, false, &mut h);
                        n += 1;
                    }
                    _ => {}
                }
                if n >= 100_000 {
                    break;
                }
            }
            assert_eq!((n, h), (routes, digest_want), "{name}");
        }
    }
}
