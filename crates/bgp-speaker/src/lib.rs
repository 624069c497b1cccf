//! The runtime half of the BGP speaker: sockets, threads and timers around
//! the pure `bgp-fsm` and `bgp-rib` cores.

pub mod daemon;
pub mod fib_feed;
pub mod inproc;
pub mod mrt_dump;
pub mod msg;
pub mod pipeline;
pub mod rib;
pub mod rib_dump;
pub mod sess;
pub mod stages;
