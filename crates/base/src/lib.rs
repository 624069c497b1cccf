//! Shared vocabulary for every Tessera crate: prefixes, AS numbers,
//! address families and time, and the one reader of a thread's CPU clock
//! ([`thread_cpu_time`]).
//!
//! Nothing here touches a socket or reads a clock by itself: pure cores take
//! [`Instant`] values as arguments so that tests and the simulator can drive
//! them with a virtual clock.

#![warn(missing_docs)]

mod afi;
mod asn;
mod clock;
mod cputime;
mod date;
mod prefix;
mod route;

pub use afi::{Afi, AfiSafi, Safi};
pub use asn::Asn;
pub use clock::{Clock, Instant, ManualClock, MonotonicClock};
pub use cputime::{cycles_ns, thread_cpu_ns, thread_cpu_time, ThreadCpuClock};
pub use date::civil_from_days;
pub use prefix::{mask4, mask6, Prefix, Prefix4, Prefix6, PrefixError};
pub use route::RouteChange;
