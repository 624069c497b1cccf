//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::time::Duration;

use base::{AfiSafi, Asn, Instant};
use bgp_fsm::{Action, Event, Fsm, Jitter, SessionConfig, State};
use bgp_wire::{Capability, NotificationMessage, OpenMessage};

pub const LOCAL_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const PEER_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

pub fn cfg() -> SessionConfig {
    SessionConfig::new(Asn(65001), Some(Asn(65002)), LOCAL_ID)
}

pub fn peer_open(hold: u16) -> OpenMessage {
    OpenMessage::new(
        Asn(65002),
        hold,
        PEER_ID,
        vec![
            Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
            Capability::FourOctetAsn(Asn(65002)),
        ],
    )
}

pub fn bad_as_open() -> OpenMessage {
    OpenMessage::new(Asn(65099), 90, PEER_ID, vec![])
}

/// An FSM and a virtual clock.
pub struct Harness {
    pub fsm: Fsm,
    pub now: Instant,
}

impl Harness {
    pub fn new(c: SessionConfig) -> Harness {
        Harness {
            fsm: Fsm::new(c),
            now: Instant::from_secs(1000),
        }
    }

    pub fn ev(&mut self, e: Event) -> Vec<Action> {
        let mut out = Vec::new();
        self.fsm.handle(self.now, Jitter::NONE, e, &mut out);
        out
    }

    /// Moves the clock by `d`, firing timers at their deadlines.
    pub fn advance(&mut self, d: Duration) -> Vec<Action> {
        let end = self.now + d;
        let mut out = Vec::new();
        while let Some(t) = self.fsm.next_deadline().filter(|t| *t <= end) {
            self.now = self.now.max(t);
            self.fsm.on_timer(self.now, Jitter::NONE, &mut out);
        }
        self.now = end;
        out
    }

    pub fn state(&self) -> State {
        self.fsm.state()
    }

    /// Idle -> Connect -> OpenSent.
    pub fn reach_open_sent(&mut self) {
        self.ev(Event::ManualStart);
        self.ev(Event::TcpCrAcked);
        assert_eq!(self.state(), State::OpenSent);
    }

    pub fn reach_open_confirm(&mut self, hold: u16) {
        self.reach_open_sent();
        let a = self.ev(Event::BgpOpen(peer_open(hold)));
        assert_eq!(a, vec![Action::SendKeepalive]);
        assert_eq!(self.state(), State::OpenConfirm);
    }

    pub fn reach_established(&mut self, hold: u16) {
        self.reach_open_confirm(hold);
        let a = self.ev(Event::KeepAliveMsg);
        assert!(matches!(a.as_slice(), [Action::SessionEstablished(_)]));
        assert_eq!(self.state(), State::Established);
    }
}

pub fn notif(a: &[Action]) -> Option<(u8, u8)> {
    a.iter().find_map(|x| match x {
        Action::SendNotification(n) => Some((n.code, n.subcode)),
        _ => None,
    })
}

pub fn n(code: u8, sub: u8) -> NotificationMessage {
    NotificationMessage::new(code, sub, Vec::new())
}
