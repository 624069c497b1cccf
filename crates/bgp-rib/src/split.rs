//! [`SplitMap`]: a hash map kept as 16 independent parts.
//!
//! A single table of a million prefixes grows by doubling, and while it
//! rehashes the old and the new bucket arrays are both alive: for the
//! Loc-RIB table and an Adj-RIB-Out, which grow in step during a full-table
//! import, that transient was about a third of the peak RSS. Split in 16,
//! each part rehashes on its own, at a different moment, so only 1/16 of
//! a table is ever doubled at once. Lookups hash the key twice (the part,
//! then the bucket); the hash is cheap.
//!
//! The part is chosen from hash bits 32..40, which the parts' own tables
//! use neither for the bucket (low bits) nor for the control byte (top 7
//! bits), so every part still spreads its keys over all of its buckets.
//!
//! # Unequal parts
//!
//! A hashbrown table has a power of two of buckets and grows when 7/8 are
//! full, so it is 44 to 88 % full depending on where its size falls. With
//! equal parts every part sits at the same point: a table of 0.9 to 1.0
//! times a power of two keys (a full IPv4 table of about a million
//! prefixes split over 2 shards x 16 parts, scenario (a) of issue 17) had
//! twice as many buckets as keys, all parts just past their doubling. The
//! parts' shares are therefore geometric ([`SHARES`]: part `i` takes about
//! 2^(i/16) times part 0's), so their sizes span one octave and their
//! doubling points are spread over it: whatever the number of keys, the
//! table holds about 1.5 to 1.8 buckets per key (equal parts: 1.14 to
//! 2.29; the mean over sizes is the same, 1.65). The spread also keeps
//! the parts from rehashing at the same moment.

use std::collections::hash_map::{Entry, HashMap};
use std::hash::Hash;

use crate::hash::{hash_one, FastBuild};

const PARTS: usize = 16;

/// Each part's share of the hash space, in 256ths: about 2^(i/16) times
/// part 0's (module docs), summing to 256.
const SHARES: [u8; PARTS] = [
    11, 12, 12, 13, 13, 14, 15, 15, 16, 17, 18, 18, 19, 20, 21, 22,
];

/// The part of each value of hash bits 32..40.
static PART_OF: [u8; 256] = part_table();

const fn part_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let (mut i, mut p, mut used) = (0usize, 0usize, 0usize);
    while i < 256 {
        // SHARES sums to 256 (checked by a test), so p stays below PARTS.
        while p < PARTS - 1 && used == SHARES[p] as usize {
            p += 1;
            used = 0;
        }
        t[i] = p as u8;
        used += 1;
        i += 1;
    }
    t
}

pub(crate) struct SplitMap<K, V> {
    parts: [HashMap<K, V, FastBuild>; PARTS],
}

impl<K, V> Default for SplitMap<K, V> {
    fn default() -> Self {
        SplitMap {
            parts: std::array::from_fn(|_| HashMap::default()),
        }
    }
}

impl<K: std::fmt::Debug, V: std::fmt::Debug> std::fmt::Debug for SplitMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V> SplitMap<K, V> {
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(HashMap::len).sum()
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.parts.iter().flat_map(|p| p.iter())
    }
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.parts.iter().flat_map(|p| p.values())
    }
    pub(crate) fn into_iter(self) -> impl Iterator<Item = (K, V)> {
        self.parts.into_iter().flat_map(|p| p.into_iter())
    }
    pub(crate) fn into_values(self) -> impl Iterator<Item = V> {
        self.parts.into_iter().flat_map(|p| p.into_values())
    }
    /// Bytes of the parts' bucket arrays (hashbrown: a power of two of
    /// buckets holding 7/8 of them, one control byte each); an estimate
    /// without allocator overhead.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|p| crate::hash::table_bytes::<(K, V)>(p.capacity()))
            .sum()
    }
    pub(crate) fn retain(&mut self, mut f: impl FnMut(&K, &mut V) -> bool) {
        for p in &mut self.parts {
            p.retain(&mut f);
        }
    }
}

impl<K: Hash + Eq, V> SplitMap<K, V> {
    fn part(k: &K) -> usize {
        usize::from(PART_OF[((hash_one(k) >> 32) & 0xff) as usize])
    }
    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        self.parts[Self::part(k)].get(k)
    }
    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.parts[Self::part(k)].get_mut(k)
    }
    pub(crate) fn entry(&mut self, k: K) -> Entry<'_, K, V> {
        self.parts[Self::part(&k)].entry(k)
    }
    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        self.parts[Self::part(k)].remove(k)
    }
}

impl<'a, K, V> IntoIterator for &'a SplitMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::FlatMap<
        std::slice::Iter<'a, HashMap<K, V, FastBuild>>,
        std::collections::hash_map::Iter<'a, K, V>,
        fn(&'a HashMap<K, V, FastBuild>) -> std::collections::hash_map::Iter<'a, K, V>,
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.parts.iter().flat_map(HashMap::iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shares cover the hash space, each about 2^(1/16) times the one
    /// before it, and every part owns its share of the lookup table.
    #[test]
    fn shares_are_geometric_over_one_octave() {
        assert_eq!(SHARES.iter().map(|&s| usize::from(s)).sum::<usize>(), 256);
        let sum = 1.0 / (2f64.powf(1.0 / 16.0) - 1.0);
        for (i, &share) in SHARES.iter().enumerate() {
            let want = 256.0 * 2f64.powf(i as f64 / 16.0) / sum;
            assert!((f64::from(share) - want).abs() < 1.0, "part {i}: {want}");
            let owned = PART_OF.iter().filter(|&&p| usize::from(p) == i).count();
            assert_eq!(owned, usize::from(share));
        }
        assert!(PART_OF.windows(2).all(|w| w[0] <= w[1]));
    }

    /// Buckets per key stay within 1.45..1.85 as the map grows; with
    /// equal parts they swung from 1.14 to 2.29 (2.2 at 950,000 keys).
    #[test]
    fn buckets_per_key_do_not_swing_with_the_size() {
        let mut m = SplitMap::<u64, ()>::default();
        let buckets = |m: &SplitMap<u64, ()>| -> usize {
            m.parts
                .iter()
                .map(|p| (p.capacity() * 8 / 7).next_power_of_two())
                .sum()
        };
        let mut next = 20_000u64;
        for i in 0..1_100_000u64 {
            m.entry(i.wrapping_mul(0x9e37_79b9) << 8 | 24).or_insert(());
            if i + 1 == next {
                let r = buckets(&m) as f64 / m.len() as f64;
                assert!(
                    (1.45..1.85).contains(&r),
                    "{} keys: {r:.2} buckets a key",
                    m.len()
                );
                next = next * 5 / 4;
            }
        }
    }

    #[test]
    fn behaves_as_one_map_and_uses_every_part() {
        let mut m = SplitMap::<u64, u64>::default();
        for i in 0..10_000u64 {
            assert!(matches!(m.entry(i << 8 | 24), Entry::Vacant(_)));
            m.entry(i << 8 | 24).or_insert(i);
        }
        assert!(matches!(m.entry(24), Entry::Occupied(_)));
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&(5 << 8 | 24)), Some(&5));
        *m.get_mut(&(5 << 8 | 24)).unwrap() = 50;
        assert_eq!(m.remove(&(5 << 8 | 24)), Some(50));
        assert_eq!(m.get(&(5 << 8 | 24)), None);
        *m.entry(1).or_insert(0) += 3;
        assert_eq!(m.get(&1), Some(&3));
        m.retain(|k, _| k % 2 == 0);
        assert_eq!(m.len(), m.iter().count());
        assert!(m.iter().all(|(k, _)| k % 2 == 0));
        // Keys spread: no part holds more than twice its share.
        let most = m.parts.iter().map(HashMap::len).max().unwrap();
        assert!(most < 2 * m.len() / PARTS, "{most} of {}", m.len());
        for (i, p) in m.parts.iter().enumerate() {
            let share = usize::from(SHARES[i]) * m.len() / 256;
            assert!(p.len().abs_diff(share) < share / 4, "part {i}: {}", p.len());
        }
        let n = m.len();
        assert_eq!(m.into_values().count(), n);
    }
}
