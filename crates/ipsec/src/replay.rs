//! The anti-replay window of RFC 4303 §3.4.3 (without ESN).
//!
//! A bitmap of `size` bits (a multiple of 64, at least 64 as §3.4.3
//! requires of a default window, at most 4096) kept as a ring indexed by
//! `seq % size`, and the highest sequence number authenticated so far.
//! [`ReplayWindow::check`] runs before the integrity check (cheap
//! rejection of duplicates), [`ReplayWindow::update`] only after it
//! passed, so a forged packet never moves the window (§3.4.3: "the
//! receive window is updated only if the integrity verification
//! succeeds").

/// Smallest window: 64 bits.
pub const MIN_WINDOW: u32 = 64;
/// Largest window: 4096 bits.
pub const MAX_WINDOW: u32 = 4096;

/// The anti-replay window of one inbound SA.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    bits: Vec<u64>,
    size: u32,
    /// Highest sequence number accepted; 0 before the first packet.
    top: u32,
}

/// Why a sequence number is refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Seen already.
    Duplicate,
    /// Left of the window.
    TooOld,
}

impl ReplayWindow {
    /// A window of `size` bits; `None` unless `size` is a multiple of 64 in
    /// `64..=4096`.
    pub fn new(size: u32) -> Option<Self> {
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&size) || size % 64 != 0 {
            return None;
        }
        Some(ReplayWindow {
            bits: vec![0; (size / 64) as usize],
            size,
            top: 0,
        })
    }

    /// The window size in bits.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The highest sequence number accepted so far.
    pub fn top(&self) -> u32 {
        self.top
    }

    fn slot(&self, seq: u32) -> (usize, u64) {
        let i = seq % self.size;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn seen(&self, seq: u32) -> bool {
        let (w, m) = self.slot(seq);
        self.bits.get(w).is_some_and(|b| b & m != 0)
    }

    /// May `seq` be accepted (before the ICV check)? Sequence number 0 is
    /// never sent (the first is 1, §3.3.3), so it is always a replay.
    pub fn check(&self, seq: u32) -> Result<(), Replay> {
        if seq > self.top {
            return Ok(());
        }
        if seq == 0 || self.top - seq >= self.size {
            return Err(Replay::TooOld);
        }
        if self.seen(seq) {
            Err(Replay::Duplicate)
        } else {
            Ok(())
        }
    }

    /// Records `seq` as received (after the ICV check passed). Moving the
    /// right edge clears the bits that leave through it.
    pub fn update(&mut self, seq: u32) {
        if seq > self.top {
            let ahead = seq - self.top;
            if ahead >= self.size {
                self.bits.iter_mut().for_each(|b| *b = 0);
            } else {
                for s in self.top + 1..seq {
                    let (w, m) = self.slot(s);
                    if let Some(b) = self.bits.get_mut(w) {
                        *b &= !m;
                    }
                }
            }
            self.top = seq;
        }
        let (w, m) = self.slot(seq);
        if let Some(b) = self.bits.get_mut(w) {
            *b |= m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes() {
        assert!(ReplayWindow::new(32).is_none());
        assert!(ReplayWindow::new(100).is_none());
        assert!(ReplayWindow::new(8192).is_none());
        assert_eq!(ReplayWindow::new(128).unwrap().size(), 128);
    }

    #[test]
    fn duplicates_old_and_reordered() {
        let mut w = ReplayWindow::new(64).unwrap();
        assert_eq!(w.check(0), Err(Replay::TooOld));
        for s in [1, 2, 5, 3] {
            assert_eq!(w.check(s), Ok(()));
            w.update(s);
        }
        assert_eq!(w.check(3), Err(Replay::Duplicate));
        assert_eq!(w.check(4), Ok(()));
        w.update(100);
        // 100 - 36 = 64: left of a 64-bit window; 37 is the last inside.
        assert_eq!(w.check(36), Err(Replay::TooOld));
        assert_eq!(w.check(37), Ok(()));
        assert_eq!(w.check(100), Err(Replay::Duplicate));
        // A bit from the previous lap (5 and 69 share a slot) is cleared.
        assert_eq!(w.check(69), Ok(()));
        w.update(1000);
        assert_eq!(w.check(999), Ok(()));
        assert_eq!(w.check(1000), Err(Replay::Duplicate));
    }

    proptest! {
        /// Against a set of every accepted number: accepted exactly when
        /// new and within the window.
        #[test]
        fn matches_a_reference(seqs in proptest::collection::vec(1u32..600, 1..300), size in 1u32..4) {
            let size = size * 64;
            let mut w = ReplayWindow::new(size).unwrap();
            let mut seen = std::collections::BTreeSet::new();
            let mut top = 0u32;
            for s in seqs {
                let fresh = !seen.contains(&s) && (s > top || top - s < size);
                prop_assert_eq!(w.check(s).is_ok(), fresh, "seq {} top {}", s, top);
                if fresh {
                    w.update(s);
                    seen.insert(s);
                    top = top.max(s);
                }
            }
        }
    }
}
