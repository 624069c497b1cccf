//! The 28 events of RFC 4271 §8.1.2 - §8.1.5.
//!
//! Variant names are the RFC names in Rust case. Message events carry what
//! the FSM needs: the decoded OPEN, or the NOTIFICATION to send (built by the
//! runtime from a [`WireError`] and the message body, see the constructors).

use bgp_wire::consts::notify;
use bgp_wire::{NotificationMessage, NotificationView, OpenMessage, WireError};

/// An input to the FSM (RFC 4271 §8.1).
///
/// Timer events (9-13) exist so that every RFC event can be named and
/// injected in tests; a runtime normally lets the FSM fire them itself
/// through [`crate::Fsm::on_timer`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// 1 (§8.1.2).
    ManualStart,
    /// 2.
    ManualStop,
    /// 3.
    AutomaticStart,
    /// 4.
    ManualStartWithPassiveTcpEstablishment,
    /// 5.
    AutomaticStartWithPassiveTcpEstablishment,
    /// 6.
    AutomaticStartWithDampPeerOscillations,
    /// 7.
    AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment,
    /// 8.
    AutomaticStop,
    /// 9 (§8.1.3).
    ConnectRetryTimerExpires,
    /// 10.
    HoldTimerExpires,
    /// 11.
    KeepaliveTimerExpires,
    /// 12.
    DelayOpenTimerExpires,
    /// 13.
    IdleHoldTimerExpires,
    /// 14 (§8.1.4): an incoming connection with a valid source address/port.
    TcpConnectionValid,
    /// 15: an incoming connection request that is not acceptable.
    TcpCrInvalid,
    /// 16: our outgoing connection request completed.
    TcpCrAcked,
    /// 17: an incoming connection (initiated by the peer) completed.
    TcpConnectionConfirmed,
    /// 18: the connection failed or was closed by the peer.
    TcpConnectionFails,
    /// 19 (§8.1.5): a well-framed OPEN (passed `OpenView::validate` or an
    /// equivalent). The FSM checks it against the configuration itself and
    /// turns a failed check into event 22.
    BgpOpen(OpenMessage),
    /// 20: an OPEN while the DelayOpenTimer runs. The FSM derives 19 vs 20
    /// from its own DelayOpenTimer, so either variant may be passed.
    BgpOpenWithDelayOpenTimerRunning(OpenMessage),
    /// 21: a message header error; carries the NOTIFICATION to send.
    BgpHeaderErr(NotificationMessage),
    /// 22: an OPEN message error; carries the NOTIFICATION to send.
    BgpOpenMsgErr(NotificationMessage),
    /// 23: collision detection (§6.8) decided to drop this connection.
    OpenCollisionDump,
    /// 24: a NOTIFICATION with the version error (2/1) was received.
    NotifMsgVerErr,
    /// 25: any other NOTIFICATION was received.
    NotifMsg(NotificationMessage),
    /// 26.
    KeepAliveMsg,
    /// 27: a valid UPDATE was received.
    UpdateMsg,
    /// 28: an UPDATE error that resets the session (RFC 7606 handles the
    /// milder ones without the FSM); carries the NOTIFICATION to send.
    UpdateMsgErr(NotificationMessage),
}

/// [`Event`] without its payload; `Copy`, for logs, transcripts and reasons.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// Event 1, ManualStart.
    ManualStart,
    /// Event 2, ManualStop.
    ManualStop,
    /// Event 3, AutomaticStart.
    AutomaticStart,
    /// Event 4, ManualStart_with_PassiveTcpEstablishment.
    ManualStartWithPassiveTcpEstablishment,
    /// Event 5, AutomaticStart_with_PassiveTcpEstablishment.
    AutomaticStartWithPassiveTcpEstablishment,
    /// Event 6, AutomaticStart_with_DampPeerOscillations.
    AutomaticStartWithDampPeerOscillations,
    /// Event 7, AutomaticStart_with_DampPeerOscillations_and_PassiveTcpEstablishment.
    AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment,
    /// Event 8, AutomaticStop.
    AutomaticStop,
    /// Event 9, ConnectRetryTimer_Expires.
    ConnectRetryTimerExpires,
    /// Event 10, HoldTimer_Expires.
    HoldTimerExpires,
    /// Event 11, KeepaliveTimer_Expires.
    KeepaliveTimerExpires,
    /// Event 12, DelayOpenTimer_Expires.
    DelayOpenTimerExpires,
    /// Event 13, IdleHoldTimer_Expires.
    IdleHoldTimerExpires,
    /// Event 14, TcpConnection_Valid.
    TcpConnectionValid,
    /// Event 15, Tcp_CR_Invalid.
    TcpCrInvalid,
    /// Event 16, Tcp_CR_Acked.
    TcpCrAcked,
    /// Event 17, TcpConnectionConfirmed.
    TcpConnectionConfirmed,
    /// Event 18, TcpConnectionFails.
    TcpConnectionFails,
    /// Event 19, BGPOpen.
    BgpOpen,
    /// Event 20, BGPOpen with DelayOpenTimer running.
    BgpOpenWithDelayOpenTimerRunning,
    /// Event 21, BGPHeaderErr.
    BgpHeaderErr,
    /// Event 22, BGPOpenMsgErr.
    BgpOpenMsgErr,
    /// Event 23, OpenCollisionDump.
    OpenCollisionDump,
    /// Event 24, NotifMsgVerErr.
    NotifMsgVerErr,
    /// Event 25, NotifMsg.
    NotifMsg,
    /// Event 26, KeepAliveMsg.
    KeepAliveMsg,
    /// Event 27, UpdateMsg.
    UpdateMsg,
    /// Event 28, UpdateMsgErr.
    UpdateMsgErr,
}

impl EventKind {
    /// All 28 kinds, in RFC order.
    pub const ALL: [EventKind; 28] = {
        use EventKind::*;
        [
            ManualStart,
            ManualStop,
            AutomaticStart,
            ManualStartWithPassiveTcpEstablishment,
            AutomaticStartWithPassiveTcpEstablishment,
            AutomaticStartWithDampPeerOscillations,
            AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment,
            AutomaticStop,
            ConnectRetryTimerExpires,
            HoldTimerExpires,
            KeepaliveTimerExpires,
            DelayOpenTimerExpires,
            IdleHoldTimerExpires,
            TcpConnectionValid,
            TcpCrInvalid,
            TcpCrAcked,
            TcpConnectionConfirmed,
            TcpConnectionFails,
            BgpOpen,
            BgpOpenWithDelayOpenTimerRunning,
            BgpHeaderErr,
            BgpOpenMsgErr,
            OpenCollisionDump,
            NotifMsgVerErr,
            NotifMsg,
            KeepAliveMsg,
            UpdateMsg,
            UpdateMsgErr,
        ]
    };

    /// The RFC 4271 §8.1 event number (1-28).
    pub fn number(self) -> u8 {
        let mut n = 1u8;
        for k in Self::ALL {
            if k == self {
                return n;
            }
            n = n.saturating_add(1);
        }
        0
    }

    /// Whether this is one of the start events 1 and 3-7.
    pub const fn is_start(self) -> bool {
        use EventKind::*;
        matches!(
            self,
            ManualStart
                | AutomaticStart
                | ManualStartWithPassiveTcpEstablishment
                | AutomaticStartWithPassiveTcpEstablishment
                | AutomaticStartWithDampPeerOscillations
                | AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment
        )
    }

    /// Whether this event reports a received BGP message (events 19-28
    /// except the collision dump); used for the RFC 6608 FSM error subcodes.
    pub const fn is_message(self) -> bool {
        use EventKind::*;
        matches!(
            self,
            BgpOpen
                | BgpOpenWithDelayOpenTimerRunning
                | BgpHeaderErr
                | BgpOpenMsgErr
                | NotifMsgVerErr
                | NotifMsg
                | KeepAliveMsg
                | UpdateMsg
                | UpdateMsgErr
        )
    }
}

impl Event {
    /// The event's number and name, without its payload.
    pub fn kind(&self) -> EventKind {
        use EventKind as K;
        match self {
            Event::ManualStart => K::ManualStart,
            Event::ManualStop => K::ManualStop,
            Event::AutomaticStart => K::AutomaticStart,
            Event::ManualStartWithPassiveTcpEstablishment => {
                K::ManualStartWithPassiveTcpEstablishment
            }
            Event::AutomaticStartWithPassiveTcpEstablishment => {
                K::AutomaticStartWithPassiveTcpEstablishment
            }
            Event::AutomaticStartWithDampPeerOscillations => {
                K::AutomaticStartWithDampPeerOscillations
            }
            Event::AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment => {
                K::AutomaticStartWithDampPeerOscillationsAndPassiveTcpEstablishment
            }
            Event::AutomaticStop => K::AutomaticStop,
            Event::ConnectRetryTimerExpires => K::ConnectRetryTimerExpires,
            Event::HoldTimerExpires => K::HoldTimerExpires,
            Event::KeepaliveTimerExpires => K::KeepaliveTimerExpires,
            Event::DelayOpenTimerExpires => K::DelayOpenTimerExpires,
            Event::IdleHoldTimerExpires => K::IdleHoldTimerExpires,
            Event::TcpConnectionValid => K::TcpConnectionValid,
            Event::TcpCrInvalid => K::TcpCrInvalid,
            Event::TcpCrAcked => K::TcpCrAcked,
            Event::TcpConnectionConfirmed => K::TcpConnectionConfirmed,
            Event::TcpConnectionFails => K::TcpConnectionFails,
            Event::BgpOpen(_) => K::BgpOpen,
            Event::BgpOpenWithDelayOpenTimerRunning(_) => K::BgpOpenWithDelayOpenTimerRunning,
            Event::BgpHeaderErr(_) => K::BgpHeaderErr,
            Event::BgpOpenMsgErr(_) => K::BgpOpenMsgErr,
            Event::OpenCollisionDump => K::OpenCollisionDump,
            Event::NotifMsgVerErr => K::NotifMsgVerErr,
            Event::NotifMsg(_) => K::NotifMsg,
            Event::KeepAliveMsg => K::KeepAliveMsg,
            Event::UpdateMsg => K::UpdateMsg,
            Event::UpdateMsgErr(_) => K::UpdateMsgErr,
        }
    }

    /// Event 21 for a framing error; `body` is what the error's offsets
    /// refer to (see [`WireError::write_data`]).
    pub fn header_err(e: WireError, body: &[u8]) -> Event {
        Event::BgpHeaderErr(e.notification(body))
    }

    /// Event 22 for an OPEN the codec rejected (`OpenView::validate`).
    pub fn open_msg_err(e: WireError, open_body: &[u8]) -> Event {
        Event::BgpOpenMsgErr(e.notification(open_body))
    }

    /// Event 28 for an UPDATE error whose RFC 7606 disposition is a
    /// session reset.
    pub fn update_msg_err(e: WireError, update_body: &[u8]) -> Event {
        Event::UpdateMsgErr(e.notification(update_body))
    }

    /// Event 24 or 25 for a received NOTIFICATION.
    pub fn notification_received(n: NotificationView<'_>) -> Event {
        if n.code == notify::OPEN_MESSAGE_ERROR && n.subcode == notify::UNSUPPORTED_VERSION_NUMBER {
            Event::NotifMsgVerErr
        } else {
            Event::NotifMsg(n.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_numbers() {
        assert_eq!(EventKind::ManualStart.number(), 1);
        assert_eq!(EventKind::AutomaticStop.number(), 8);
        assert_eq!(EventKind::IdleHoldTimerExpires.number(), 13);
        assert_eq!(EventKind::TcpConnectionFails.number(), 18);
        assert_eq!(EventKind::BgpOpen.number(), 19);
        assert_eq!(EventKind::OpenCollisionDump.number(), 23);
        assert_eq!(EventKind::UpdateMsgErr.number(), 28);
        assert_eq!(Event::UpdateMsg.kind(), EventKind::UpdateMsg);
    }

    #[test]
    fn notification_events() {
        let v = NotificationView::parse(&[2, 1, 0, 4]).unwrap();
        assert_eq!(Event::notification_received(v), Event::NotifMsgVerErr);
        let v = NotificationView::parse(&[6, 2]).unwrap();
        assert_eq!(
            Event::notification_received(v),
            Event::NotifMsg(NotificationMessage::new(6, 2, vec![]))
        );
        let e = Event::header_err(WireError::BadMessageType { msg_type: 9 }, &[]);
        assert_eq!(
            e,
            Event::BgpHeaderErr(NotificationMessage::new(1, 3, vec![9]))
        );
    }
}
