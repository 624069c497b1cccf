//! The FIB: from best routes to forwarding tables (Linux only for the
//! dataplane and kernel parts).
//!
//! What this crate owns:
//! - [`table`]: [`table::FibTables`], what forwarding cores read: the IPv4
//!   and IPv6 Poptrie tables of crate `lpm` (prefix -> [`lpm::NextHop`]),
//!   the adjacency table (`NextHop` -> output port, gateway, MAC) and the
//!   learned neighbours. [`table::FibDelta`] is one change to them; the
//!   whole struct is published by `lpm::publish` (left-right), so a batch
//!   of route and adjacency changes becomes visible to readers at once and
//!   forwarding never pauses or takes a lock.
//! - [`resolve`]: [`resolve::Fib`], the control side, owned by one thread:
//!   it takes best-route changes ([`resolve::Change`], what tesserad's
//!   `bgp_speaker::fib_feed` sends), resolves each BGP next hop to
//!   (port, neighbour) through the connected prefixes of the dataplane's
//!   ports, or recursively through another route when the next hop is not
//!   on-link, keeps the refcounted next-hop table, and emits deltas.
//! - [`dataplane`]: the runtime that starts one worker per core plus the
//!   FIB thread, over `io` devices (AF_XDP, AF_PACKET). Each worker runs
//!   the built-in graph ([`dataplane::graph_engine`]), a Click-style graph
//!   of crate `elements` (IPv4 and IPv6, ICMP echo for the router's
//!   addresses, ICMP time exceeded, ARP and NDP in `EtherRewrite`) whose
//!   lookups read the published tables and adjacencies in one read
//!   section per batch ([`dataplane::LiveTable`]), in one of three forms
//!   ([`dataplane::Engine`]): by default (`Auto`) with IPv4 forwarding
//!   fused into the classifier's header check and one `elements::Ip4Forward`
//!   (ADR 0003) wherever that is equivalent (not with IPsec or the
//!   cluster fabric, which keep the chain); `Graph`, the unfused chain;
//!   `Fast`, the fused path, refused where it is not equivalent.
//! - [`kernel`]: optional export of resolved routes into the Linux kernel
//!   with raw rtnetlink, in batches (like BIRD's `kernel` protocol).
//! - [`xdp_mirror`]: the FIB mirrored into the XDP fast path's kernel
//!   LPM maps and ECMP member array (`[dataplane] xdp_fastpath`,
//!   `io::xdp::fast`): a pure
//!   `FastMirror` from the same deltas the tables absorb to map changes,
//!   applied by the FIB thread after each publication.
//! - [`feed`]: the wire format of best-route changes on the local Unix
//!   socket between tesserad and a separate dataplane process.
//!
//! Threads: one FIB thread (the only writer of the tables), one worker per
//! core (readers; each owns its queues of every port). Workers send learned
//! neighbours to the FIB thread over per-core SPSC rings (`io::rss::spsc`),
//! so even ARP learning has no shared lock. With the graph engine each
//! core's `EtherRewrite` keeps its own neighbour table, pushes what it
//! learns on that ring, and looks a neighbour up in the published tables
//! before asking again (`elements::NeighShare`): an ARP reply that a hash
//! fanout hands to another core still resolves the asking core.
//!
//! Limits: neither engine sends
//! ICMP unreachables or redirects (no-route packets are dropped and
//! counted); both engines copy each frame into a pool buffer and back
//! (crate `io`'s devices do; sharing the pool as UMEM is future work);
//! an IPv4 route with an IPv6 next hop (RFC 5549) is not supported; recursive
//! resolution goes through at most a few levels and is recomputed per
//! batch for the routes that need it. Multipath (ECMP): a change with
//! further next hops becomes a next-hop group, and the lookups pick one
//! member per flow by the 5-tuple hash (equal weights only). A route whose next hop is on no port's
//! connected prefix and under no other route is kept but not installed
//! ([`FibStats::unresolved`]): typically an eBGP peer advertising its own
//! session address on a link that is not a dataplane port.
//!
//! Proof and measurements: `crates/tesserad/tests/dataplane_bird.rs`
//! (network namespaces, AF_XDP and AF_PACKET, routes from BIRD or fed
//! directly, traffic moved live; with the graph engine also ping6 over a
//! fed IPv6 route, ping to the router, TTL 1 answered with time exceeded,
//! two cores; the fast engine through its IPv4 part); `tests/graph_engine.rs` (the graph
//! engine over in-memory ports: IPv4/IPv6, ARP/NDP, ICMP, live route
//! move, neighbours across cores, no allocation per packet after
//! warm-up); `benches/churn.rs` (the full table
//! churned through [`Fib::apply`] and the left-right publication while a
//! core's graph (`Fast`) forwards, counting packets lost to updates).

#![cfg(target_os = "linux")]

pub mod dataplane;
pub mod feed;
pub mod kernel;
pub mod resolve;
pub mod table;
pub mod xdp_mirror;

pub use resolve::{Change, Fib, FibStats, PortSpec};
pub use table::{Adjacency, FibDelta, FibTables, Hop};
