//! Third-party check of the BGP wire format: messages go into a pcap (one
//! TCP connection to port 179) and tshark's BGP dissector must read them
//! without a malformed packet or expert error, with the field values we put
//! in. Skips (with a message) when tshark is missing, unless
//! `TESSERA_REQUIRE_TOOLS=1`.

mod support;

use support::bgp_cases;

use mrt::{Body, MrtReader};
use support::pcap::BgpPcap;
use support::tshark;

/// Update files sampled, and how many BGP messages to take from each.
const SAMPLE_FILES: &[&str] = &[
    "updates.20190101.0000.gz",
    "updates.20160811.1600.gz",
    "update.bz2",
    "routeviews.route-views.jinx.updates.1401493500.bz2",
    "updates.et-header.2015.gz",
];
const SAMPLE_PER_FILE: usize = 300;

/// The first `n` BGP messages with 4-octet AS numbers in an update file.
/// tshark guesses the AS_PATH width per message; 2-octet messages would
/// make that guess, not our bytes, the thing under test.
fn sample_messages(name: &str, n: usize) -> Vec<Vec<u8>> {
    let path = support::mrt_file(name);
    let mut r = MrtReader::open(&path).expect("open MRT file");
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Body::Message(m) = rec.body {
            if m.is_as4() && !m.is_add_path() {
                out.push(m.message.to_vec());
                if out.len() == n {
                    break;
                }
            }
        }
    }
    assert_eq!(out.len(), n, "{name}: fewer than {n} AS4 messages");
    out
}

/// (type, length) of each message, in order, straight from the header bytes.
fn type_and_len(msgs: &[Vec<u8>]) -> Vec<(String, String)> {
    msgs.iter()
        .map(|m| {
            (
                m[18].to_string(),
                u16::from_be_bytes([m[16], m[17]]).to_string(),
            )
        })
        .collect()
}

/// Checks that tshark sees exactly `expected` (type, length) pairs in order,
/// and no malformed or error frames.
fn assert_dissects(pcap: &std::path::Path, expected: &[(String, String)]) {
    let problems = tshark::problems(pcap);
    assert!(
        problems.is_empty(),
        "tshark reports {} malformed/error frames, first: {:#?}",
        problems.len(),
        &problems[..problems.len().min(5)]
    );
    let rows = tshark::fields(pcap, "bgp", &["bgp.type", "bgp.length"]);
    let mut seen = Vec::new();
    for row in &rows {
        assert_eq!(
            row[0].len(),
            row[1].len(),
            "type/length occurrence mismatch"
        );
        seen.extend(row[0].iter().cloned().zip(row[1].iter().cloned()));
    }
    assert_eq!(
        seen.len(),
        expected.len(),
        "BGP message count seen by tshark"
    );
    if let Some(i) = (0..seen.len()).find(|&i| seen[i] != expected[i]) {
        panic!(
            "message {i}: tshark saw (type, length) {:?}, we wrote {:?}",
            seen[i], expected[i]
        );
    }
}

#[test]
fn real_updates_dissect_cleanly() {
    if !tshark::available() {
        return;
    }
    let mut p = BgpPcap::new();
    let mut expected = Vec::new();
    for name in SAMPLE_FILES {
        let msgs = sample_messages(name, SAMPLE_PER_FILE);
        // Pack several messages per segment, as a real speaker does.
        p.send_messages(&msgs, 1460);
        expected.extend(type_and_len(&msgs));
    }
    let frames = p.frames();
    let file = tshark::temp_pcap("real-updates");
    std::fs::write(&file, p.finish()).expect("write pcap");
    assert_eq!(tshark::frame_count(&file), frames + 3, "frames read back");
    assert_dissects(&file, &expected);

    // Field values: what bgp-wire decodes from the same bytes, flattened in
    // wire order across all messages, against tshark's view.
    let msgs: Vec<Vec<u8>> = SAMPLE_FILES
        .iter()
        .flat_map(|n| sample_messages(n, SAMPLE_PER_FILE))
        .collect();
    let want = decoded_fields(&msgs);
    let names: Vec<&str> = want.iter().map(|(f, _)| *f).collect();
    let rows = tshark::fields(&file, "bgp", &names);
    let _ = std::fs::remove_file(&file);
    for (i, (f, values)) in want.iter().enumerate() {
        let seen: Vec<&String> = rows.iter().flat_map(|r| r[i].iter()).collect();
        assert!(!values.is_empty(), "{f}: sample holds no such values");
        assert_eq!(seen.len(), values.len(), "{f}: number of values");
        if let Some(k) = (0..values.len()).find(|&k| *seen[k] != values[k]) {
            panic!(
                "{f}: value {k}: tshark {:?}, bgp-wire {:?}",
                seen[k], values[k]
            );
        }
    }
}

/// Field name and the values bgp-wire decodes for it, in wire order.
fn decoded_fields(msgs: &[Vec<u8>]) -> Vec<(&'static str, Vec<String>)> {
    use bgp_wire::{Message, ParseCtx, PathAttribute};
    let mut origin = Vec::new();
    let mut next_hop = Vec::new();
    let mut med = Vec::new();
    let mut local_pref = Vec::new();
    let mut as4 = Vec::new();
    let mut seg_types = Vec::new();
    let mut large_ga = Vec::new();
    let mut nlri = Vec::new();
    let mut withdrawn = Vec::new();
    let mut mp6 = Vec::new();
    let mut mp6_un = Vec::new();
    let ctx = ParseCtx::modern();
    for m in msgs {
        let Ok((Message::Update(u), _)) = Message::parse(m, ctx) else {
            continue;
        };
        for w in u.withdrawn() {
            withdrawn.push(prefix_addr(w.expect("withdrawn").prefix));
        }
        for a in u.attributes() {
            let a = a.expect("attribute frame");
            let Ok(t) = a.typed(ctx) else { continue };
            match t {
                PathAttribute::Origin(o) => origin.push((o as u8).to_string()),
                PathAttribute::NextHop(a) => next_hop.push(a.to_string()),
                PathAttribute::Med(v) => med.push(v.to_string()),
                PathAttribute::LocalPref(v) => local_pref.push(v.to_string()),
                PathAttribute::AsPath(p) | PathAttribute::As4Path(p) => {
                    for seg in p.segments() {
                        seg_types.push((seg.kind as u8).to_string());
                        as4.extend(seg.asns().map(|a| a.0.to_string()));
                    }
                }
                PathAttribute::LargeCommunities(c) => {
                    large_ga.extend(c.iter().map(|l| l.global_admin.to_string()))
                }
                PathAttribute::MpReach(r) if r.afi_safi == base::AfiSafi::IPV6_UNICAST => {
                    mp6.extend(r.nlri().map(|n| prefix_addr(n.expect("mp nlri").prefix)))
                }
                PathAttribute::MpUnreach(r) if r.afi_safi == base::AfiSafi::IPV6_UNICAST => mp6_un
                    .extend(
                        r.withdrawn()
                            .map(|n| prefix_addr(n.expect("mp nlri").prefix)),
                    ),
                _ => {}
            }
        }
        for n in u.nlri() {
            nlri.push(prefix_addr(n.expect("nlri").prefix));
        }
    }
    vec![
        ("bgp.update.path_attribute.origin", origin),
        ("bgp.update.path_attribute.next_hop", next_hop),
        ("bgp.update.path_attribute.multi_exit_disc", med),
        ("bgp.update.path_attribute.local_pref", local_pref),
        ("bgp.update.path_attribute.as_path_segment.type", seg_types),
        ("bgp.update.path_attribute.as_path_segment.as4", as4),
        ("bgp.large_communities.ga", large_ga),
        ("bgp.nlri_prefix", nlri),
        ("bgp.withdrawn_prefix", withdrawn),
        ("bgp.mp_reach_nlri_ipv6_prefix", mp6),
        ("bgp.mp_unreach_nlri_ipv6_prefix", mp6_un),
    ]
}

/// The address part of a prefix as tshark prints it (host bits zeroed,
/// since NLRI carry only the prefix octets).
fn prefix_addr(p: base::Prefix) -> String {
    match p {
        base::Prefix::V4(p) => p.masked().addr().to_string(),
        base::Prefix::V6(p) => p.masked().addr().to_string(),
    }
}

/// The harness must be able to fail: a message whose path attribute length
/// runs past the UPDATE is reported by tshark, so `problems` is not empty.
#[test]
fn harness_detects_malformed_message() {
    if !tshark::available() {
        return;
    }
    // UPDATE: no withdrawn routes, 7 octets of attributes, ORIGIN claiming a
    // 9-octet value (RFC 4271 §4.3), then a /8.
    let mut body = vec![0, 0, 0, 7, 0x40, 1, 9, 0, 0, 0, 0];
    body.extend_from_slice(&[8, 10]);
    let mut msg = vec![0xff; 16];
    msg.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    msg.push(2);
    msg.extend_from_slice(&body);
    let mut p = BgpPcap::new();
    p.send(&msg);
    let file = tshark::temp_pcap("malformed");
    std::fs::write(&file, p.finish()).expect("write pcap");
    let problems = tshark::problems(&file);
    let _ = std::fs::remove_file(&file);
    assert!(!problems.is_empty(), "tshark accepted a malformed UPDATE");
}

/// Messages of every kind, built with bgp-wire's owned forms: tshark must
/// dissect each cleanly and show the values we put in.
#[test]
fn constructed_messages_match_tshark() {
    if !tshark::available() {
        return;
    }
    let cases = bgp_cases::all();
    let mut p = BgpPcap::new();
    for c in &cases {
        // One message per segment, so tshark row i is case i.
        p.send(&c.bytes);
    }
    let file = tshark::temp_pcap("constructed");
    std::fs::write(&file, p.finish()).expect("write pcap");
    let expected: Vec<(String, String)> = cases
        .iter()
        .map(|c| {
            (
                c.bytes[18].to_string(),
                u16::from_be_bytes([c.bytes[16], c.bytes[17]]).to_string(),
            )
        })
        .collect();
    assert_dissects(&file, &expected);

    let mut fields: Vec<&str> = Vec::new();
    for c in &cases {
        for (f, _) in &c.checks {
            if !fields.contains(f) {
                fields.push(f);
            }
        }
    }
    let rows = tshark::fields(&file, "bgp", &fields);
    let _ = std::fs::remove_file(&file);
    assert_eq!(rows.len(), cases.len(), "one BGP frame per case");
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for (c, row) in cases.iter().zip(&rows) {
        for (f, want) in &c.checks {
            let i = fields.iter().position(|x| x == f).expect("field listed");
            checked += 1;
            if &row[i] != want {
                mismatches.push(format!(
                    "{}: {f}: tshark {:?}, encoded {:?}",
                    c.name, row[i], want
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {checked} field checks differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(checked > 80, "only {checked} field checks ran");
}
