//! tesserad's gRPC API: GoBGP's `apipb.GobgpApi` service, so that the
//! `gobgp` CLI and GoBGP's client libraries drive tesserad unchanged.
//!
//! The `.proto` files in `proto/` are ours, written from GoBGP's published
//! interface (gobgp 3.10, the version Debian ships): the same package,
//! message names and field numbers, only the messages served here. They
//! are compiled by `tonic-build` (with Debian's `protoc`); `tonic` and
//! `prost` are the maintained gRPC stack, so only the mapping is ours.
//!
//! Every answer goes through [`bgp_speaker::daemon::control::Control`],
//! the same closures on the RIB threads that the CLI socket runs: there is
//! no second way into the RIB. Long answers are cut into RIB calls of
//! [`BATCH`] prefixes, so a full-table `ListPath` never holds a RIB
//! thread for more than one batch and streams one destination per
//! message (never one huge message). Served:
//!
//! | RPC | what it does |
//! |---|---|
//! | `GetBgp` | AS and router id |
//! | `ListPeer` | the neighbours (`show protocols all`) |
//! | `ListPath` | global (Loc-RIB, all paths) or adj-in (one neighbour's paths, after import policy); prefix filters exact / longer / shorter |
//! | `GetTable` | destinations and paths of those tables |
//! | `AddPath`, `DeletePath`, `AddPathStream` | originate or withdraw IPv4/IPv6 unicast routes, as local routes beside the configured statics |
//! | `EnablePeer`, `DisablePeer`, `ShutdownPeer`, `ResetPeer` | the CLI's `enable`, `disable`, `restart`, `reload in` |
//! | `AddPeer`, `DeletePeer` | a neighbour added or removed at run time, through the daemon's reload path ([`Control::change_peer`]) |
//! | `WatchEvent` | best-path changes (table filter `BEST`) and neighbour state changes |
//!
//! Not supported yet, answered with an error that says so: adj-out and
//! VRF tables, soft reset out, and every RPC not in the proto
//! (UNIMPLEMENTED).
//!
//! Transport: a Unix socket (mode 0600), or TCP with TLS (tonic's `tls`
//! feature: rustls, the maintained TLS stack; [`tls_config`]) and an
//! optional required client certificate, or plain TCP with
//! `insecure = true`.

// tonic's service trait fixes `Result<_, tonic::Status>`, a large error
// type; boxing it in our helpers would only add conversions.
#![allow(clippy::result_large_err)]

pub mod apipb {
    //! The generated messages and service.
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    // Generated from proto/*.proto by tonic-build and checked in, so that
    // building needs no protoc; `tests/generated.rs` fails when its stamp
    // no longer matches the .proto files or the code, and with
    // `--features regen` and TESSERA_REGEN_PROTO=1 rewrites it.
    include!("gen/apipb.rs");
}
#[cfg(feature = "server")]
mod calls;
pub mod convert;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod service;
#[cfg(feature = "server")]
mod watch;

#[cfg(feature = "server")]
pub use server::{serve, tls_config, MAX_MESSAGE};
#[cfg(feature = "server")]
pub use service::{Service, BATCH};
