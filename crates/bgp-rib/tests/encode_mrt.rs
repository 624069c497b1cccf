//! The encoder against real attribute sets: every route of two partial
//! RouteViews RIB dumps (IPv4 and IPv6, tens of peers) is interned,
//! encoded for a 2-octet eBGP peer and a 4-octet iBGP peer, and parsed
//! back. Needs the shared MRT data (see /work/shared/data/mrt/README.md).

use std::net::Ipv4Addr;
use std::path::PathBuf;

use base::{Asn, Prefix};
use bgp_rib::{
    AttrsBuilder, BestPathConfig, EncodeParams, ExportBatch, NextHopMode, RibShard, UpdateEncoder,
};
use bgp_wire::consts::{attr_flags as af, attr_type as at};
use bgp_wire::{
    attr::expected_class, frame, AsPath, AttrIter, AttrValue, NextHop, ParseCtx, PathAttr,
    UpdateView,
};
use mrt::{Body, MrtReader};

fn data(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt")
        .join(name);
    assert!(
        p.exists(),
        "MRT sample {} missing: the shared data set must be at ../../../shared/data/mrt",
        p.display()
    );
    p
}

/// Up to `limit` (prefix, attributes) routes of a TABLE_DUMP_V2 file. The
/// files are truncated; reading stops at the first error.
fn routes(name: &str, limit: usize) -> Vec<(Prefix, AttrsBuilder)> {
    let mut r = MrtReader::open(data(name)).unwrap();
    let mut out = Vec::new();
    while let Some(Ok(rec)) = r.next_record() {
        let Body::Rib(rib) = rec.body else { continue };
        let ctx = ParseCtx::mrt_rib(rib.afi_safi());
        for e in rib.entries() {
            let attrs = AttrIter::new(e.attributes)
                .map_while(Result::ok)
                .map(|a| a.to_owned(ctx));
            out.push((rib.prefix, AttrsBuilder::from_attrs(attrs)));
        }
        if out.len() >= limit {
            break;
        }
    }
    out
}

fn params(ebgp: bool, four: bool) -> EncodeParams {
    EncodeParams {
        local_asn: Asn(400_000),
        peer_asn: Asn(65100),
        ebgp,
        four_octet_asn: four,
        extended_message: false,
        families: vec![base::AfiSafi::IPV4_UNICAST, base::AfiSafi::IPV6_UNICAST],
        add_path_tx: vec![],
        next_hop: NextHopMode::Auto,
        ext_next_hop: vec![],
        local_v4: Some(Ipv4Addr::new(192, 0, 2, 1)),
        local_v6: Some("2001:db8::1".parse().unwrap()),
        local_v6_link_local: None,
        route_server: false,
    }
}

/// What the peer should decode for a stored set.
fn expected(b: &AttrsBuilder, ebgp: bool) -> Vec<PathAttr> {
    let mut v: Vec<PathAttr> = Vec::new();
    for a in b.attrs() {
        let code = a.type_code();
        let drop = matches!(code, at::AS4_PATH | at::AS4_AGGREGATOR)
            || (ebgp && matches!(code, at::LOCAL_PREF | at::ORIGINATOR_ID | at::CLUSTER_LIST));
        if drop {
            continue;
        }
        if expected_class(code).is_none() {
            if a.flags & af::TRANSITIVE != 0 {
                v.push(PathAttr {
                    flags: a.flags | af::PARTIAL,
                    value: a.value.clone(),
                });
            }
            continue;
        }
        v.push(a.clone());
    }
    if ebgp {
        for a in &mut v {
            if let AttrValue::AsPath(p) = &mut a.value {
                let mut asns = vec![Asn(400_000)];
                let mut segs = p.segments.clone();
                segs.retain(|s| !s.kind.is_confed());
                match segs.first_mut() {
                    Some(s) if s.kind == bgp_wire::SegmentType::Sequence && s.asns.len() < 255 => {
                        asns.append(&mut s.asns);
                        s.asns = asns;
                    }
                    _ => segs.insert(0, AsPath::from_sequence(asns).segments.remove(0)),
                }
                p.segments = segs;
            }
        }
    } else if b.local_pref().is_none() {
        v.push(PathAttr::new(AttrValue::LocalPref(100)));
    }
    v.sort_by_key(PathAttr::type_code);
    v
}

fn check(name: &str, limit: usize) {
    let rs = routes(name, limit);
    assert!(rs.len() > 1000, "{name}: only {} routes read", rs.len());
    for (ebgp, four) in [(true, false), (false, true)] {
        let mut s = RibShard::new(BestPathConfig::default());
        let mut batch = ExportBatch::default();
        let mut stored = Vec::new();
        for (p, b) in &rs {
            let h = s.intern(b);
            batch.announce.push((h, vec![*p]));
            stored.push((*p, b.clone()));
        }
        let mut out = Vec::new();
        let n = UpdateEncoder::new(params(ebgp, four)).encode(&s, &batch, &mut out);
        assert_eq!(n, rs.len(), "{name}: one UPDATE per route here");
        let ctx = ParseCtx::legacy().with_four_octet_asn(four);
        let mut off = 0;
        let mut i = 0;
        while off < out.len() {
            let f = frame(&out[off..], ctx).unwrap().unwrap();
            let v = UpdateView::parse(f.body, ctx).unwrap();
            v.validate()
                .expect("re-encoded UPDATE passes RFC 7606 checks");
            let got = AttrsBuilder::from_update(&v).unwrap();
            let (p, b) = &stored[i];
            let mut nlri: Vec<Prefix> = v.nlri().map(|n| n.unwrap().prefix).collect();
            if let Some(m) = v.mp_reach() {
                nlri.extend(m.unwrap().nlri().map(|n| n.unwrap().prefix));
            }
            assert_eq!(nlri, vec![*p]);
            let mut g: Vec<PathAttr> = got.attrs().to_vec();
            g.sort_by_key(PathAttr::type_code);
            let mut want = expected(b, ebgp);
            // The length form is the encoder's choice (RFC 4271 §4.3).
            for a in g.iter_mut().chain(want.iter_mut()) {
                a.flags &= !af::EXTENDED_LENGTH;
            }
            // RFC 6793 §4.2.3: a receiver ignores AS4_PATH when AGGREGATOR
            // has a real 2-octet ASN; then AS_TRANS shows in the path.
            let agg_real = !four
                && got
                    .attrs()
                    .iter()
                    .any(|a| matches!(&a.value, AttrValue::Aggregator(x) if x.asn != Asn::TRANS));
            if agg_real {
                g.retain(|a| a.type_code() != at::AS_PATH);
                want.retain(|a| a.type_code() != at::AS_PATH);
            }
            assert_eq!(g, want, "{name} route {i} ({p}), ebgp {ebgp}");
            let nh = got.next_hop();
            match (ebgp, b.next_hop()) {
                (true, _) => assert!(
                    nh == Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
                        || nh == Some(NextHop::V6("2001:db8::1".parse().unwrap()))
                ),
                (false, Some(NextHop::V6LinkLocal(g, _))) => assert_eq!(nh, Some(NextHop::V6(g))),
                (false, orig) => assert_eq!(nh, orig),
            }
            off += f.len;
            i += 1;
        }
        assert_eq!(i, rs.len());
    }
}

#[test]
fn real_ipv4_rib_roundtrips_through_the_encoder() {
    check("rib.20140523.0600_firstMB.bz2", 40_000);
}

#[test]
fn real_ipv6_rib_roundtrips_through_the_encoder() {
    check("rib6.20151101.0600_firstMB.bz2", 40_000);
}
