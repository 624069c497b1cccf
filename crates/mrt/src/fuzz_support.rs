//! Entry point for fuzzers: decode everything, touch every field.

use crate::reader::MrtReader;
use crate::record::Body;

/// Reads every record of `data` (plain MRT, or gzip/bzip2 if it starts with
/// their magic) and visits every decoded field. Must never panic.
pub fn decode_records(data: &[u8]) -> u64 {
    let mut r = MrtReader::new(data);
    let mut acc: u64 = 0;
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let Ok(rec) = rec else { continue };
        acc = acc.wrapping_add(u64::from(rec.header.timestamp));
        match &rec.body {
            Body::TableDump(d) => {
                acc = acc.wrapping_add(
                    d.attributes.len() as u64 + u64::from(d.prefix.len()) + u64::from(d.peer_as.0),
                );
            }
            Body::PeerIndexTable(t) => {
                for p in t.peers() {
                    acc = acc.wrapping_add(u64::from(p.asn.0) + u64::from(p.peer_type));
                }
            }
            Body::GeoPeerTable(t) => {
                for p in t.peers() {
                    acc = acc.wrapping_add(u64::from(p.latitude_bits));
                }
            }
            Body::Rib(rib) => {
                for e in rib.entries() {
                    acc = acc.wrapping_add(
                        e.attributes.len() as u64 + u64::from(e.path_id.unwrap_or(0)),
                    );
                    acc =
                        acc.wrapping_add(rec.peer(e.peer_index).map_or(0, |p| u64::from(p.asn.0)));
                }
            }
            Body::RibGeneric(rib) => {
                acc = acc.wrapping_add(rib.prefix().map_or(0, |p| u64::from(p.len())));
                for e in rib.entries() {
                    acc = acc.wrapping_add(e.attributes.len() as u64);
                }
            }
            Body::StateChange(s) => acc = acc.wrapping_add(u64::from(s.new_state)),
            Body::Message(m) => {
                acc =
                    acc.wrapping_add(m.message.len() as u64 + u64::from(m.bgp_type().unwrap_or(0)))
            }
        }
        // Re-encoding must not panic either.
        out.clear();
        let _ = rec.encode(&mut out);
    }
    acc.wrapping_add(r.counters().records)
}
