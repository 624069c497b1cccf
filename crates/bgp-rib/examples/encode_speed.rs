//! Encoding throughput: N IPv4 /24 prefixes spread over S attribute sets,
//! encoded for an eBGP peer (4096-octet messages) and for a 2-octet iBGP
//! peer. Usage: `cargo run --release -p bgp-rib --example encode_speed --
//! [PREFIXES] [SETS]`.

use std::net::Ipv4Addr;
use std::time::Instant;

use base::{AfiSafi, Asn, Prefix, Prefix4};
use bgp_rib::{
    AttrsBuilder, BestPathConfig, EncodeParams, ExportBatch, NextHopMode, RibShard, UpdateEncoder,
};
use bgp_wire::{AsPath, AttrValue, Community, NextHop, Origin, PathAttr};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(1_000_000);
    let sets = args.get(1).copied().unwrap_or(10_000).max(1);
    let mut s = RibShard::new(BestPathConfig::default());
    let mut batch = ExportBatch::default();
    for k in 0..sets {
        let mut b = AttrsBuilder::from_attrs([
            PathAttr::new(AttrValue::Origin(Origin::Igp)),
            PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![
                Asn(64500),
                Asn(400_000 + k as u32),
                Asn(65001),
            ]))),
            PathAttr::new(AttrValue::Communities(vec![
                Community(k as u32),
                Community(7),
            ])),
        ]);
        b.set_next_hop(NextHop::V4(Ipv4Addr::new(192, 0, 2, 9)));
        batch.announce.push((s.intern(&b), Vec::new()));
    }
    for i in 0..n {
        let p =
            Prefix::V4(Prefix4::new((i as u32) << 8, 24).unwrap_or(Prefix4::new(0, 0).unwrap()));
        if let Some((_, v)) = batch.announce.get_mut(i % sets) {
            v.push(p);
        }
    }
    for (ebgp, four) in [(true, true), (false, false)] {
        let mut enc = UpdateEncoder::new(EncodeParams {
            local_asn: Asn(65000),
            peer_asn: Asn(65100),
            ebgp,
            four_octet_asn: four,
            extended_message: false,
            families: vec![AfiSafi::IPV4_UNICAST],
            add_path_tx: vec![],
            next_hop: NextHopMode::Auto,
            ext_next_hop: vec![],
            local_v4: Some(Ipv4Addr::new(192, 0, 2, 1)),
            local_v6: None,
            local_v6_link_local: None,
            route_server: false,
        });
        let mut out = Vec::with_capacity(n * 5);
        let t = Instant::now();
        let msgs = enc.encode(&s, &batch, &mut out);
        let dt = t.elapsed().as_secs_f64();
        println!(
            "ebgp={ebgp} four_octet={four}: {n} prefixes, {sets} sets -> {msgs} UPDATEs, {} bytes in {:.1} ms = {:.1} M prefixes/s",
            out.len(),
            dt * 1e3,
            n as f64 / dt / 1e6
        );
    }
}
