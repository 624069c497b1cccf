//! ASPA-based AS_PATH verification (draft-ietf-sidrops-aspa-verification):
//! the table of Validated ASPA Payloads (customer AS → set of provider
//! ASes, RFC 8210bis §5.12) and the upstream and downstream verification
//! procedures, giving Valid, Invalid or Unknown for an AS_PATH.
//!
//! Terms (draft §5, §6): the AS_PATH with prepends collapsed is
//! AS(N), ..., AS(1): AS(N) the neighbour that sent it (first on the
//! wire), AS(1) the origin (last). `hop(a, b)` is *No Attestation* when
//! `a` has no ASPA, *Provider+* when `b` is in `a`'s provider set, and
//! *Not Provider+* otherwise.
//!
//! * the **up-ramp** starts at the origin: AS(i) → AS(i+1) while AS(i+1)
//!   is attested a provider of AS(i);
//! * the **down-ramp** starts at the neighbour: AS(j) → AS(j-1) while
//!   AS(j-1) is attested a provider of AS(j).
//!
//! `max_*` ramps stop only at *Not Provider+* (the longest the ramp could
//! be), `min_*` ramps stop at *No Attestation* too (the part proven). A
//! route from a customer, a lateral peer, a route server or a route-server
//! client must be all up-ramp (upstream verification, draft §6.1); one
//! from a provider may be an up-ramp followed by a down-ramp (downstream
//! verification, §6.2).

use std::collections::HashMap;

/// The outcome of AS_PATH verification (draft §6).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AspaState {
    /// Every hop is attested and the path is valley-free.
    Valid,
    /// Some hop is attested *not* to be customer-to-provider where it must
    /// be (a route leak or a forged path), or the path has an AS_SET.
    Invalid,
    /// Not enough ASPAs to tell.
    Unknown,
}

impl AspaState {
    /// The word used in the config (`aspa = "..."`), the CLI and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            AspaState::Valid => "valid",
            AspaState::Invalid => "invalid",
            AspaState::Unknown => "unknown",
        }
    }

    /// Parses [`Self::as_str`]'s words.
    pub fn parse(s: &str) -> Option<AspaState> {
        match s {
            "valid" => Some(AspaState::Valid),
            "invalid" => Some(AspaState::Invalid),
            "unknown" => Some(AspaState::Unknown),
            _ => None,
        }
    }
}

impl std::fmt::Display for AspaState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which procedure a route needs, from the relation with the neighbour
/// that sent it (RFC 9234 roles).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From a customer, a lateral peer, a route server or a route-server
    /// client (draft §6.1).
    Upstream,
    /// From a provider (draft §6.2).
    Downstream,
}

impl Direction {
    /// The procedure for a route from a neighbour with this RFC 9234
    /// role code (the role the *neighbour* has: 0 Provider, 1 RS,
    /// 2 RS-Client, 3 Customer, 4 Peer); None for unknown codes.
    pub fn of_neighbour_role(code: u8) -> Option<Direction> {
        match code {
            0 => Some(Direction::Downstream),
            1..=4 => Some(Direction::Upstream),
            _ => None,
        }
    }
}

/// One Validated ASPA Payload: `customer` attests `providers` as its
/// complete set of providers (an empty set or `[0]` attests none, draft
/// §5 / the ASPA profile's AS 0 rule).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Aspa {
    /// The customer AS.
    pub customer: u32,
    /// Its providers, sorted, without duplicates.
    pub providers: Vec<u32>,
}

impl Aspa {
    /// An ASPA; the provider list is sorted and deduplicated.
    pub fn new(customer: u32, mut providers: Vec<u32>) -> Aspa {
        providers.sort_unstable();
        providers.dedup();
        Aspa {
            customer,
            providers,
        }
    }
}

/// Reads an ASPA PDU of draft-ietf-sidrops-8210bis-10 (what stayrtr
/// 0.5.1 sends) from what a reader of the current layout made of it.
///
/// The current layout (the `rpki` crate's) has the announce flag in the
/// header, then the customer AS and the providers. The draft-10 layout
/// starts the body with a flags octet (bit 0: announce), an AFI flags
/// octet (bit 0: IPv6) and a 16-bit provider count, and only then the
/// customer AS. Read with the current layout, that first word comes out
/// as the "customer" and the real customer as the first "provider".
/// Returns (announce, the ASPA), or None when the fields do not fit the
/// draft-10 layout (reserved flag bits set, or a count that does not
/// match).
pub fn from_draft10(first_word: u32, rest: &[u32]) -> Option<(bool, Aspa)> {
    let [flags, afi, hi, lo] = first_word.to_be_bytes();
    let count = usize::from(u16::from_be_bytes([hi, lo]));
    let (&customer, providers) = rest.split_first()?;
    if flags & !1 != 0 || afi & !1 != 0 || count != providers.len() {
        return None;
    }
    Some((flags & 1 == 1, Aspa::new(customer, providers.to_vec())))
}

/// The result of one hop check (draft §5).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Hop {
    NoAttestation,
    ProviderPlus,
    NotProviderPlus,
}

/// The ASPAs in use: at most one provider set per customer AS (RTR
/// version 2 replaces a customer's record as a whole).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AspaTable {
    map: HashMap<u32, Vec<u32>>,
}

impl AspaTable {
    /// Sets `a.customer`'s provider set; true if that changed anything.
    pub fn insert(&mut self, a: Aspa) -> bool {
        let old = self.map.insert(a.customer, a.providers.clone());
        old.as_ref() != Some(&a.providers)
    }

    /// Removes `customer`'s record; true if there was one.
    pub fn remove(&mut self, customer: u32) -> bool {
        self.map.remove(&customer).is_some()
    }

    /// The provider set of `customer`, if it has an ASPA.
    pub fn get(&self, customer: u32) -> Option<&[u32]> {
        self.map.get(&customer).map(Vec::as_slice)
    }

    /// Number of ASPAs (customer ASes).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every ASPA, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = Aspa> + '_ {
        self.map.iter().map(|(c, p)| Aspa {
            customer: *c,
            providers: p.clone(),
        })
    }

    /// The customer ASes whose records differ between `self` and `other`.
    pub fn diff(&self, other: &AspaTable) -> Vec<u32> {
        let mut v: Vec<u32> = (self.map.iter())
            .filter(|(c, p)| other.map.get(c) != Some(p))
            .map(|(c, _)| *c)
            .chain(
                (other.map.keys())
                    .filter(|c| !self.map.contains_key(c))
                    .copied(),
            )
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// hop(a, b) of draft §5.
    fn hop(&self, a: u32, b: u32) -> Hop {
        match self.map.get(&a) {
            None => Hop::NoAttestation,
            Some(p) if p.binary_search(&b).is_ok() => Hop::ProviderPlus,
            Some(_) => Hop::NotProviderPlus,
        }
    }

    /// Verifies an AS_PATH (draft §6).
    ///
    /// * `path`: the AS_SEQUENCE ASes as on the wire, most recent first
    ///   (prepends are collapsed here);
    /// * `has_set`: the path has an AS_SET segment (draft §6.1/6.2 step
    ///   2: Invalid whatever the ASPAs say);
    /// * `neighbour`: the AS of the BGP neighbour, checked to be the most
    ///   recently added AS; None skips the check (a transparent route
    ///   server does not add its AS, draft §6.1 note on RS);
    /// * `dir`: the procedure (see [`Direction::of_neighbour_role`]).
    ///
    /// An empty path is Invalid (a route from an eBGP neighbour always
    /// carries at least its AS).
    pub fn verify(
        &self,
        path: &[u32],
        has_set: bool,
        neighbour: Option<u32>,
        dir: Direction,
    ) -> AspaState {
        // Collapse prepends: AS(N)..AS(1) with no two equal neighbours.
        let mut hops: Vec<u32> = Vec::with_capacity(path.len());
        for &a in path {
            if hops.last() != Some(&a) {
                hops.push(a);
            }
        }
        if hops.is_empty() || has_set {
            return AspaState::Invalid;
        }
        if neighbour.is_some_and(|n| hops.first() != Some(&n)) {
            return AspaState::Invalid;
        }
        // as_(i) = AS(i), 1-based from the origin.
        hops.reverse();
        let n = hops.len();
        let at = |i: usize| hops.get(i - 1).copied().unwrap_or(0);
        // Up-ramp: the first i in 1..N with hop(AS(i), AS(i+1)) failing.
        let (mut max_up, mut min_up) = (n, n);
        for i in 1..n {
            match self.hop(at(i), at(i + 1)) {
                Hop::ProviderPlus => {}
                Hop::NoAttestation => min_up = min_up.min(i),
                Hop::NotProviderPlus => {
                    min_up = min_up.min(i);
                    max_up = i;
                    break;
                }
            }
        }
        match dir {
            Direction::Upstream => {
                if max_up < n {
                    AspaState::Invalid
                } else if min_up < n {
                    AspaState::Unknown
                } else {
                    AspaState::Valid
                }
            }
            Direction::Downstream => {
                // Down-ramp: the last j in 2..=N with hop(AS(j), AS(j-1))
                // failing; its length is N - j + 1.
                let (mut max_down, mut min_down) = (n, n);
                for j in (2..=n).rev() {
                    match self.hop(at(j), at(j - 1)) {
                        Hop::ProviderPlus => {}
                        Hop::NoAttestation => min_down = min_down.min(n - j + 1),
                        Hop::NotProviderPlus => {
                            min_down = min_down.min(n - j + 1);
                            max_down = n - j + 1;
                            break;
                        }
                    }
                }
                if max_up + max_down < n {
                    AspaState::Invalid
                } else if min_up + min_down < n {
                    AspaState::Unknown
                } else {
                    AspaState::Valid
                }
            }
        }
    }
}
