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
    let _ = std::fs::remove_file(&file);
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
