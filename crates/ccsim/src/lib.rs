//! A deterministic discrete-event simulator of a cluster router's internal
//! congestion (Ye 2010 ch. 5-7; `../shared/docs/cluster-spec.md` §4),
//! running the controllers of crate `cc` unchanged.
//!
//! Model ([`model`]): nodes, each with an ingress side (one queue per
//! source, pulled into the fabric in rounds, through a [`cc::Quantum`]
//! weight or a [`cc::TokenBucket`] rate) and an egress side (the fabric
//! receive ring, an optional CPU that splits its time between receiving
//! and transmitting by quotas, the output queue, and the port). The fabric
//! is a fixed delay and never the bottleneck (as in the thesis: 10 Gbps
//! CSMA or IB). Packets are 64 B and counted, not materialised; they move
//! in runs of (source, count). Signals (BECNs, prices) are events that
//! reach the ingress one fabric delay after the egress decides.
//!
//! Time advances in service ticks (10 µs by default, 1/100 of the control
//! interval); the controllers see exactly what they would see per
//! interval in a real element. A run is a function of its [`Config`] and
//! seed.
//!
//! [`scenario`] holds the named reproductions (`tessera cc sim NAME`).
//! Written here because no maintained Rust crate simulates this model
//! (packet-level simulators such as ns-3 are C++ and far larger).
//!
//! ```
//! use ccsim::{Config, Control, NodeCfg, Pattern, Sim, SourceCfg};
//!
//! let mut cfg = Config::new(50_000_000, Control::None); // 50 ms
//! cfg.nodes = vec![NodeCfg::port(1e6), NodeCfg::port(1e6)];
//! cfg.sources.push(SourceCfg { node: 0, dest: 1, rate_pps: 5e5, pattern: Pattern::Constant, start_ns: 0 });
//! let report = Sim::new(cfg).unwrap().run(&mut |_| {});
//! assert!((report.summary.egress_tx_pps[1] - 5e5).abs() < 1e3);
//! ```

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod engine;
pub mod model;
pub mod report;
pub mod scenario;

pub use engine::Sim;
pub use model::{Config, Control, Cpu, NodeCfg, Pattern, SourceCfg};
pub use report::{jain, max_min, Counters, Report, Summary};
