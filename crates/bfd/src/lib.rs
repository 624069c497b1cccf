//! Bidirectional Forwarding Detection (RFC 5880), pure: the control packet
//! codec ([`packet`]) and the asynchronous-mode session state machine
//! ([`session`]). Time ([`base::Instant`]) and received packets go in;
//! packets to send, the next timer deadline and state changes come out.
//! Nothing here opens a socket, reads a clock or spawns a thread: the UDP
//! edge (RFC 5881 single hop, TTL 255) is `bgp_speaker::bfd`.
//!
//! Why our own: there is no maintained, dependable BFD implementation on
//! crates.io (the few crates named "bfd" are unfinished experiments without
//! the §6.8.6 reception rules, Poll/Final timer negotiation or tests against
//! other implementations), and BFD's core is small and fully specified, so
//! it is written here from RFC 5880 and checked against FRR's bfdd and
//! BIRD's BFD in `crates/tesserad/tests/bfd_interop.rs`.
//!
//! Not built: authentication (packets with the A bit are parsed and then
//! discarded, as §6.8.6 requires of a session without authentication),
//! Demand mode on our side (the peer's Demand bit is honoured) and the Echo
//! function (we advertise Required Min Echo RX Interval 0).
//!
//! ```
//! use base::Instant;
//! use bfd::session::{Session, SessionConfig};
//! use bfd::State;
//! use std::time::Duration;
//!
//! let cfg = SessionConfig::default();
//! let mut a = Session::new(cfg, 1, 7);
//! let mut b = Session::new(cfg, 2, 8);
//! let (mut now, mut to_a, mut to_b) = (Instant::ZERO, Vec::new(), Vec::new());
//! // Three seconds of a lossless wire, stepped every 10 ms.
//! for _ in 0..300 {
//!     to_b.extend(a.poll(now).send);
//!     to_a.extend(b.poll(now).send);
//!     while !to_a.is_empty() || !to_b.is_empty() {
//!         for p in std::mem::take(&mut to_b) { to_a.extend(b.receive(now, &p).send); }
//!         for p in std::mem::take(&mut to_a) { to_b.extend(a.receive(now, &p).send); }
//!     }
//!     now = now + Duration::from_millis(10);
//! }
//! assert_eq!((a.state(), b.state()), (State::Up, State::Up));
//! ```

#![warn(missing_docs)]

pub mod packet;
pub mod session;

pub use packet::{ControlPacket, DecodeError, Diag, State};
pub use session::{Discard, Session, SessionConfig, Step, Transition};
