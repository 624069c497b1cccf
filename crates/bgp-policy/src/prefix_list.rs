//! Prefix lists compiled into a binary trie per address family.
//!
//! Each trie node sits at one prefix (depth = length) and holds the set of
//! route lengths that entries ending there accept, as a bitmask. A route
//! P/L matches when some node on the path from the root to depth L accepts
//! length L: one walk of at most L steps, independent of the number of
//! entries. Entries only ever permit (a term's prefix condition is "any
//! entry matches"), so masks of entries ending at the same node just merge.

use std::net::IpAddr;

use base::{Afi, Prefix};

use crate::error::ErrorKind;

/// One parsed entry: `prefix` with route lengths `ge..=le`.
///
/// Text forms: `ADDR/LEN` (exactly that prefix), `ADDR/LEN le N`,
/// `ADDR/LEN ge N`, `ADDR/LEN ge N le M` (either order), and `ADDR/LEN+`
/// (`ADDR/LEN` or longer, i.e. `le 32`/`le 128`). With only `le`, `ge` is
/// LEN; with only `ge`, `le` is the address width. Host bits beyond LEN
/// are refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PrefixRange {
    /// The prefix; host bits must be zero.
    pub prefix: Prefix,
    /// Shortest matching length, at least `prefix.len()`.
    pub ge: u8,
    /// Longest matching length, between `ge` and the address width.
    pub le: u8,
}

/// Splits `ADDR/LEN` (or a bare address when `bare_ok`, as a host route).
pub(crate) fn parse_prefix(s: &str, bare_ok: bool) -> Result<Prefix, ErrorKind> {
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None if bare_ok => (s, None),
        None => return Err(ErrorKind::PrefixSyntax),
    };
    let addr: IpAddr = a.parse().map_err(|_| {
        if bare_ok {
            ErrorKind::AddressSyntax
        } else {
            ErrorKind::PrefixSyntax
        }
    })?;
    let max = max_len(addr);
    let len = match l {
        Some(l) => l.parse::<u8>().map_err(|_| ErrorKind::PrefixSyntax)?,
        None => max,
    };
    if len > max {
        return Err(ErrorKind::PrefixLength { len, max });
    }
    let p = Prefix::new(addr, len).map_err(|_| ErrorKind::PrefixSyntax)?;
    if p.masked() != p {
        return Err(ErrorKind::HostBits);
    }
    Ok(p)
}

fn max_len(a: IpAddr) -> u8 {
    match a {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

fn afi_max(afi: Afi) -> u8 {
    if afi == Afi::Ipv4 {
        32
    } else {
        128
    }
}

impl PrefixRange {
    /// Parses one entry in the text forms above.
    pub fn parse(s: &str) -> Result<PrefixRange, ErrorKind> {
        let mut words = s.split_whitespace();
        let first = words.next().ok_or(ErrorKind::PrefixSyntax)?;
        let (first, plus) = match first.strip_suffix('+') {
            Some(f) => (f, true),
            None => (first, false),
        };
        let prefix = parse_prefix(first, false)?;
        let (len, max) = (prefix.len(), afi_max(prefix.afi()));
        let (mut ge, mut le) = (None, None);
        while let Some(w) = words.next() {
            let n = words
                .next()
                .and_then(|n| n.parse::<u8>().ok())
                .ok_or(ErrorKind::PrefixSyntax)?;
            let slot = match w {
                "ge" => &mut ge,
                "le" => &mut le,
                _ => return Err(ErrorKind::PrefixSyntax),
            };
            if slot.replace(n).is_some() || plus {
                return Err(ErrorKind::PrefixSyntax);
            }
        }
        let (ge, le) = match (ge, le, plus) {
            (_, _, true) => (len, max),
            (None, None, false) => (len, len),
            (Some(g), None, _) => (g, max),
            (g, Some(l), _) => (g.unwrap_or(len), l),
        };
        if !(len <= ge && ge <= le && le <= max) {
            return Err(ErrorKind::PrefixRange { len, ge, le, max });
        }
        Ok(PrefixRange { prefix, ge, le })
    }

    /// The plain definition, used as the reference in tests.
    pub fn matches(&self, p: &Prefix) -> bool {
        let covered = match (self.prefix, p) {
            (Prefix::V4(e), Prefix::V4(q)) => {
                q.len() >= e.len() && e.contains_addr(q.masked().addr_bits())
            }
            (Prefix::V6(e), Prefix::V6(q)) => {
                q.len() >= e.len() && e.contains_addr(q.masked().addr_bits())
            }
            _ => false,
        };
        covered && (self.ge..=self.le).contains(&p.len())
    }
}

/// A set of lengths 0..=128.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct LenMask([u64; 3]);

impl LenMask {
    fn range(lo: u8, hi: u8) -> LenMask {
        let mut m = LenMask::default();
        for l in lo..=hi {
            m.set(l);
        }
        m
    }
    fn set(&mut self, l: u8) {
        if let Some(w) = self.0.get_mut(usize::from(l >> 6)) {
            *w |= 1 << (l & 63);
        }
    }
    #[inline]
    fn has(&self, l: u8) -> bool {
        self.0
            .get(usize::from(l >> 6))
            .is_some_and(|w| w & (1 << (l & 63)) != 0)
    }
    fn or(&mut self, o: &LenMask) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a |= b;
        }
    }
}

const NONE: u32 = u32::MAX;

#[derive(Copy, Clone, Debug)]
struct Node {
    child: [u32; 2],
    lens: LenMask,
}

impl Node {
    const EMPTY: Node = Node {
        child: [NONE, NONE],
        lens: LenMask([0; 3]),
    };
}

/// One family's trie; keys are addresses left-aligned in a `u128`.
#[derive(Clone, Debug)]
struct Trie {
    nodes: Vec<Node>,
    /// Union of all masks: a quick reject for lengths no entry accepts.
    any: LenMask,
}

impl Default for Trie {
    fn default() -> Self {
        Trie {
            nodes: vec![Node::EMPTY],
            any: LenMask::default(),
        }
    }
}

#[inline]
fn bit(key: u128, depth: u8) -> usize {
    ((key >> (127 - u32::from(depth.min(127)))) & 1) as usize
}

impl Trie {
    fn insert(&mut self, key: u128, len: u8, lens: LenMask) {
        let mut n = 0usize;
        for d in 0..len {
            let b = bit(key, d);
            let next = self.nodes.get(n).map_or(NONE, |x| x.child[b]);
            n = if next == NONE {
                let id = self.nodes.len();
                self.nodes.push(Node::EMPTY);
                if let Some(x) = self.nodes.get_mut(n) {
                    x.child[b] = id as u32;
                }
                id
            } else {
                next as usize
            };
        }
        if let Some(x) = self.nodes.get_mut(n) {
            x.lens.or(&lens);
        }
        self.any.or(&lens);
    }

    #[inline]
    fn matches(&self, key: u128, len: u8) -> bool {
        if !self.any.has(len) {
            return false;
        }
        let mut n = 0usize;
        let mut d = 0u8;
        while let Some(node) = self.nodes.get(n) {
            if node.lens.has(len) {
                return true;
            }
            if d == len {
                return false;
            }
            let next = node.child[bit(key, d)];
            if next == NONE {
                return false;
            }
            n = next as usize;
            d += 1;
        }
        false
    }
}

fn key(p: &Prefix) -> (bool, u128) {
    match p {
        Prefix::V4(p) => (false, u128::from(p.addr_bits()) << 96),
        Prefix::V6(p) => (true, p.addr_bits()),
    }
}

fn addr_key(a: IpAddr) -> (bool, u128, u8) {
    match a {
        IpAddr::V4(a) => (false, u128::from(u32::from(a)) << 96, 32),
        IpAddr::V6(a) => (true, u128::from(a), 128),
    }
}

/// A compiled prefix list (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct PrefixList {
    v4: Trie,
    v6: Trie,
}

impl PrefixList {
    /// Compiles `entries` into one trie per family.
    pub fn new(entries: &[PrefixRange]) -> PrefixList {
        let mut pl = PrefixList::default();
        for e in entries {
            let (v6, k) = key(&e.prefix);
            let t = if v6 { &mut pl.v6 } else { &mut pl.v4 };
            t.insert(k, e.prefix.len(), LenMask::range(e.ge, e.le));
        }
        pl
    }

    /// Whether some entry matches `p` (host bits of `p` are ignored).
    #[inline]
    pub fn matches(&self, p: &Prefix) -> bool {
        let (v6, k) = key(p);
        let t = if v6 { &self.v6 } else { &self.v4 };
        t.matches(k, p.len())
    }

    /// Whether `a` lies within some entry of a list built by
    /// [`AddrList::new`]-style entries (`le` = address width).
    #[inline]
    pub fn contains_addr(&self, a: IpAddr) -> bool {
        let (v6, k, len) = addr_key(a);
        let t = if v6 { &self.v6 } else { &self.v4 };
        t.matches(k, len)
    }

    /// Trie nodes over both families (for tests and memory estimates).
    pub fn node_count(&self) -> usize {
        self.v4.nodes.len() + self.v6.nodes.len()
    }
}

/// Addresses or prefixes that an address (next hop, neighbour) must fall
/// within: `192.0.2.1` (one address) or `192.0.2.0/24`.
#[derive(Clone, Debug, Default)]
pub struct AddrList(PrefixList);

impl AddrList {
    /// Parses `ADDR` (a host route) or `ADDR/LEN`.
    pub fn parse_entry(s: &str) -> Result<Prefix, ErrorKind> {
        parse_prefix(s.trim(), true)
    }
    /// A list matching every address inside `prefixes`.
    pub fn new(prefixes: &[Prefix]) -> AddrList {
        let entries: Vec<PrefixRange> = prefixes
            .iter()
            .map(|p| PrefixRange {
                prefix: *p,
                ge: p.len(),
                le: afi_max(p.afi()),
            })
            .collect();
        AddrList(PrefixList::new(&entries))
    }
    /// Whether `a` lies in one of the prefixes.
    #[inline]
    pub fn contains(&self, a: IpAddr) -> bool {
        self.0.contains_addr(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Prefix {
        s.parse().unwrap()
    }
    fn list(es: &[&str]) -> PrefixList {
        let v: Vec<_> = es.iter().map(|e| PrefixRange::parse(e).unwrap()).collect();
        PrefixList::new(&v)
    }

    #[test]
    fn parse_forms_and_errors() {
        let r = PrefixRange::parse("10.0.0.0/8 le 24").unwrap();
        assert_eq!((r.ge, r.le), (8, 24));
        let r = PrefixRange::parse("2001:db8::/32 le 64 ge 48").unwrap();
        assert_eq!((r.ge, r.le), (48, 64));
        let r = PrefixRange::parse("10.0.0.0/8 ge 16").unwrap();
        assert_eq!((r.ge, r.le), (16, 32));
        let r = PrefixRange::parse("10.0.0.0/8+").unwrap();
        assert_eq!((r.ge, r.le), (8, 32));
        let r = PrefixRange::parse(" 10.0.0.0/8 ").unwrap();
        assert_eq!((r.ge, r.le), (8, 8));
        assert_eq!(
            PrefixRange::parse("10.0.0.0/33"),
            Err(ErrorKind::PrefixLength { len: 33, max: 32 })
        );
        assert_eq!(
            PrefixRange::parse("10.0.0.0/8 le 33"),
            Err(ErrorKind::PrefixRange {
                len: 8,
                ge: 8,
                le: 33,
                max: 32
            })
        );
        assert!(matches!(
            PrefixRange::parse("10.0.0.0/16 le 8"),
            Err(ErrorKind::PrefixRange { .. })
        ));
        assert!(matches!(
            PrefixRange::parse("10.0.0.0/8 ge 24 le 16"),
            Err(ErrorKind::PrefixRange { .. })
        ));
        assert_eq!(PrefixRange::parse("10.0.0.1/8"), Err(ErrorKind::HostBits));
        for bad in [
            "",
            "10.0.0.0",
            "10.0.0.0/8 le",
            "10.0.0.0/8 lt 9",
            "10.0.0.0/8 le 9 le 10",
            "10.0.0.0/8+ le 9",
            "x/8",
        ] {
            assert_eq!(
                PrefixRange::parse(bad),
                Err(ErrorKind::PrefixSyntax),
                "{bad}"
            );
        }
    }

    #[test]
    fn ge_le_boundaries() {
        let l = list(&["10.0.0.0/8 ge 16 le 24"]);
        assert!(!l.matches(&p("10.0.0.0/8")));
        assert!(!l.matches(&p("10.0.0.0/15")));
        assert!(l.matches(&p("10.1.0.0/16")));
        assert!(l.matches(&p("10.1.2.0/24")));
        assert!(!l.matches(&p("10.1.2.0/25")));
        assert!(!l.matches(&p("11.1.0.0/16")));
        let exact = list(&["192.0.2.0/24"]);
        assert!(exact.matches(&p("192.0.2.0/24")));
        assert!(!exact.matches(&p("192.0.2.0/25")));
        assert!(!exact.matches(&p("192.0.0.0/23")));
        let dflt = list(&["0.0.0.0/0", "::/0 ge 48"]);
        assert!(dflt.matches(&p("0.0.0.0/0")));
        assert!(!dflt.matches(&p("10.0.0.0/8")));
        assert!(dflt.matches(&p("2001:db8::/48")));
        assert!(!dflt.matches(&p("2001:db8::/47")));
        assert!(dflt.matches(&p("::/128")));
        // Families do not mix.
        assert!(!list(&["0.0.0.0/0 le 32"]).matches(&p("::/0")));
    }

    #[test]
    fn addr_list_contains() {
        let a = AddrList::new(&[
            AddrList::parse_entry("192.0.2.1").unwrap(),
            AddrList::parse_entry("2001:db8::/32").unwrap(),
        ]);
        assert!(a.contains("192.0.2.1".parse().unwrap()));
        assert!(!a.contains("192.0.2.2".parse().unwrap()));
        assert!(a.contains("2001:db8:1::1".parse().unwrap()));
        assert!(!a.contains("2001:db9::1".parse().unwrap()));
        assert_eq!(
            AddrList::parse_entry("192.0.2.300"),
            Err(ErrorKind::AddressSyntax)
        );
    }

    fn arb_range4() -> impl Strategy<Value = PrefixRange> {
        (any::<u32>(), 0u8..=32, 0u8..=32, 0u8..=32).prop_map(|(a, l, x, y)| {
            let prefix = Prefix::V4(base::Prefix4::new(a, l).unwrap().masked());
            let (ge, le) = (l.max(x.min(y)), l.max(x.max(y)));
            PrefixRange { prefix, ge, le }
        })
    }

    fn arb_range6() -> impl Strategy<Value = PrefixRange> {
        // Few distinct high bits so that entries and queries overlap.
        (0u128..16, 0u8..=128, 0u8..=128, 0u8..=128).prop_map(|(a, l, x, y)| {
            let prefix = Prefix::V6(base::Prefix6::new(a << 124, l).unwrap().masked());
            let (ge, le) = (l.max(x.min(y)), l.max(x.max(y)));
            PrefixRange { prefix, ge, le }
        })
    }

    proptest! {
        #[test]
        fn trie_equals_naive_v4(
            entries in proptest::collection::vec(arb_range4(), 0..40),
            // Queries near entries (same high bits) and random ones.
            queries in proptest::collection::vec((any::<u32>(), 0u8..=32, 0usize..40, any::<bool>()), 1..60),
        ) {
            let pl = PrefixList::new(&entries);
            for (a, l, i, near) in queries {
                let addr = match (near, entries.get(i % entries.len().max(1))) {
                    (true, Some(e)) => match e.prefix { Prefix::V4(p) => p.addr_bits() ^ (a >> 20), _ => a },
                    _ => a,
                };
                let q = Prefix::V4(base::Prefix4::new(addr, l).unwrap());
                let naive = entries.iter().any(|e| e.matches(&q));
                prop_assert_eq!(pl.matches(&q), naive, "{}", q);
            }
        }

        #[test]
        fn trie_equals_naive_v6(
            entries in proptest::collection::vec(arb_range6(), 0..40),
            queries in proptest::collection::vec((0u128..16, any::<u64>(), 0u8..=128), 1..60),
        ) {
            let pl = PrefixList::new(&entries);
            for (hi, lo, l) in queries {
                let q = Prefix::V6(base::Prefix6::new((hi << 124) | u128::from(lo), l).unwrap());
                let naive = entries.iter().any(|e| e.matches(&q));
                prop_assert_eq!(pl.matches(&q), naive, "{}", q);
            }
        }
    }
}
