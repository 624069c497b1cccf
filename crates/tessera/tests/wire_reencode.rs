//! Round trip of real BGP messages through bgp-wire: every BGP message in
//! every BGP4MP / BGP4MP_ET record of the shared update files is parsed
//! with the context its MRT subtype implies (RFC 6396 §4.4: 4-octet AS for
//! the *_AS4 subtypes; RFC 8050 §3: ADD-PATH for the *_ADDPATH subtypes),
//! converted to the owned form, re-encoded, and compared byte for byte
//! with the original.

mod support;

use bgp_wire::{AttrValue, Message, OwnedMessage, ParseCtx};
use mrt::{Body, MrtReader};
use std::collections::BTreeMap;

/// Message type names, indexed by the type code (RFC 4271 §4.1, RFC 2918).
const TYPE_NAMES: [&str; 6] = [
    "type0",
    "OPEN",
    "UPDATE",
    "NOTIFICATION",
    "KEEPALIVE",
    "ROUTE-REFRESH",
];

/// Attribute type codes bgp-wire decodes into typed values (RFC 4271 §5,
/// RFC 1997, 4360, 4456, 4760, 5701, 6793, 8092, 9234).
const KNOWN_ATTRS: [u8; 18] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 15, 16, 17, 18, 25, 32, 35,
];

/// What one file produced.
#[derive(Default)]
struct Tally {
    /// Messages per type code as read from the raw header octet.
    raw_types: BTreeMap<u8, u64>,
    /// Messages per type as bgp-wire decoded them and re-encoded them
    /// identically.
    ok_types: BTreeMap<u8, u64>,
    records: u64,
    /// First failures: description and hex.
    failures: Vec<String>,
    failure_count: u64,
    /// Attributes kept raw by the owned form although bgp-wire has a typed
    /// decoder for them, by type code: a typed decode failed on real data.
    raw_known_attrs: BTreeMap<u8, u64>,
    /// Attributes of types bgp-wire does not model (kept raw by design).
    unknown_attrs: BTreeMap<u8, u64>,
}

impl Tally {
    fn fail(&mut self, what: String) {
        self.failure_count += 1;
        if self.failures.len() < 5 {
            self.failures.push(what);
        }
    }
}

fn ctx_for(m: &mrt::Message<'_>) -> ParseCtx {
    // MRT records messages as they were on the wire of a session that may
    // have negotiated extended messages (RFC 8654), so allow 65535 octets.
    let ctx = ParseCtx::legacy()
        .with_four_octet_asn(m.is_as4())
        .with_extended_message(true);
    if m.is_add_path() {
        ctx.with_add_path_all()
    } else {
        ctx
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

fn check_file(name: &str) -> Tally {
    let path = support::mrt_file(name);
    let mut r = MrtReader::open(&path).unwrap_or_else(|e| panic!("open {name}: {e}"));
    let mut t = Tally::default();
    let mut out = Vec::with_capacity(4096);
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap_or_else(|e| panic!("{name}: MRT error {e}"));
        let Body::Message(m) = rec.body else { continue };
        t.records += 1;
        let bytes = m.message;
        let raw_type = bytes.get(18).copied().unwrap_or(0);
        *t.raw_types.entry(raw_type).or_default() += 1;
        let ctx = ctx_for(&m);
        let where_ = || {
            format!(
                "record at offset {} (subtype {}, {} octets)",
                rec.offset,
                m.subtype,
                bytes.len()
            )
        };
        let (msg, len) = match Message::parse(bytes, ctx) {
            Ok(x) => x,
            Err(e) => {
                t.fail(format!(
                    "{}: parse error {e:?}\n  {}",
                    where_(),
                    support::hex(bytes)
                ));
                continue;
            }
        };
        if len != bytes.len() {
            t.fail(format!(
                "{}: message length {len} but record holds {} octets",
                where_(),
                bytes.len()
            ));
            continue;
        }
        let owned = match msg.to_owned() {
            Ok(o) => o,
            Err(e) => {
                t.fail(format!(
                    "{}: to_owned error {e:?}\n  {}",
                    where_(),
                    support::hex(bytes)
                ));
                continue;
            }
        };
        if let OwnedMessage::Update(u) = &owned {
            for a in &u.attributes {
                if let AttrValue::Raw { type_code, .. } = a.value {
                    let map = if KNOWN_ATTRS.contains(&type_code) {
                        &mut t.raw_known_attrs
                    } else {
                        &mut t.unknown_attrs
                    };
                    *map.entry(type_code).or_default() += 1;
                }
            }
        }
        out.clear();
        if let Err(e) = owned.encode(ctx, &mut out) {
            t.fail(format!("{}: encode error {e:?}", where_()));
            continue;
        }
        if out != bytes {
            let at = first_difference(&out, bytes);
            t.fail(format!(
                "{}: re-encode differs at octet {at}\n  original:   {}\n  re-encoded: {}",
                where_(),
                support::hex(bytes),
                support::hex(&out)
            ));
            continue;
        }
        *t.ok_types.entry(msg.msg_type()).or_default() += 1;
    }
    t
}

/// Checks one file. `expected` is the number of messages per type the file
/// holds; the totals equal the BGP4MP message record counts in the data
/// README (counted there from MRT headers, independently of this code).
fn run(name: &str, expected: &[(u8, u64)]) {
    let t = check_file(name);
    let mut summary = Vec::new();
    for (&code, n) in &t.raw_types {
        let label = TYPE_NAMES.get(code as usize).copied().unwrap_or("unknown");
        summary.push(format!("{label}={n}"));
    }
    eprintln!(
        "{name}: {} messages: {}; unmodelled attribute types kept raw: {:?}",
        t.records,
        summary.join(" "),
        t.unknown_attrs
    );
    assert!(
        t.failures.is_empty(),
        "{name}: {} of {} messages failed the round trip; first {}:\n{}",
        t.failure_count,
        t.records,
        t.failures.len(),
        t.failures.join("\n")
    );
    assert!(
        t.raw_known_attrs.is_empty(),
        "{name}: attributes of known types that did not decode (type: count): {:?}",
        t.raw_known_attrs
    );
    let expected: BTreeMap<u8, u64> = expected.iter().copied().collect();
    assert_eq!(
        t.raw_types, expected,
        "{name}: messages per type (type code: count)"
    );
    assert!(
        t.raw_types.get(&2).copied().unwrap_or(0) > 0,
        "{name}: no UPDATE messages at all"
    );
    // Every message counted by its header octet was decoded as that type
    // and re-encoded identically.
    assert_eq!(
        t.ok_types, t.raw_types,
        "{name}: decoded-and-identical counts per type differ from the file's"
    );
}

#[test]
fn reencode_updates_20190101() {
    run("updates.20190101.0000.gz", &[(2, 54_107), (4, 364)]); // 54,471
}

#[test]
fn reencode_updates_20160811() {
    run("updates.20160811.1600.gz", &[(2, 17_216), (4, 168)]); // 17,384
}

#[test]
fn reencode_update_bz2() {
    // 14,879 MESSAGE_AS4 + 165 MESSAGE (2-octet AS) records.
    run("update.bz2", &[(2, 15_044)]);
}

#[test]
fn reencode_jinx_updates() {
    run(
        "routeviews.route-views.jinx.updates.1401493500.bz2",
        &[(2, 644)],
    );
}

#[test]
fn reencode_et_header_updates() {
    // BGP4MP_ET: 89,681 MESSAGE_AS4 + 1 MESSAGE.
    run(
        "updates.et-header.2015.gz",
        &[(1, 1), (2, 89_679), (4, 2)], // 89,682
    );
}
