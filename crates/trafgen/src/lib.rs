//! Tessera's traffic generator for the cluster experiments (issue 14,
//! `tessera cluster bench`; `tessera trafgen` runs one by hand).
//!
//! Pure core, thin edge:
//! * [`payload`]: the frame format (Ethernet/IPv4/UDP, then an 18-byte
//!   payload {magic, flow id, sequence number, send timestamp}, so 64-byte
//!   frames carry it), the per-flow frame templates and the decoder of
//!   received frames (fuzzed: `fuzz/fuzz_targets/trafgen_payload.rs`).
//! * [`account`]: per-flow loss, reordering (RouteBricks' definition: a
//!   packet whose sequence number is below the highest seen in its flow),
//!   duplicates, one-way latency histogram, receive counts per time bin
//!   and the outage (loss window, recovery time) they show; the pacer.
//! * [`report`]: one run's counts as JSON, and the sum over hosts.
//! * [`edge`] (Linux): the sender and receiver on one AF_PACKET socket of
//!   crate `io` (the dataplane's TPACKET_V3 rings, not a second
//!   implementation), sleeping in `ppoll` when nothing is due.
//!
//! Why our own: the generators we could use (pktgen, TRex, MoonGen,
//! iperf) either need kernel modules or DPDK NICs, or do not count
//! sequence numbers per flow over many 5-tuples at 64 B; the accounting
//! the experiments need (RouteBricks' reordering metric, a loss window
//! from receive bins, latency from an in-packet timestamp) is small.
//!
//! Limits: IPv4 only; the sequence number is 32 bits per flow (wraps after
//! 4 G packets of one flow); latency is one-way on one machine's
//! CLOCK_MONOTONIC, so sender and receiver must share a kernel (network
//! namespaces do), not separate servers.

pub mod account;
#[cfg(target_os = "linux")]
pub mod edge;
pub mod payload;
pub mod report;

pub use account::{outage, Histogram, Outage, Pacer, RxStats};
pub use payload::{parse, Payload};
pub use report::Report;
