//! Writes a synthetic table ([`sim::SynthRib`]) as an MRT TABLE_DUMP_V2
//! RIB dump (RFC 6396 §4.3): one PEER_INDEX_TABLE, then one RIB record per
//! prefix. Used by `tessera demo`.

use crate::{MrtWriter, Peer, RibEntry};
use base::{AfiSafi, Asn, Prefix, Safi};
use bgp_wire::{
    AsPath, AttrValue, Community, LargeCommunity, MpNlri, MpReach, NextHop, ParseCtx, PathAttr,
};
use sim::{EntryBuf, RouteView, SynthRib};
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr};

/// What was written.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpSummary {
    /// Records written, the PEER_INDEX_TABLE included.
    pub records: u64,
    /// RIB entries written (routes).
    pub entries: u64,
}

/// Appends the path attributes of one route as a TABLE_DUMP_V2 RIB entry
/// carries them: 4-octet AS_PATH, NEXT_HOP for IPv4, and for IPv6 the
/// abbreviated MP_REACH_NLRI of RFC 6396 §4.3.4.
pub fn encode_rib_attributes(r: &RouteView<'_>, af: AfiSafi, out: &mut Vec<u8>) {
    let ctx = ParseCtx::mrt_rib(af);
    PathAttr::new(AttrValue::Origin(r.origin)).encode(ctx, out);
    let path = AsPath::from_sequence(r.as_path.iter().map(|&a| Asn(a)).collect());
    PathAttr::new(AttrValue::AsPath(path)).encode(ctx, out);
    match r.next_hop {
        IpAddr::V4(a) => PathAttr::new(AttrValue::NextHop(a)).encode(ctx, out),
        IpAddr::V6(a) => {
            let mp = MpReach {
                afi_safi: af,
                next_hop: NextHop::V6(a).to_bytes(),
                reserved: 0,
                nlri: MpNlri::Prefixes(Vec::new()),
                abbreviated: true,
            };
            PathAttr::new(AttrValue::MpReach(mp)).encode(ctx, out);
        }
    }
    if let Some(med) = r.med {
        PathAttr::new(AttrValue::Med(med)).encode(ctx, out);
    }
    if !r.communities.is_empty() {
        let c = r.communities.iter().map(|&c| Community(c)).collect();
        PathAttr::new(AttrValue::Communities(c)).encode(ctx, out);
    }
    if !r.large_communities.is_empty() {
        let c = r
            .large_communities
            .iter()
            .map(|l| LargeCommunity {
                global_admin: l[0],
                local_data1: l[1],
                local_data2: l[2],
            })
            .collect();
        PathAttr::new(AttrValue::LargeCommunities(c)).encode(ctx, out);
    }
}

/// Writes the whole table, calling `progress(done, total)` every 4096
/// prefixes.
pub fn write_rib_dump<W: Write>(
    rib: &SynthRib,
    timestamp: u32,
    w: &mut MrtWriter<W>,
    mut progress: impl FnMut(usize, usize),
) -> io::Result<DumpSummary> {
    let peers: Vec<Peer> = rib
        .peers
        .iter()
        .map(|p| Peer::new(p.bgp_id, p.addr, p.asn))
        .collect();
    w.write_peer_index_table(
        timestamp,
        Ipv4Addr::new(198, 18, 255, 254),
        "tessera-synth",
        &peers,
    )?;
    let mut sum = DumpSummary {
        records: 1,
        entries: 0,
    };
    let mut buf = EntryBuf::default();
    let mut attrs: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut spans: Vec<(u16, usize, usize)> = Vec::new();
    let total = rib.prefixes.len();
    for (i, &prefix) in rib.prefixes.iter().enumerate() {
        rib.entries(i, &mut buf);
        if buf.is_empty() {
            continue;
        }
        let af = match prefix {
            Prefix::V4(_) => AfiSafi::IPV4_UNICAST,
            Prefix::V6(_) => AfiSafi::IPV6_UNICAST,
        };
        attrs.clear();
        spans.clear();
        for r in buf.routes() {
            let start = attrs.len();
            encode_rib_attributes(&r, af, &mut attrs);
            spans.push((r.peer, start, attrs.len()));
        }
        // Entries borrow the attribute arena, so they are built after it is
        // complete.
        let entries: Vec<RibEntry<'_>> = spans
            .iter()
            .map(|&(peer, s, e)| RibEntry {
                peer_index: peer,
                originated_time: timestamp.saturating_sub(3600 + u32::from(peer) * 60),
                path_id: None,
                attributes: attrs.get(s..e).unwrap_or(&[]),
            })
            .collect();
        w.write_rib(timestamp, i as u32, prefix, Safi::Unicast, false, &entries)?;
        sum.records += 1;
        sum.entries += entries.len() as u64;
        if i % 4096 == 0 {
            progress(i, total);
        }
    }
    progress(total, total);
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Body, MrtReader};
    use bgp_wire::{AttrIter, PathAttribute};
    use sim::SynthConfig;

    #[test]
    fn dump_decodes_back_to_the_generated_routes() {
        let rib = SynthRib::generate(&SynthConfig {
            peers: 5,
            prefixes_v4: 300,
            prefixes_v6: 100,
            ..SynthConfig::default()
        });
        let mut w = MrtWriter::new(Vec::new());
        let sum = write_rib_dump(&rib, 1_700_000_000, &mut w, |_, _| {}).unwrap();
        let bytes = w.finish().unwrap();
        let mut r = MrtReader::new(&bytes[..]);
        let mut buf = EntryBuf::default();
        let mut seen = 0usize;
        let mut records = 0u64;
        let mut entries = 0u64;
        while let Some(rec) = r.next_record() {
            let rec = rec.unwrap();
            records += 1;
            let Body::Rib(rib_rec) = rec.body else {
                continue;
            };
            let idx = rib_rec.sequence as usize;
            assert_eq!(rib_rec.prefix, rib.prefixes[idx]);
            rib.entries(idx, &mut buf);
            let af = rib_rec.afi_safi();
            for (e, want) in rib_rec.entries().zip(buf.routes()) {
                entries += 1;
                assert_eq!(e.peer_index, want.peer);
                let mut got_path = Vec::new();
                for a in AttrIter::new(e.attributes) {
                    let a = a.unwrap().typed(ParseCtx::mrt_rib(af)).unwrap();
                    if let PathAttribute::AsPath(p) = a {
                        got_path = p.segments().flat_map(|s| s.asns()).map(|a| a.0).collect();
                    }
                }
                assert_eq!(got_path, want.as_path);
            }
            seen += 1;
        }
        assert_eq!(records, sum.records);
        assert_eq!(entries, sum.entries);
        assert_eq!(seen, rib.prefixes.len(), "every prefix has a route");
    }
}
