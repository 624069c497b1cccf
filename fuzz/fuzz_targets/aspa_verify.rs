//! ASPA AS_PATH verification (`rov::AspaTable::verify`) and the reading
//! of draft-ietf-sidrops-8210bis-10 ASPA PDU fields (`rov::from_draft10`),
//! both fed from what an RTR cache and a BGP peer send.
//!
//! Input: a control byte (bit 0: downstream, bit 1: AS_SET, bit 2: check
//! the neighbour), then 4-byte big-endian words. Up to the first
//! 0xffffffff word they form ASPA records, each a customer, a count byte
//! (the word's low byte) and that many providers; the words after it are
//! the AS_PATH.
//!
//! Besides "never panics": the outcome is deterministic, downstream is
//! never stricter than upstream, and a record read by `from_draft10` has
//! no more providers than its count announced.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rov::{Aspa, AspaState, AspaTable, Direction};

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    let words: Vec<u32> = rest
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let split = words.iter().position(|w| *w == u32::MAX).unwrap_or(words.len());
    let (recs, path) = words.split_at(split);
    let path = path.get(1..).unwrap_or(&[]);
    let mut t = AspaTable::default();
    let mut i = 0;
    while let (Some(&c), Some(&n)) = (recs.get(i), recs.get(i + 1)) {
        let n = (n & 0xff) as usize;
        let end = (i + 2 + n).min(recs.len());
        let providers = recs[i + 2..end].to_vec();
        t.insert(Aspa::new(c, providers));
        // The same words as a draft-10 PDU body would give them.
        if let Some((_, a)) = rov::from_draft10(c, &recs[i + 1..end]) {
            // Providers are deduplicated, never more than announced.
            assert!(a.providers.len() <= (c & 0xffff) as usize);
        }
        i = end;
    }
    let has_set = ctl & 2 != 0;
    let neighbour = (ctl & 4 != 0).then(|| path.first().copied()).flatten();
    let dir = if ctl & 1 != 0 {
        Direction::Downstream
    } else {
        Direction::Upstream
    };
    let a = t.verify(path, has_set, neighbour, dir);
    assert_eq!(a, t.verify(path, has_set, neighbour, dir));
    let up = t.verify(path, has_set, neighbour, Direction::Upstream);
    let down = t.verify(path, has_set, neighbour, Direction::Downstream);
    assert!(!(down == AspaState::Invalid && up != AspaState::Invalid));
    assert!(!(up == AspaState::Valid && down != AspaState::Valid));
});
