//! Hand-built records of every kind, error policy, truncation at every byte,
//! and the writer.

use base::{Asn, Prefix, Safi};
use mrt::{
    subtypes as st, types, Body, Compression, ErrorKind, Malformed, MrtReader, MrtWriter, Peer,
    Peering, RibEntry,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn rec(t: u16, s: u16, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&1_400_000_000u32.to_be_bytes());
    v.extend_from_slice(&t.to_be_bytes());
    v.extend_from_slice(&s.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

const ATTRS: &[u8] = &[0x40, 1, 1, 0]; // ORIGIN IGP

fn td_v4() -> Vec<u8> {
    cat(&[
        &[0, 0, 0, 7],
        &[10, 1, 0, 0, 16, 1],
        &1000u32.to_be_bytes(),
        &[192, 0, 2, 1],
        &[0xfd, 0xe9],
        &[0, 4],
        ATTRS,
    ])
}

fn td_v6() -> Vec<u8> {
    let p: [u8; 16] = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0).octets();
    let peer: [u8; 16] = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets();
    cat(&[
        &[0, 0, 0, 8],
        &p,
        &[32, 1],
        &1000u32.to_be_bytes(),
        &peer,
        &[0, 1],
        &[0, 4],
        ATTRS,
    ])
}

fn pit() -> Vec<u8> {
    let v6: [u8; 16] = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).octets();
    cat(&[
        &[198, 51, 100, 1],
        &[0, 3],
        b"rv1",
        &[0, 2],
        // peer 0: IPv4, 2-octet AS 65001
        &[0x00, 1, 1, 1, 1, 192, 0, 2, 1, 0xfd, 0xe9],
        // peer 1: IPv6, 4-octet AS 4200000000
        &[0x03, 2, 2, 2, 2],
        &v6,
        &4_200_000_000u32.to_be_bytes(),
    ])
}

fn rib_entry(peer: u16, path_id: Option<u32>) -> Vec<u8> {
    let mut v = cat(&[&peer.to_be_bytes(), &999u32.to_be_bytes()]);
    if let Some(p) = path_id {
        v.extend_from_slice(&p.to_be_bytes());
    }
    v.extend_from_slice(&[0, 4]);
    v.extend_from_slice(ATTRS);
    v
}

fn rib_v4(add_path: bool) -> Vec<u8> {
    let (a, b) = if add_path {
        (Some(1), Some(2))
    } else {
        (None, None)
    };
    cat(&[
        &[0, 0, 0, 5],
        &[20, 10, 1, 255],
        &[0, 2],
        &rib_entry(0, a),
        &rib_entry(1, b),
    ])
}

fn rib_v6() -> Vec<u8> {
    cat(&[
        &[0, 0, 0, 6],
        &[33, 0x20, 0x01, 0x0d, 0xb8, 0x80],
        &[0, 1],
        &rib_entry(1, None),
    ])
}

fn rib_generic() -> Vec<u8> {
    cat(&[
        &[0, 0, 0, 9],
        &[0, 1, 1],
        &[24, 192, 0, 2],
        &[0, 1],
        &rib_entry(0, None),
    ])
}

fn geo() -> Vec<u8> {
    cat(&[
        &[198, 51, 100, 1],
        &1.5f32.to_bits().to_be_bytes(),
        &(-2.0f32).to_bits().to_be_bytes(),
        &[0, 1],
        &[0x00, 1, 1, 1, 1, 192, 0, 2, 1],
        &3.0f32.to_bits().to_be_bytes(),
        &f32::NAN.to_bits().to_be_bytes(),
    ])
}

fn peering(as4: bool, v6: bool) -> Vec<u8> {
    let mut v = if as4 {
        cat(&[&196_608u32.to_be_bytes(), &65000u32.to_be_bytes()])
    } else {
        vec![0xfd, 0xe9, 0xfd, 0xe8]
    };
    v.extend_from_slice(&[0, 3]);
    if v6 {
        v.extend_from_slice(&[0, 2]);
        v.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v.extend_from_slice(&Ipv6Addr::UNSPECIFIED.octets());
    } else {
        v.extend_from_slice(&[0, 1, 10, 0, 0, 1, 10, 0, 0, 2]);
    }
    v
}

fn keepalive() -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&[0, 19, 4]);
    m
}

/// Every record kind in one stream, plus unknown ones to skip.
fn sample() -> (Vec<u8>, usize) {
    let recs = [
        rec(types::TABLE_DUMP, st::AFI_IPV4, &td_v4()),
        rec(types::TABLE_DUMP, st::AFI_IPV6, &td_v6()),
        rec(types::TABLE_DUMP_V2, st::PEER_INDEX_TABLE, &pit()),
        rec(types::TABLE_DUMP_V2, st::RIB_IPV4_UNICAST, &rib_v4(false)),
        rec(
            types::TABLE_DUMP_V2,
            st::RIB_IPV4_UNICAST_ADDPATH,
            &rib_v4(true),
        ),
        rec(types::TABLE_DUMP_V2, st::RIB_IPV6_MULTICAST, &rib_v6()),
        rec(types::TABLE_DUMP_V2, st::RIB_GENERIC, &rib_generic()),
        rec(types::TABLE_DUMP_V2, st::GEO_PEER_TABLE, &geo()),
        rec(99, 1, &[1, 2, 3]),
        rec(types::TABLE_DUMP_V2, 99, &[]),
        rec(
            types::BGP4MP,
            st::STATE_CHANGE,
            &cat(&[&peering(false, false), &[0, 1, 0, 2]]),
        ),
        rec(
            types::BGP4MP,
            st::STATE_CHANGE_AS4,
            &cat(&[&peering(true, true), &[0, 5, 0, 6]]),
        ),
        rec(
            types::BGP4MP,
            st::MESSAGE,
            &cat(&[&peering(false, false), &keepalive()]),
        ),
        rec(
            types::BGP4MP,
            st::MESSAGE_AS4,
            &cat(&[&peering(true, false), &keepalive()]),
        ),
        rec(
            types::BGP4MP,
            st::MESSAGE_AS4_LOCAL,
            &cat(&[&peering(true, true), &keepalive()]),
        ),
        rec(
            types::BGP4MP,
            st::MESSAGE_AS4_ADDPATH,
            &cat(&[&peering(true, false), &keepalive()]),
        ),
        rec(
            types::BGP4MP_ET,
            st::MESSAGE_AS4,
            &cat(&[
                &123_456u32.to_be_bytes(),
                &peering(true, false),
                &keepalive(),
            ]),
        ),
    ];
    let n = recs.len();
    (recs.concat(), n)
}

#[test]
fn decodes_every_kind() {
    let (data, _) = sample();
    let mut r = MrtReader::new(&data[..]);
    let mut seen = Vec::new();
    let mut out = Vec::new();
    while let Some(x) = r.next_record() {
        let x = x.unwrap();
        out.clear();
        x.encode(&mut out).unwrap();
        let end = x.offset as usize + out.len();
        assert_eq!(
            &data[x.offset as usize..end],
            &out[..],
            "round trip of {:?}",
            x.header
        );
        match &x.body {
            Body::TableDump(d) if d.prefix.afi() == base::Afi::Ipv4 => {
                assert_eq!(d.sequence, 7);
                assert_eq!(d.prefix, "10.1.0.0/16".parse::<Prefix>().unwrap());
                assert_eq!((d.status, d.originated_time), (1, 1000));
                assert_eq!(d.peer_ip, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
                assert_eq!(d.peer_as, Asn(65001));
                assert_eq!(d.attributes, ATTRS);
            }
            Body::TableDump(d) => {
                assert_eq!(d.prefix.to_string(), "2001:db8::/32");
                assert_eq!(d.peer_ip.to_string(), "2001:db8::1");
            }
            Body::PeerIndexTable(t) => {
                assert_eq!(t.view_name, b"rv1");
                let p: Vec<Peer> = t.peers().collect();
                assert_eq!(p.len(), 2);
                assert_eq!(
                    (p[0].asn, p[0].ip.to_string()),
                    (Asn(65001), "192.0.2.1".into())
                );
                assert_eq!(
                    (p[1].asn, p[1].ip.to_string()),
                    (Asn(4_200_000_000), "2001:db8::2".into())
                );
                assert_eq!(p[1].bgp_id, Ipv4Addr::new(2, 2, 2, 2));
                assert_eq!(r_peer_count(&x), 2);
            }
            Body::Rib(rib)
                if rib.subtype == st::RIB_IPV4_UNICAST
                    || rib.subtype == st::RIB_IPV4_UNICAST_ADDPATH =>
            {
                // Host bits beyond /20 are kept as carried.
                assert_eq!(rib.prefix.to_string(), "10.1.255.0/20");
                let e: Vec<RibEntry<'_>> = rib.entries().collect();
                assert_eq!(e.len(), 2);
                assert_eq!(
                    x.peer(e[1].peer_index).map(|p| p.asn),
                    Some(Asn(4_200_000_000))
                );
                assert_eq!(e[0].attributes, ATTRS);
                let ids: Vec<_> = e.iter().map(|e| e.path_id).collect();
                if rib.is_add_path() {
                    assert_eq!(ids, [Some(1), Some(2)]);
                } else {
                    assert_eq!(ids, [None, None]);
                }
            }
            Body::Rib(rib) => {
                assert_eq!(rib.afi_safi(), base::AfiSafi::IPV6_MULTICAST);
                assert_eq!(rib.prefix.to_string(), "2001:db8:8000::/33");
            }
            Body::RibGeneric(g) => {
                assert_eq!(g.prefix(), Some("192.0.2.0/24".parse().unwrap()));
                assert_eq!(g.entries().count(), 1);
            }
            Body::GeoPeerTable(g) => {
                let p: Vec<_> = g.peers().collect();
                assert_eq!(p.len(), 1);
                assert_eq!(p[0].latitude(), 3.0);
                assert!(p[0].longitude().is_nan());
                assert_eq!(f32::from_bits(g.collector_latitude_bits), 1.5);
            }
            Body::StateChange(s) => {
                if s.is_as4() {
                    assert_eq!(
                        (s.peering.peer_as, s.old_state, s.new_state),
                        (Asn(196_608), 5, 6)
                    );
                    assert_eq!(s.peering.peer_ip, IpAddr::V6(Ipv6Addr::LOCALHOST));
                } else {
                    assert_eq!(
                        (s.peering.peer_as, s.peering.local_as),
                        (Asn(65001), Asn(65000))
                    );
                    assert_eq!(s.peering.interface_index, 3);
                    assert_eq!((s.old_state, s.new_state), (1, 2));
                }
            }
            Body::Message(m) => {
                assert_eq!(m.message, &keepalive()[..]);
                assert_eq!(m.bgp_type(), Some(4));
                assert_eq!(m.is_local(), m.subtype == st::MESSAGE_AS4_LOCAL);
                assert_eq!(m.is_add_path(), m.subtype == st::MESSAGE_AS4_ADDPATH);
                assert_eq!(
                    x.header.microseconds.is_some(),
                    x.header.mrt_type == types::BGP4MP_ET
                );
                if let Some(us) = x.header.microseconds {
                    assert_eq!(us, 123_456);
                    assert_eq!(x.header.length as usize, x.raw.len() + 4);
                }
            }
        }
        seen.push((x.header.mrt_type, x.header.subtype));
    }
    assert_eq!(seen.len(), 15);
    let c = r.counters();
    assert_eq!(
        (c.records, c.decoded, c.unknown, c.malformed),
        (17, 15, 2, 0)
    );
}

fn r_peer_count(x: &mrt::Record<'_>) -> usize {
    x.peers.len()
}

#[test]
fn next_raw_returns_every_record() {
    let (data, n) = sample();
    let mut r = MrtReader::new(&data[..]);
    let mut k = 0;
    let mut pos = 0u64;
    while let Some(x) = r.next_raw() {
        let x = x.unwrap();
        assert_eq!(x.offset, pos);
        pos += 12 + u64::from(x.header.length);
        k += 1;
    }
    assert_eq!(k, n);
    assert_eq!(r.offset(), data.len() as u64);
}

#[test]
fn malformed_body_is_reported_and_reading_continues() {
    // Entry count 3 but only 2 entries: the body does not add up.
    let mut bad = rib_v4(false);
    bad[8] = 3;
    let trailing = cat(&[&td_v4(), &[0]]);
    let bad_afi = cat(&[&[0, 1, 0, 2, 0, 0, 0, 9], &[0; 8], &[0, 1, 0, 2]]);
    let data = cat(&[
        &rec(types::TABLE_DUMP_V2, st::RIB_IPV4_UNICAST, &bad),
        &rec(types::TABLE_DUMP, st::AFI_IPV4, &trailing),
        &rec(types::BGP4MP, st::STATE_CHANGE, &bad_afi),
        &rec(types::BGP4MP_ET, st::MESSAGE, &[0, 0]),
        &rec(types::TABLE_DUMP, st::AFI_IPV4, &td_v4()),
    ]);
    let mut r = MrtReader::new(&data[..]);
    let e = r.next_record().unwrap().unwrap_err();
    assert!(!e.is_fatal());
    assert_eq!(e.offset, 0);
    assert!(
        matches!(
            e.kind,
            ErrorKind::Malformed {
                mrt_type: 13,
                subtype: 2,
                why: Malformed::Short { .. }
            }
        ),
        "{e}"
    );
    let e = r.next_record().unwrap().unwrap_err();
    assert_eq!(e.offset, 12 + bad.len() as u64);
    assert!(
        matches!(
            e.kind,
            ErrorKind::Malformed {
                why: Malformed::TrailingBytes { count: 1 },
                ..
            }
        ),
        "{e}"
    );
    let e = r.next_record().unwrap().unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::Malformed {
                why: Malformed::Afi { afi: 9 },
                ..
            }
        ),
        "{e}"
    );
    let e = r.next_record().unwrap().unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::Malformed {
                why: Malformed::Short {
                    field: "microseconds"
                },
                ..
            }
        ),
        "{e}"
    );
    assert!(matches!(r.next_record(), Some(Ok(x)) if matches!(x.body, Body::TableDump(_))));
    assert!(r.next_record().is_none());
    assert_eq!(r.counters().malformed, 4);
}

#[test]
fn bad_prefix_length_is_malformed() {
    let mut b = rib_v4(false);
    b[4] = 33;
    let data = rec(types::TABLE_DUMP_V2, st::RIB_IPV4_UNICAST, &b);
    let e = MrtReader::new(&data[..])
        .next_record()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::Malformed {
                why: Malformed::PrefixLength { len: 33 },
                ..
            }
        ),
        "{e}"
    );
}

/// Record end offsets of a plain stream.
fn ends(data: &[u8]) -> Vec<usize> {
    let mut r = MrtReader::new(data);
    let mut v = Vec::new();
    while let Some(x) = r.next_raw() {
        let x = x.unwrap();
        v.push(x.offset as usize + 12 + x.header.length as usize);
    }
    v
}

#[test]
fn truncation_at_every_byte_delivers_complete_records() {
    let (data, _) = sample();
    let ends = ends(&data);
    for cut in 0..=data.len() {
        let mut r = MrtReader::new(&data[..cut]);
        let mut delivered = 0;
        let mut err = None;
        while let Some(x) = r.next_raw() {
            match x {
                Ok(_) => delivered += 1,
                Err(e) => {
                    assert!(err.is_none(), "one error only");
                    err = Some(e);
                }
            }
        }
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(delivered, complete, "cut at {cut}");
        let start = if complete == 0 { 0 } else { ends[complete - 1] };
        if start == cut {
            assert!(err.is_none(), "cut at a boundary {cut}: {err:?}");
        } else {
            let e = err.unwrap_or_else(|| panic!("cut at {cut}: no error"));
            assert!(e.is_fatal());
            assert_eq!(e.offset, start as u64, "cut at {cut}");
            let hdr = cut - start < 12;
            assert_eq!(
                matches!(e.kind, ErrorKind::TruncatedHeader { .. }),
                hdr,
                "{e}"
            );
            assert_eq!(
                matches!(e.kind, ErrorKind::TruncatedBody { .. }),
                !hdr,
                "{e}"
            );
        }
        // next_record on the same cut: never panics, same errors at the end.
        let mut r = MrtReader::new(&data[..cut]);
        while r.next_record().is_some() {}
    }
}

fn compress(data: &[u8], c: Compression) -> Vec<u8> {
    let mut w = MrtWriter::with_compression(Vec::new(), c);
    let mut r = MrtReader::new(data);
    while let Some(x) = r.next_raw() {
        let x = x.unwrap();
        w.write_raw(&x.header, x.body).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn truncated_compressed_streams() {
    let (data, n) = sample();
    for c in [Compression::Gzip, Compression::Bzip2] {
        let z = compress(&data, c);
        assert_eq!(
            &z[..2],
            if c == Compression::Gzip {
                &[0x1f, 0x8b][..]
            } else {
                &b"BZ"[..]
            }
        );
        // Whole stream, both inline and on a thread.
        for threaded in [false, true] {
            let mut r = if threaded {
                MrtReader::new_threaded(std::io::Cursor::new(z.clone()))
            } else {
                MrtReader::new(std::io::Cursor::new(z.clone()))
            };
            assert_eq!(r.compression(), c);
            let mut k = 0;
            while let Some(x) = r.next_raw() {
                x.unwrap();
                k += 1;
            }
            assert_eq!(k, n);
        }
        // Cut anywhere after the magic: complete records only, then an error.
        let step = (z.len() / 97).max(1);
        for cut in (3..z.len()).step_by(step) {
            for threaded in [false, true] {
                let part = z[..cut].to_vec();
                let mut r = if threaded {
                    MrtReader::new_threaded(std::io::Cursor::new(part))
                } else {
                    MrtReader::new(std::io::Cursor::new(part))
                };
                let mut k = 0;
                let mut err = None;
                while let Some(x) = r.next_raw() {
                    match x {
                        Ok(_) => k += 1,
                        Err(e) => err = Some(e),
                    }
                }
                // A cut inside the gzip trailer loses no record data.
                assert!(k <= n, "{c:?} cut {cut}");
                let e = err.unwrap_or_else(|| panic!("{c:?} cut {cut}: no error"));
                assert!(e.is_fatal());
                assert_eq!(e.kind, ErrorKind::TruncatedStream, "{c:?} cut {cut}");
                // The damaged record starts where the last complete one ends.
                let want = if k == 0 { 0 } else { ends(&data)[k - 1] as u64 };
                assert_eq!(e.offset, want, "{c:?} cut {cut}");
            }
        }
    }
}

#[test]
fn writer_builds_readable_records() {
    let peers = [
        Peer::new(
            Ipv4Addr::new(1, 1, 1, 1),
            "192.0.2.1".parse().unwrap(),
            Asn(65001),
        ),
        Peer::new(
            Ipv4Addr::new(2, 2, 2, 2),
            "2001:db8::2".parse().unwrap(),
            Asn(4_200_000_000),
        ),
    ];
    let entries = [
        RibEntry {
            peer_index: 0,
            originated_time: 5,
            path_id: None,
            attributes: ATTRS,
        },
        RibEntry {
            peer_index: 1,
            originated_time: 6,
            path_id: Some(7),
            attributes: ATTRS,
        },
    ];
    let peering = Peering {
        peer_as: Asn(196_608),
        local_as: Asn(65000),
        interface_index: 0,
        peer_ip: "10.0.0.1".parse().unwrap(),
        local_ip: "10.0.0.2".parse().unwrap(),
    };
    for c in [Compression::None, Compression::Gzip, Compression::Bzip2] {
        let mut w = MrtWriter::with_compression(Vec::new(), c);
        w.write_peer_index_table(10, Ipv4Addr::new(9, 9, 9, 9), "view", &peers)
            .unwrap();
        w.write_rib(
            11,
            0,
            "10.0.0.0/8".parse().unwrap(),
            Safi::Unicast,
            false,
            &entries,
        )
        .unwrap();
        w.write_rib(
            11,
            1,
            "2001:db8::/32".parse().unwrap(),
            Safi::Multicast,
            true,
            &entries,
        )
        .unwrap();
        w.write_bgp4mp_message(12, None, &peering, &keepalive())
            .unwrap();
        w.write_bgp4mp_message(12, Some(99), &peering, &keepalive())
            .unwrap();
        w.write_bgp4mp_state_change(13, Some(1), &peering, 1, 6)
            .unwrap();
        assert!(w
            .write_rib(
                11,
                1,
                "10.0.0.0/8".parse().unwrap(),
                Safi::Other(128),
                false,
                &entries
            )
            .is_err());
        assert_eq!(w.records(), 6);
        let out = w.finish().unwrap();
        let mut r = MrtReader::new(&out[..]);
        let mut kinds = Vec::new();
        while let Some(x) = r.next_record() {
            let x = x.unwrap();
            kinds.push((
                x.header.timestamp,
                x.header.mrt_type,
                x.header.subtype,
                x.header.microseconds,
            ));
            match &x.body {
                Body::PeerIndexTable(t) => {
                    assert_eq!(t.peers().collect::<Vec<_>>(), peers);
                    assert_eq!(t.view_name, b"view");
                }
                Body::Rib(rib) => {
                    let got: Vec<_> = rib.entries().collect();
                    if rib.is_add_path() {
                        assert_eq!(got[0].path_id, Some(0));
                        assert_eq!(got[1], entries[1]);
                    } else {
                        assert_eq!(got[0], entries[0]);
                        assert_eq!(got[1].path_id, None);
                    }
                    assert_eq!(x.peer(1), Some(&peers[1]));
                }
                Body::Message(m) => assert_eq!(m.peering, peering),
                Body::StateChange(s) => {
                    assert_eq!((s.peering, s.old_state, s.new_state), (peering, 1, 6))
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(
            kinds,
            [
                (10, 13, st::PEER_INDEX_TABLE, None),
                (11, 13, st::RIB_IPV4_UNICAST, None),
                (11, 13, st::RIB_IPV6_MULTICAST_ADDPATH, None),
                (12, 16, st::MESSAGE_AS4, None),
                (12, 17, st::MESSAGE_AS4, Some(99)),
                (13, 17, st::STATE_CHANGE_AS4, Some(1)),
            ]
        );
    }
}

#[test]
fn empty_and_tiny_inputs() {
    assert!(MrtReader::new(&[][..]).next_record().is_none());
    for tiny in [&[0x1f][..], &[0x1f, 0x8b][..], b"BZ", b"BZh"] {
        let mut r = MrtReader::new(tiny);
        let mut n = 0;
        while let Some(x) = r.next_record() {
            assert!(x.is_err());
            n += 1;
        }
        assert!(n <= 1);
    }
}
