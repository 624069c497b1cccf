//! The BGP-4 finite state machine of RFC 4271 §8, pure.
//!
//! Model: **event in, actions out**. The FSM never touches a socket, never
//! reads a clock, never spawns a thread and has no random generator: the
//! runtime passes the current [`base::Instant`] and a [`Jitter`] value
//! into every call, and performs the returned [`Action`]s. An event that is
//! invalid in the current state never yields an `Err`: the RFC tables turn
//! it into a NOTIFICATION and Idle (or ignore it).
//!
//! Timers are deadlines kept inside the FSM: sleep until
//! [`Fsm::next_deadline`], then call [`Fsm::on_timer`], which fires the
//! expired timers as RFC events 9-13.
//!
//! ```
//! use std::net::Ipv4Addr;
//! use base::{Asn, Instant};
//! use bgp_fsm::{Action, Event, Fsm, Jitter, SessionConfig, State};
//!
//! let cfg = SessionConfig::new(Asn(65001), Some(Asn(65002)), Ipv4Addr::new(10, 0, 0, 1));
//! let mut fsm = Fsm::new(cfg);
//! let mut out = Vec::new();
//! fsm.handle(Instant::ZERO, Jitter::NONE, Event::ManualStart, &mut out);
//! assert_eq!(out, vec![Action::InitiateTcpConnection]);
//! assert_eq!(fsm.state(), State::Connect);
//! out.clear();
//! fsm.handle(Instant::from_secs(1), Jitter::NONE, Event::TcpCrAcked, &mut out);
//! assert_eq!(out, vec![Action::SendOpen]);
//! assert_eq!(fsm.state(), State::OpenSent);
//! ```
//!
//! OPEN checks and capability negotiation live in [`negotiate`](mod@negotiate); collision
//! resolution (§6.8) in [`collision`].

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod action;
pub mod collision;
mod config;
mod event;
mod fsm;
pub mod negotiate;
mod states;
mod timers;

pub use action::{Action, DownReason};
pub use config::{ConnectionMode, DampConfig, SessionConfig};
pub use event::{Event, EventKind};
pub use fsm::{Fsm, State};
pub use negotiate::{negotiate, Negotiated, OpenError};
pub use timers::{Jitter, Timer};
