//! The runtime half of the BGP speaker: sockets, threads and timers around
//! the pure `bgp-fsm` and `bgp-rib` cores.
//!
//! Owns: session tasks (TCP, FSM driving, framing, RFC 7606 decoding) on a
//! tokio runtime ([`sess`]); the RIB threads ([`rib`]) and how UPDATEs
//! reach them ([`pipeline`]: `sequential`, one RIB thread; `sharded`,
//! the default, S threads each owning the prefixes `bgp_rib::shard_for`
//! gives it, fed by the sessions' split batches ([`msg::RibSender`]);
//! `per-peer` and `worker-pool`, a shared RIB of locked stripes applied
//! by each session's own thread or by a pool of workers ([`striped`]));
//! MRT dumps; the best-route feed for a forwarding plane ([`fib_feed`]);
//! the daemon wiring, CLI and `/metrics` ([`daemon`]); per-stage latency
//! histograms ([`stages`]). The in-process pipeline for tests and
//! benchmarks is the dev-only `testkit` crate. The RIB logic itself is the
//! pure `bgp-core` crate: a RIB thread runs one `bgp_core::RibCore` and
//! carries out its outbox ([`rib`]).
//!
//! Design: in `sequential` and `sharded` the RIB is never locked. Each RIB
//! thread owns its state and is fed by bounded channels carrying batches;
//! control requests are closures run on every RIB thread (or, striped, on
//! every stripe under its lock) and merged. Cross-shard order (End-of-RIB after
//! the whole initial table, BoRR/EoRR around a re-sent table) is kept by a
//! per-marker barrier under a per-session lock taken only while markers are
//! owed; max-prefix counts are summed in a per-peer atomic.
//!
//! Limits: the shard and stripe counts are fixed at start; every shard keeps its
//! own attribute interner and encodes its own UPDATEs, so an UPDATE whose
//! prefixes span S shards is applied, interned and re-encoded S times
//! (memory and CPU per route grow with S, see docs/BENCHMARKS.md
//! "Pipeline modes"). `bgp_rib::shard_for` keeps a /20 (IPv6: /32) block
//! in one shard, so the adjacent prefixes a peer packs into one UPDATE
//! mostly stay together and that cost is paid only at block edges.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod bfd;
pub mod bmp;
pub mod daemon;
pub mod fib_feed;
pub mod mrt_dump;
pub mod msg;
pub mod nht;
pub mod pipeline;
pub mod rib;
pub mod rib_dump;
pub mod rpki;
pub mod sess;
pub mod stages;
pub mod striped;
pub mod view_feed;
