//! Packet I/O for Tessera's forwarding plane (Linux only).
//!
//! What this crate owns:
//! - [`xdp`]: AF_XDP in copy mode. The XSKMAP, a six-instruction XDP
//!   program and its attachment are made with raw `bpf(2)` calls (no libbpf,
//!   libxdp or clang); each [`xdp::XskSocket`] has its own UMEM and its
//!   fill, completion, RX and TX rings.
//! - [`xdp::fast`]: the XDP fast path, IPv4 forwarded inside the XDP hook
//!   (LPM_TRIE lookup, RFC 1624 TTL/checksum, MAC rewrite, DEVMAP
//!   redirect) with everything else redirected to the AF_XDP sockets. Its
//!   program is built by `xdp::asm`, our own small eBPF builder: there is
//!   no maintained pure-Rust eBPF assembler, and the build must not need
//!   clang/libbpf (or `aya`'s clang + bpf-linker step).
//! - [`packet`]: AF_PACKET with TPACKET_V3 RX and TX rings, optionally in a
//!   `PACKET_FANOUT` group, the fallback for devices without XDP.
//! - [`pcap`]: pcap files as RX and TX devices for golden tests (the file
//!   format itself is crate `pkt`'s).
//! - [`fabric`]: the cluster fabric's UDP socket as a device (datagrams to
//!   the node in `anno.nh`).
//! - [`rss`]: a software RSS stage (5-tuple hash to per-core SPSC rings)
//!   for devices with a single RX queue.
//!
//! The small static IPv4 forwarder that drives these devices in tests and
//! the veth benchmark is the `fwd` example (`examples/fwd/forwarder.rs`),
//! not part of the library: the router's one forwarding path is the element
//! graph (crates `elements`, `fib`).
//!
//! Design: one device value per (interface, queue), owned by one core, so
//! the fast path has no locks and no shared atomics; counters are plain
//! per-device integers. Polling takes at most `kp` frames per queue per
//! round and kicks TX after `kn` frames (RouteBricks' batch sizes,
//! [`BatchSizes`]). Every device implements `pkt::Device`, the batch
//! source/sink the element graph drives (one trait, one `pkt::Batch`, one
//! `pkt::DevStats`): received frames are copied from the kernel ring into
//! the core's `pkt::Pool`, sent packets into the TX ring ([`device`]).
//!
//! Multi-queue: one XSKMAP slot and one socket per RX queue, each owned by
//! one core; a core that serves several queues of one interface reads them
//! through one [`xdp::XskQueues`] (one epoll descriptor to sleep on,
//! sending on its first queue), and every queue's counters come out
//! through `pkt::Device::queue_stats` (`tests/multiqueue.rs`: a
//! multi-queue veth; frames sent on TX queue k reach the XSK of RX queue
//! k, none lost; flows spread by the peer's TX hash and each kept on one
//! queue, one pinned thread per queue). On veth that needs native XDP
//! ([`xdp::XdpMode::Driver`]): with generic XDP veth delivers every frame
//! on queue 0 (kernel 6.18, also with GRO on), so only the first core
//! would receive.
//!
//! Limits: copy mode only (zero-copy does not work on veth); one UMEM per
//! socket, so forwarding between sockets copies each frame once; no
//! multi-buffer (jumbo) frames; the kernel's L4 checksum offload must be off
//! on peers whose frames we forward (a veth frame may carry a partial
//! checksum); no IPv6 in the test forwarder.

#![cfg(target_os = "linux")]

pub mod device;
pub mod error;
pub mod fabric;
pub mod packet;
pub mod pcap;
pub mod rss;
pub mod sys;
pub mod xdp;

pub use device::BatchSizes;
pub use error::{IoError, Op};
