//! AS-path regular expressions (`bgp_policy::regex::AsPathRegex`): compile
//! a pattern, match it against AS paths. Input: the pattern (lossy UTF-8)
//! up to the first 0x00 byte, then the paths: each ASN is two bytes
//! big-endian, or 0xff followed by four bytes for a 4-octet ASN; a 0xfe
//! byte ends one path and starts the next.
//!
//! Besides "never panics": matching is deterministic, and a pattern with
//! no `^`/`$` that matches a path also matches it with ASNs around it
//! (unanchored expressions match anywhere, as the module docs say).
#![no_main]

use bgp_policy::regex::{AsPathRegex, MAX_STATES};
use libfuzzer_sys::fuzz_target;

fn paths(mut b: &[u8]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new()];
    loop {
        let asn = match b {
            [0xfe, rest @ ..] => {
                out.push(Vec::new());
                b = rest;
                continue;
            }
            [0xff, a, c, d, e, rest @ ..] => {
                b = rest;
                u32::from_be_bytes([*a, *c, *d, *e])
            }
            [a, c, rest @ ..] => {
                b = rest;
                u32::from(u16::from_be_bytes([*a, *c]))
            }
            _ => break,
        };
        if let Some(p) = out.last_mut() {
            p.push(asn);
        }
        if out.len() > 64 {
            break;
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let (pat, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let pat = String::from_utf8_lossy(pat);
    let re = match AsPathRegex::new(&pat) {
        Ok(re) => re,
        Err((off, e)) => {
            assert!(off <= pat.len(), "error offset {off} past {}", pat.len());
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    assert_eq!(re.as_str(), pat);
    assert!(re.state_count() <= MAX_STATES);
    let unanchored = !pat.contains(['^', '$']);
    for p in paths(rest) {
        let m = re.matches(p.iter().copied());
        assert_eq!(m, re.matches(p.iter().copied()), "not deterministic");
        if m && unanchored {
            let around: Vec<u32> = [65001]
                .into_iter()
                .chain(p.iter().copied())
                .chain([4_200_000_000, 0])
                .collect();
            assert!(
                re.matches(around.iter().copied()),
                "{pat:?} matches {p:?} but not {around:?}"
            );
        }
    }
});
