use super::*;

fn info(mrt_type: u16, subtype: u16) -> RecordInfo {
    RecordInfo {
        timestamp: 1,
        microseconds: 5,
        mrt_type,
        subtype,
    }
}

fn peer_index_table() -> Vec<u8> {
    let mut b = vec![10, 0, 0, 1, 0, 0, 0, 2];
    // IPv4 peer, 2-octet AS 65001.
    b.extend_from_slice(&[0, 1, 1, 1, 1, 192, 0, 2, 1, 0xfd, 0xe9]);
    // IPv6 peer 2001:db8::1, 4-octet AS 4200000000.
    b.extend_from_slice(&[
        3, 2, 2, 2, 2, 0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    ]);
    b.extend_from_slice(&4_200_000_000u32.to_be_bytes());
    b
}

#[test]
fn rib_lines() {
    let mut d = Dumper::new();
    let mut out = Vec::new();
    d.record(&info(13, 1), &peer_index_table(), &mut out);
    assert!(out.is_empty());
    // 10.1.0.0/16, two entries: peer 0 with ORIGIN IGP, AS_PATH 65001 7,
    // NEXT_HOP 192.0.2.1, COMMUNITIES no-export; peer 9 (not in the table).
    let attrs: &[u8] = &[
        0x40, 1, 1, 0, 0x40, 2, 10, 2, 2, 0, 0, 0xfd, 0xe9, 0, 0, 0, 7, 0x40, 3, 4, 192, 0, 2, 1,
        0xc0, 8, 4, 0xff, 0xff, 0xff, 0x01,
    ];
    let mut body = vec![0, 0, 0, 0, 16, 10, 1, 0, 2];
    for idx in [0u8, 9] {
        body.extend_from_slice(&[0, idx, 0, 0, 0, 0, 0, attrs.len() as u8]);
        body.extend_from_slice(attrs);
    }
    d.record(&info(13, 2), &body, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "TABLE_DUMP2|1|B|192.0.2.1|65001|10.1.0.0/16|65001 7|IGP|192.0.2.1|0|0|no-export|NAG||\n"
    );
    assert_eq!(d.skipped_entries(), 1);
}

#[test]
fn et_state_change_and_truncated_bodies_do_not_panic() {
    let mut d = Dumper::new();
    let mut out = Vec::new();
    let body = [0, 1, 0, 2, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 0, 4];
    d.record(&info(17, 0), &body, &mut out);
    assert_eq!(out, b"BGP4MP_ET|1.000005|STATE|1.2.3.4|1|3|4\n");
    // Every prefix of every body shape must be handled without panicking.
    let pit = peer_index_table();
    for t in [
        (12, 1),
        (12, 2),
        (13, 1),
        (13, 2),
        (13, 10),
        (16, 1),
        (16, 4),
        (17, 5),
    ] {
        for n in 0..pit.len() {
            d.record(&info(t.0, t.1), &pit[..n], &mut out);
        }
    }
}

/// Frames `bytes` with `MrtReader::next_raw` and formats every record, the
/// way `tessera mrt dump -m` does; returns the text and the first error.
fn dump_stream(bytes: &[u8]) -> (String, Option<crate::MrtError>) {
    let mut r = crate::MrtReader::new(bytes);
    let mut d = Dumper::new();
    let mut out = Vec::new();
    let mut err = None;
    while let Some(rec) = r.next_raw() {
        match rec {
            Ok(rec) => d.record(&RecordInfo::from_header(&rec.header), rec.body, &mut out),
            Err(e) => err = err.or(Some(e)),
        }
    }
    (String::from_utf8(out).unwrap(), err)
}

#[test]
fn mrt_reader_frames_et_microseconds_and_truncation() {
    use crate::{MrtWriter, Peering};
    use base::Asn;
    let peering = Peering {
        peer_as: Asn(65001),
        local_as: Asn(65002),
        interface_index: 0,
        peer_ip: "192.0.2.1".parse().unwrap(),
        local_ip: "192.0.2.2".parse().unwrap(),
    };
    let mut w = MrtWriter::new(Vec::new());
    // BGP4MP_ET: RFC 6396 §3 puts the microseconds in front of the body;
    // next_raw must hand them over in the header, not in the body.
    w.write_bgp4mp_state_change(7, Some(42), &peering, 1, 2)
        .unwrap();
    w.write_bgp4mp_state_change(8, None, &peering, 2, 3)
        .unwrap();
    let bytes = w.finish().unwrap();
    let (text, err) = dump_stream(&bytes);
    assert_eq!(err, None);
    assert_eq!(
        text,
        "BGP4MP_ET|7.000042|STATE|192.0.2.1|65001|1|2\nBGP4MP|8|STATE|192.0.2.1|65001|2|3\n"
    );
    // Cut inside the second record: the first still prints, and the error
    // names the offset where the damaged record starts (16 + 20 + 4 bytes
    // for the ET record with its microseconds).
    let (text, err) = dump_stream(&bytes[..bytes.len() - 3]);
    assert_eq!(text, "BGP4MP_ET|7.000042|STATE|192.0.2.1|65001|1|2\n");
    let err = err.expect("truncation must be reported");
    assert!(err.is_fatal());
    assert_eq!(err.offset, 40);
}

#[test]
fn json_objects() {
    let mut d = Dumper::json();
    let mut out = Vec::new();
    d.record(&info(13, 1), &peer_index_table(), &mut out);
    assert!(out.is_empty());
    // 10.1.0.0/16 from peer 1 (IPv6, AS 4200000000), ADD-PATH path id 7:
    // ORIGIN EGP, AS_PATH {1,2}, COMMUNITIES 1:2, LARGE_COMMUNITY 1:2:3,
    // EXTENDED_COMMUNITIES 0002fde800000064, MED 5, ATOMIC_AGGREGATE,
    // AGGREGATOR 9 192.0.2.9; no NEXT_HOP.
    let attrs: &[u8] = &[
        0x40, 1, 1, 1, 0x40, 2, 10, 1, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0xc0, 8, 4, 0, 1, 0, 2, 0xc0, 32,
        12, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xc0, 16, 8, 0, 2, 0xfd, 0xe8, 0, 0, 0, 0x64, 0x80,
        4, 4, 0, 0, 0, 5, 0x40, 6, 0, 0xc0, 7, 8, 0, 0, 0, 9, 192, 0, 2, 9,
    ];
    let mut body = vec![0, 0, 0, 0, 16, 10, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(attrs);
    d.record(&info(13, 8), &body, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            r#"{"type":"TABLE_DUMP2_AP","timestamp":1,"microseconds":0,"entry":"B","#,
            r#""peer_ip":"2001:db8::1","peer_as":4200000000,"prefix":"10.1.0.0/16","#,
            r#""path_id":7,"as_path":"{1,2}","origin":"EGP","next_hop":"255.255.255.255","#,
            r#""local_pref":null,"med":5,"communities":["1:2"],"#,
            r#""large_communities":["1:2:3"],"extended_communities":["0002fde800000064"],"#,
            r#""atomic_aggregate":true,"aggregator":{"as":9,"ip":"192.0.2.9"}}"#,
            "\n"
        )
    );
    // BGP4MP_ET state change: microseconds kept as a number.
    let mut out = Vec::new();
    let body = [0, 1, 0, 2, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 0, 4];
    d.record(&info(17, 0), &body, &mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        concat!(
            r#"{"type":"BGP4MP_ET","timestamp":1,"microseconds":5,"entry":"STATE","#,
            r#""peer_ip":"1.2.3.4","peer_as":1,"old_state":3,"new_state":4}"#,
            "\n"
        )
    );
}

#[test]
fn json_strings_are_escaped() {
    let mut out = Vec::new();
    json::push_str(&mut out, b"a\"b\\c\n\x01");
    assert_eq!(out, br#""a\"b\\c\u000a\u0001""#);
}
