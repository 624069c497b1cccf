//! AF_XDP in copy mode: [`XdpProgram`] (map, program, link) per interface
//! and [`XskSocket`] per (interface, queue); the optional XDP fast path
//! ([`fast`]) that forwards IPv4 in the kernel's hook and hands the rest to
//! the sockets.

mod asm;
mod bpf;
pub mod fast;
mod ring;
mod socket;

pub use bpf::{XdpMode, XdpProgram};
pub use socket::{XdpKernelStats, XskConfig, XskSocket};
