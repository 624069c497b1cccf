//! A tiny MRT (RFC 6396) walker for tests and benches: just enough to pull
//! BGP messages out of BGP4MP records and attribute blocks out of
//! TABLE_DUMP_V2 RIB entries. The real reader lives in the `mrt` crate.
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;

use base::AfiSafi;
use bgp_wire::ParseCtx;

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt")
}

/// Decompresses a data file; truncated streams yield what was readable.
pub fn load(name: &str) -> Option<Vec<u8>> {
    let f = std::fs::File::open(data_dir().join(name)).ok()?;
    let mut r: Box<dyn Read> = if name.ends_with(".gz") {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    } else if name.ends_with(".bz2") {
        Box::new(bzip2::read::MultiBzDecoder::new(f))
    } else {
        Box::new(f)
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    Some(out)
}

/// Like [`load`] but panics with a clear message when the file is missing.
pub fn load_required(name: &str) -> Vec<u8> {
    load(name).unwrap_or_else(|| {
        panic!(
            "MRT sample {} is missing; expected under {}",
            name,
            data_dir().display()
        )
    })
}

pub struct Record<'a> {
    pub typ: u16,
    pub subtype: u16,
    pub body: &'a [u8],
}

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(o..o + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

/// Complete records in `buf` (a trailing partial record is ignored).
pub fn records(mut buf: &[u8]) -> impl Iterator<Item = Record<'_>> {
    std::iter::from_fn(move || {
        let typ = u16_at(buf, 4)?;
        let subtype = u16_at(buf, 6)?;
        let len = u32_at(buf, 8)? as usize;
        let body = buf.get(12..12 + len)?;
        buf = &buf[12 + len..];
        Some(Record { typ, subtype, body })
    })
}

/// The BGP message in a BGP4MP / BGP4MP_ET MESSAGE record, with the parse
/// context its subtype implies (RFC 6396 §4.4, RFC 8050 §3).
pub fn bgp4mp_message<'a>(r: &Record<'a>) -> Option<(&'a [u8], ParseCtx)> {
    let body = match r.typ {
        16 => r.body,
        17 => r.body.get(4..)?, // BGP4MP_ET: microsecond timestamp first
        _ => return None,
    };
    let (as4, add_path) = match r.subtype {
        1 | 6 => (false, false),
        4 | 7 => (true, false),
        8 | 10 => (false, true),
        9 | 11 => (true, true),
        _ => return None,
    };
    let as_len = if as4 { 4 } else { 2 };
    let afi = u16_at(body, 2 * as_len + 2)?;
    let ip_len = if afi == 2 { 16 } else { 4 };
    let msg = body.get(2 * as_len + 4 + 2 * ip_len..)?;
    let mut ctx = ParseCtx::modern().with_four_octet_asn(as4);
    if add_path {
        ctx = ctx.with_add_path_all();
    }
    Some((msg, ctx))
}

/// Attribute blocks of a TABLE_DUMP_V2 RIB record (RFC 6396 §4.3.2), with
/// the record's AFI/SAFI.
pub fn rib_attr_blocks<'a>(r: &Record<'a>) -> Option<(AfiSafi, Vec<&'a [u8]>)> {
    if r.typ != 13 {
        return None;
    }
    let (af, add_path) = match r.subtype {
        2 => (AfiSafi::IPV4_UNICAST, false),
        3 => (AfiSafi::IPV4_MULTICAST, false),
        4 => (AfiSafi::IPV6_UNICAST, false),
        5 => (AfiSafi::IPV6_MULTICAST, false),
        8 => (AfiSafi::IPV4_UNICAST, true),
        9 => (AfiSafi::IPV4_MULTICAST, true),
        10 => (AfiSafi::IPV6_UNICAST, true),
        11 => (AfiSafi::IPV6_MULTICAST, true),
        _ => return None,
    };
    let b = r.body;
    let plen = *b.get(4)? as usize;
    let mut o = 5 + plen.div_ceil(8);
    let n = u16_at(b, o)?;
    o += 2;
    let mut out = Vec::new();
    for _ in 0..n {
        o += 2 + 4 + if add_path { 4 } else { 0 };
        let alen = u16_at(b, o)? as usize;
        out.push(b.get(o + 2..o + 2 + alen)?);
        o += 2 + alen;
    }
    Some((af, out))
}
