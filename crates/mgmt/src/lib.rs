//! Management plane of tesserad.
//!
//! - [`proto`]: the CLI protocol, one JSON request line and one JSON
//!   response line over a Unix stream socket, versioned.
//! - [`server`]: [`server::serve_unix`] runs the socket on its own std
//!   threads and hands each request to a [`server::ControlHandler`] that the
//!   daemon implements.
//! - [`client`]: [`client::request`], what `tessera show ...` calls.
//! - [`render`]: BIRD-like text for every response.
//! - [`metrics`]: a Prometheus text-format (0.0.4) writer, a lock-free
//!   latency histogram, and [`metrics::MetricsSource`]; the HTTP listener
//!   serving it is the `web` crate.
//!
//! This crate knows nothing of BGP internals: the daemon fills the plain
//! data types of [`proto`], which keeps the protocol stable while the RIB
//! changes.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod client;
mod deadline;
mod line;
pub mod metrics;
pub mod proto;
pub mod render;
pub mod server;

pub use server::ServerHandle;
