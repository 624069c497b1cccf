//! A discrete-event BGP network simulator on a virtual clock (`tessera sim
//! run`).
//!
//! # Model
//!
//! * **ASes.** Every AS of a [`topo::Graph`] runs one [`bgp_core::RibCore`]:
//!   the RIB controller `tesserad` runs, with its decision process
//!   (`bgp-rib`), its policy engine (`bgp-policy`), its UPDATE encoder and
//!   its MRAI pacing. One eBGP session per link (peer ids `1..`, in
//!   [`topo::Graph::adjacency`] order); the AS's prefixes are originated
//!   as static routes.
//! * **Policy.** Gao-Rexford ([`policy`]): LOCAL_PREF customer 300 >
//!   peer 200 > provider 100 on import, peer and provider routes exported
//!   to customers only (valley-free), written in the policy language and
//!   run by the policy engine (a large community marks routes from peers
//!   and providers); [`topo::Role::Unknown`] neighbours get
//!   everything.
//! * **Messages.** A flush of the core produces real UPDATE bytes; they
//!   reach the neighbour after the link's one-way latency, in FIFO order
//!   per session (constant latency, events ordered by time then by
//!   creation), and are decoded there with `bgp_core::decode`, as the
//!   daemon's sessions do. A link failure drops what is in flight.
//! * **MRAI.** Per session, in the core (RFC 4271 §9.2.1.1; default 30 s
//!   for eBGP). With jitter each interval is the configured one times a
//!   fresh factor in 0.75..1.0. The core paces withdrawals too (as BIRD
//!   and FRR do by default). The simulator wakes a core when a blocked
//!   session's interval ends.
//! * **Processing delay.** Each AS handles received UPDATEs one delivery
//!   at a time: a delivery of `u` UPDATEs with `p` prefixes arriving at
//!   `t` is applied at `max(t, busy) + u * per_update + p * per_prefix`
//!   (defaults 50 µs and 5 µs); the AS's export round runs when it has
//!   applied every delivery received so far. Failure detection is instant (a link-down takes both sessions
//!   down at once).
//! * **Time.** Nanoseconds (`u64`) from 0; the simulator never reads a
//!   clock nor touches a socket: [`Sim::run`] takes the time to run to.
//! * **Threads** ([`SimConfig::threads`]). The ASes can be split over
//!   several parts run in parallel, in windows as long as the shortest
//!   link latency (conservative synchronisation: nothing sent within a
//!   window arrives within it); scenario actions run between windows.
//!   Deterministic for a given thread count.
//!
//! Scenario events ([`scenario`]): initial announcement at 0, link failure
//! and repair, session reset (full table), withdrawal and re-announcement,
//! flaps, prefix hijack, route leak, and the worm surge of the PBTS study
//! (random stub prefixes flapping at a given rate).
//!
//! Records ([`trace`]): an MRT BGP4MP_ET trace of what chosen ASes
//! receive (one MRT peer per neighbour), TABLE_DUMP_V2 snapshots, per
//! event convergence counters ([`EventStats`]) and a realism report.
//!
//! Why our own: no maintained crate does timed, message-level BGP
//! propagation with our decision code. SimBGP, C-BGP and BGPSim are
//! separate programs with their own BGP implementations (and mostly
//! unmaintained); driving Tessera's own core is the point, since "tests and
//! simulators drive the same code the daemon runs".

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod engine;
pub mod fast;
pub mod policy;
pub mod scenario;
pub mod trace;

pub use engine::{
    as_path_of, nlri_count, node_addr, node_addr6, EventStats, Observer, RouteInfo, Sim, SimConfig,
};
pub use scenario::{Action, Event, Scenario};
pub use topo::{Graph, NodeId, Role};
