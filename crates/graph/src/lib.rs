//! The element graph of Tessera's forwarding plane (after Click, seed 004
//! §2.2.2 and the Click paper it cites).
//!
//! What this crate owns:
//! * [`lang`]: the configuration language (`name :: Class(args);`,
//!   `a [1] -> [0] b;`, `a -> b -> c;`), with `file:line:col` errors.
//! * [`Element`] / [`Factory`]: the element interface. Elements take whole
//!   batches and emit each packet on an output port through [`Output`] or
//!   drop it with a [`DropReason`]: a generic one of the graph's
//!   (unconnected, overflow, unprocessed, no buffer, TX full) or one the
//!   element kind registers by name ([`Element::drop_names`]). The graph is generic over one element
//!   type, which crate `elements` makes an enum of every kind, so dispatch
//!   is a `match` per batch, never a `dyn` call per packet.
//! * [`Graph`]: built once from a config; pending input batches allocated
//!   at build time; push to completion in topological order; per-element
//!   [`ElemStats`] (received, emitted, drops by reason) as plain integers,
//!   because a graph belongs to one core.
//! * [`Runner`]: the run-to-completion driver over any [`pkt::Device`],
//!   polling receivers by weight, with NICBalance's adaptive RX/TX
//!   scheduling ([`balance`], seed 004 §4.4/§4.7).
//! * [`VrScheduler`]: virtual routers (independent graphs with their own
//!   FIBs) sharing a core under proportional-share scheduling with a
//!   batching throttle ([`vr`], seed 002 slides 30-38), and the
//!   [`vr_class::VrClassifier`] that demultiplexes frames to them (VLAN,
//!   ingress port or destination prefix).
//!
//! Limits: push processing only (no Click pull ports: queues and packet
//! schedulers release on tick, at most their BURST per poll); no compound
//! elements; a push output connects to exactly one input (use Tee to
//! copy).

#![warn(missing_docs)]

pub mod balance;
pub mod driver;
pub mod element;
pub mod graph;
pub mod lang;
pub mod vr;
pub mod vr_class;

pub use balance::{BalanceParams, BalanceSpec, BalanceStats};
pub use driver::{BindError, Runner, RunnerStats, RxState};
pub use element::{
    slot_name, BuildError, DeviceRole, DropReason, ElemStats, Element, Factory, Output, PortKind,
    Ports, Verdict,
};
pub use graph::Graph;
pub use lang::{parse, Arg, Config, ConfigError, Pos};
pub use vr::{Charge, Clock, VrConfig, VrScheduler, VrStats};
