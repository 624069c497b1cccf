//! Route origin validation (RFC 6811) over a table of Validated ROA
//! Payloads (VRPs, RFC 6811 §2 / RFC 8210 §5.6), as pure data structures:
//! no sockets, no clock, no threads.
//!
//! * [`VrpTable`]: the VRPs in use (prefix, max length, origin AS), with
//!   [`VrpTable::validate`] giving a route's [`RovState`];
//! * [`PrefixIndex`]: the prefixes a RIB holds, so that a change of the
//!   VRP set re-evaluates only the routes it covers ([`PrefixIndex::covered_by`])
//!   instead of walking the whole table;
//! * [`AspaTable`]: ASPA records (customer AS → providers) and AS_PATH
//!   verification by draft-ietf-sidrops-aspa-verification
//!   ([`AspaTable::verify`]: [`AspaState`] Valid / Invalid / Unknown).
//!
//! Why our own code: the `rpki` crate (NLnet Labs) brings the RTR protocol
//! (RFC 8210) and its PDU codec, which tesserad uses at its edge
//! (`bgp-speaker`'s `rpki` module); it has no origin-validation table, no
//! ASPA path verification, and no notion of a RIB whose routes a VRP
//! change touches (BIRD's and FRR's are C inside their daemons; no
//! maintained Rust crate does either). What is left is
//! this small table and index, kept pure so that tests (and the RIB
//! threads) drive it without a cache server.
//!
//! ```
//! use base::Prefix;
//! use rov::{RovState, Vrp, VrpTable};
//! let mut t = VrpTable::default();
//! t.insert(Vrp::new("192.0.2.0/24".parse().unwrap(), 24, 64500).unwrap());
//! let p: Prefix = "192.0.2.0/24".parse().unwrap();
//! assert_eq!(t.validate(&p, Some(64500)), RovState::Valid);
//! assert_eq!(t.validate(&p, Some(64501)), RovState::Invalid);
//! let q: Prefix = "198.51.100.0/24".parse().unwrap();
//! assert_eq!(t.validate(&q, Some(64500)), RovState::NotFound);
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod aspa;
pub mod caches;
mod index;
mod table;

pub use aspa::{from_draft10, Aspa, AspaState, AspaTable, Direction};
pub use index::PrefixIndex;
pub use table::{Vrp, VrpError, VrpTable};

/// The validation state of a route (RFC 6811 §2).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RovState {
    /// No VRP covers the prefix.
    #[default]
    NotFound,
    /// A covering VRP matches the origin AS and the prefix length.
    Valid,
    /// VRPs cover the prefix, and none matches.
    Invalid,
}

impl RovState {
    /// The word used in the config (`rpki = "..."`), the CLI and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RovState::NotFound => "not-found",
            RovState::Valid => "valid",
            RovState::Invalid => "invalid",
        }
    }

    /// Parses [`Self::as_str`]'s words.
    pub fn parse(s: &str) -> Option<RovState> {
        match s {
            "not-found" => Some(RovState::NotFound),
            "valid" => Some(RovState::Valid),
            "invalid" => Some(RovState::Invalid),
            _ => None,
        }
    }
}

impl std::fmt::Display for RovState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A prefix as one ordered key: family, address bits (IPv4 in the low 32
/// bits), length. Addresses are masked.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) v6: bool,
    pub(crate) addr: u128,
    pub(crate) len: u8,
}

impl Key {
    pub(crate) fn of(p: &Prefix) -> Key {
        match p.masked() {
            Prefix::V4(q) => Key {
                v6: false,
                addr: u128::from(q.addr_bits()),
                len: q.len(),
            },
            Prefix::V6(q) => Key {
                v6: true,
                addr: q.addr_bits(),
                len: q.len(),
            },
        }
    }

    pub(crate) fn bits(self) -> u8 {
        if self.v6 {
            128
        } else {
            32
        }
    }

    /// The same address cut to `len` bits (`len` at most `self.len`).
    pub(crate) fn truncate(self, len: u8) -> Key {
        let host = u32::from(self.bits() - len);
        let mask = if host >= 128 {
            0
        } else {
            !((1u128 << host) - 1)
                & if self.v6 {
                    u128::MAX
                } else {
                    u128::from(u32::MAX)
                }
        };
        Key {
            v6: self.v6,
            addr: self.addr & mask,
            len,
        }
    }

    /// The last address inside this prefix.
    pub(crate) fn last(self) -> u128 {
        let host = u32::from(self.bits() - self.len);
        if host >= 128 {
            u128::MAX
        } else {
            self.addr | ((1u128 << host) - 1)
        }
    }

    pub(crate) fn prefix(self) -> Option<Prefix> {
        if self.v6 {
            base::Prefix6::new(self.addr, self.len).ok().map(Prefix::V6)
        } else {
            let a = u32::try_from(self.addr).ok()?;
            base::Prefix4::new(a, self.len).ok().map(Prefix::V4)
        }
    }
}

use base::Prefix;
