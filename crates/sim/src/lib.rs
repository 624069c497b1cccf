//! Synthetic BGP workloads.
//!
//! Everything here is deterministic for a given seed, so a benchmark or a test
//! can regenerate the same trace anywhere. The distributions are measured from
//! real tables (see [`dist`]), so the synthetic data looks like the Internet
//! to code that cares about prefix lengths and AS-path lengths.

pub mod dist;
pub mod rng;
pub mod synth;

pub use rng::Rng;
pub use synth::{EntryBuf, PeerSpec, RouteView, SynthConfig, SynthRib};
