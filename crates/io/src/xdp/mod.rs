//! AF_XDP in copy mode: [`XdpProgram`] (map, program, link) per interface
//! and [`XskSocket`] per (interface, queue), [`XskQueues`] for the
//! queues of one interface that one core serves; the optional XDP fast path
//! ([`fast`]) that forwards IPv4 and IPv6 in the kernel's hook and hands the rest to
//! the sockets.

mod asm;
mod bpf;
pub mod fast;
mod queues;
mod ring;
mod socket;

pub use bpf::{XdpMode, XdpProgram};
pub use queues::XskQueues;
pub use socket::{XdpKernelStats, XskConfig, XskSocket};
