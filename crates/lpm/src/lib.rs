//! Longest-prefix match for the forwarding plane.
//!
//! Every implementation answers the same question: given a destination
//! address, which next hop does the longest matching prefix carry? Next hops
//! are small integers ([`NextHop`]) indexing a next-hop table that lives
//! elsewhere (crate `fib`), so a table entry stays 4 bytes or less.
//!
//! * [`Lpm`] is the read side, used by forwarding workers: `lookup` and
//!   `lookup_batch` (which may prefetch). It takes `&self` and never locks.
//! * [`LpmMut`] is the write side: incremental insert and remove, used off
//!   the forwarding cores; publication to workers is by snapshot swap.
//! * [`reference`] holds the naive implementations every fast one is tested
//!   against.

pub mod reference;

use base::{Prefix4, Prefix6};

/// A next-hop index. Implementations may reserve high values internally;
/// valid next hops are `0..=NextHop::MAX_VALID`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NextHop(pub u32);

impl NextHop {
    /// The largest next-hop index every implementation must accept.
    pub const MAX_VALID: u32 = (1 << 20) - 1;
}

/// Why an update was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LpmError {
    /// The next-hop index is above [`NextHop::MAX_VALID`].
    NextHopTooLarge,
    /// The table is full (an implementation's fixed pool is exhausted).
    Full,
}

impl std::fmt::Display for LpmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LpmError::NextHopTooLarge => write!(f, "next-hop index too large"),
            LpmError::Full => write!(f, "LPM table full"),
        }
    }
}

impl std::error::Error for LpmError {}

/// The read side of an LPM table over addresses of type `A` (`u32` for
/// IPv4, `u128` for IPv6, host byte order).
pub trait Lpm<A: Copy>: Send + Sync {
    /// The next hop of the longest prefix containing `addr`.
    fn lookup(&self, addr: A) -> Option<NextHop>;

    /// Looks up every address; `out[i]` answers `addrs[i]`. `out` must be at
    /// least as long as `addrs`; extra entries are left alone.
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<NextHop>]) {
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.lookup(*a);
        }
    }
}

/// The write side of an LPM table for prefixes of type `P`.
pub trait LpmMut<P: Copy> {
    /// Inserts or replaces the route for `prefix` (host bits ignored).
    /// Returns the previous next hop of exactly this prefix.
    fn insert(&mut self, prefix: P, nh: NextHop) -> Result<Option<NextHop>, LpmError>;
    /// Removes the route for exactly `prefix`; returns its next hop.
    fn remove(&mut self, prefix: P) -> Option<NextHop>;
    /// Number of prefixes stored.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An IPv4 table: readable and writable.
pub trait Lpm4: Lpm<u32> + LpmMut<Prefix4> {}
impl<T: Lpm<u32> + LpmMut<Prefix4>> Lpm4 for T {}

/// An IPv6 table: readable and writable.
pub trait Lpm6: Lpm<u128> + LpmMut<Prefix6> {}
impl<T: Lpm<u128> + LpmMut<Prefix6>> Lpm6 for T {}
