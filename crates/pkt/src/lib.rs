//! Packets for Tessera's forwarding plane.
//!
//! What this crate owns:
//! * [`Pool`] and [`Packet`]: per-core pools of fixed-size buffers
//!   (2 KiB, 128 B headroom by default) allocated once; a packet returns
//!   its buffer to its pool when dropped. No allocation per packet after
//!   warm-up (proven by `crates/elements/tests/alloc.rs`).
//! * [`Batch`]: a bounded list of packets (up to [`MAX_BATCH`] = 256),
//!   the unit that devices and graph elements exchange.
//! * [`Device`]: the batch source/sink interface every I/O backend
//!   implements (crate `io` for AF_XDP/AF_PACKET; [`MemDevice`] here).
//! * [`hdr`]: zero-copy views and mutators for Ethernet (+ one VLAN tag),
//!   ARP, IPv4, IPv6, ICMPv4/v6, UDP, TCP; [`checksum`]: RFC 1071 and
//!   RFC 1624 incremental update.
//! * [`pcap`]: classic libpcap reader/writer for tests; behind the
//!   `test-support` feature (dev-dependencies and fuzzing only): `build`,
//!   frame builders for tests and benchmarks, and `alloc_count`, the
//!   counting allocator behind the no-allocation tests.
//!
//! Design: a `Packet` is a 48-byte handle (buffer pointer, pool `Rc`,
//! offsets, annotations), moved, never copied, between elements. Pools are
//! `Rc`-based so packets cannot cross threads: one core owns a pool, its
//! queues and its packets (RouteBricks, seed 003).
//!
//! Limits: no scatter-gather (one buffer per packet, so frames up to
//! `buf_size - headroom`); IPv6 extension headers are not walked; pool
//! exhaustion is reported, never papered over by allocating.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

#[cfg(any(test, feature = "test-support"))]
pub mod alloc_count;
pub mod batch;
#[cfg(any(test, feature = "test-support"))]
pub mod build;
pub mod checksum;
pub mod dev;
pub mod hdr;
pub mod pcap;
pub mod pool;

pub use batch::{Batch, Run, MAX_BATCH};
pub use dev::{DevStats, Device, MemDevice, QueueStats, TxMode};
pub use hdr::ether::Mac;
pub use hdr::HdrError;
pub use pool::{Anno, NoRoom, Packet, Pool, PoolError};
