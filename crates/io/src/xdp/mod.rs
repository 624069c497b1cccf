//! AF_XDP in copy mode: [`XdpProgram`] (map, program, link) per interface
//! and [`XskSocket`] per (interface, queue).

mod bpf;
mod ring;
mod socket;

pub use bpf::{XdpMode, XdpProgram};
pub use socket::{XdpKernelStats, XskConfig, XskSocket};
