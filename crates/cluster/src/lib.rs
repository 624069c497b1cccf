//! The cluster fabric of Tessera: several servers acting as one router
//! (RouteBricks, seed 003; Ye's cluster router, seed 004; spec in
//! `../shared/docs/cluster-spec.md`, wire format in
//! `docs/cluster-fabric.md`). Pure parts only: no sockets, no clocks, no
//! threads. Time is an argument ([`base::Instant`]), randomness a seeded
//! generator.
//!
//! * [`geneve`]: the GENEVE header and option TLVs (RFC 8926), the
//!   fabric's encapsulation over UDP port 6081, so tshark, switches and
//!   ECMP hashing understand it.
//! * [`fabric`]: our GENEVE option (experimental class) and the two
//!   messages built on it: packed data and BECN. Zero-copy decode that
//!   never panics (fuzzed: `fuzz/fuzz_targets/cluster_fabric.rs`), and an
//!   in-place writer.
//! * [`pack`]: IBPack's queues and opportunistic packing.
//! * [`lb`]: direct, VLB and Direct VLB with flow affinity, and the
//!   membership of live nodes.
//!
//! Why our own code: GENEVE crates exist (e.g. in packet-parsing
//! libraries), but none we can depend on decodes an option of ours with
//! a per-frame table, and the packing and balancing are this project's
//! algorithms (seeds 003/004), not a library's.
//!
//! ```
//! use cluster::fabric::{decode, Message, Meta, PacketWriter, HDR_MAX};
//! let mut buf = vec![0u8; HDR_MAX + 1500];
//! let mut w = PacketWriter::new(&mut buf, 8, 1472);
//! assert!(w.push(1, 0, &[0xaa; 60]));
//! assert!(w.push(2, 3, &[0xbb; 64]));
//! let r = w.finish(0, Meta { egress: 2, source: 0, flags: 0 }).unwrap();
//! let Ok(Message::Data(d)) = decode(&buf[r]) else { panic!() };
//! let ports: Vec<u8> = d.frames().map(|f| f.port).collect();
//! assert_eq!(ports, [1, 2]);
//! ```

#![warn(missing_docs)]
#![deny(clippy::indexing_slicing)]

pub mod fabric;
pub mod geneve;
pub mod lb;
pub mod pack;

/// Why a fabric datagram was refused. Each is a drop reason counted by
/// the receive element.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FabricError {
    /// Shorter than the GENEVE base header.
    Short,
    /// GENEVE version other than 0 (RFC 8926 §3.4: dropped).
    BadVersion,
    /// Opt Len runs past the datagram.
    OptionsOverrun,
    /// An option's Length runs past the options.
    OptionOverrun,
    /// A critical option we do not know (RFC 8926 §3.5: dropped).
    UnknownCritical,
    /// No cluster option.
    NoClusterOption,
    /// Two cluster options.
    DuplicateOption,
    /// The cluster option is shorter than its fixed part.
    BadOption,
    /// Unknown version of the cluster option.
    BadOptionVersion,
    /// Unknown message kind.
    BadKind,
    /// Frame count zero, above the maximum, or not matching the option.
    BadCount,
    /// Frame lengths do not add up to the payload.
    LengthMismatch,
    /// A data packet whose Protocol Type is not Ethernet (0x6558).
    BadProtocol,
}

impl std::fmt::Display for FabricError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            FabricError::Short => "shorter than a GENEVE header",
            FabricError::BadVersion => "GENEVE version is not 0",
            FabricError::OptionsOverrun => "GENEVE options run past the datagram",
            FabricError::OptionOverrun => "a GENEVE option runs past the options",
            FabricError::UnknownCritical => "unknown critical GENEVE option",
            FabricError::NoClusterOption => "no cluster option",
            FabricError::DuplicateOption => "two cluster options",
            FabricError::BadOption => "cluster option too short",
            FabricError::BadOptionVersion => "unknown cluster option version",
            FabricError::BadKind => "unknown cluster message kind",
            FabricError::BadCount => "bad frame count",
            FabricError::LengthMismatch => "frame lengths do not match the payload",
            FabricError::BadProtocol => "data packet is not Ethernet",
        };
        f.write_str(s)
    }
}

impl std::error::Error for FabricError {}
