//! What the FSM asks the runtime to do.

use bgp_wire::NotificationMessage;

use crate::event::EventKind;
use crate::negotiate::Negotiated;

/// Why an Established session went down (carried by
/// [`Action::SessionDown`]) or why the FSM last went to Idle
/// ([`crate::Fsm::last_down_reason`]). Small and `Copy`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DownReason {
    /// Event 2: the operator stopped the session.
    ManualStop,
    /// Event 8: the runtime stopped the session on its own.
    AutomaticStop,
    /// We sent 4/0.
    HoldTimerExpired,
    /// Event 18: the TCP connection failed or was closed by the peer.
    TcpConnectionFails,
    /// The peer sent this NOTIFICATION (events 24, 25).
    NotificationReceived {
        /// NOTIFICATION error code.
        code: u8,
        /// NOTIFICATION error subcode.
        subcode: u8,
    },
    /// We sent a header (1/x), OPEN (2/x) or UPDATE (3/x) error.
    MessageError {
        /// NOTIFICATION error code.
        code: u8,
        /// NOTIFICATION error subcode.
        subcode: u8,
    },
    /// Event 23 (§6.8); we sent Cease 6/7.
    CollisionDump,
    /// The event was unexpected in the state (RFC 4271 "any other event").
    /// In OpenSent, OpenConfirm and Established we sent 5/x.
    FsmError(EventKind),
}

/// One thing for the runtime to do, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Open a TCP connection to the peer (keep listening as well unless
    /// [`crate::Fsm::accepts_incoming`] says otherwise).
    InitiateTcpConnection,
    /// Close the connection (and abort a pending connect).
    DropTcpConnection,
    /// Send our OPEN ([`crate::Fsm::open_message`]).
    SendOpen,
    /// Send a KEEPALIVE.
    SendKeepalive,
    /// Send this NOTIFICATION (before dropping the connection, which always
    /// follows as its own action).
    SendNotification(NotificationMessage),
    /// The session is up; UPDATEs may flow. Boxed to keep `Action` small.
    SessionEstablished(Box<Negotiated>),
    /// The Established session is gone: delete the routes learned from it
    /// (RFC 4271 §8.2.2 "deletes all routes associated with this
    /// connection").
    SessionDown(DownReason),
    /// The UPDATE behind event 27 is acceptable: hand it to the RIB.
    ProcessUpdate,
}

impl Action {
    /// A short, stable one-line form for logs and golden transcripts.
    pub fn describe(&self) -> String {
        match self {
            Action::InitiateTcpConnection => "InitiateTcpConnection".into(),
            Action::DropTcpConnection => "DropTcpConnection".into(),
            Action::SendOpen => "SendOpen".into(),
            Action::SendKeepalive => "SendKeepalive".into(),
            Action::SendNotification(n) => {
                let mut s = format!("SendNotification({}/{}", n.code, n.subcode);
                if !n.data.is_empty() {
                    s.push(' ');
                    for b in &n.data {
                        s.push_str(&format!("{b:02x}"));
                    }
                }
                s.push(')');
                s
            }
            Action::SessionEstablished(n) => format!(
                "SessionEstablished(as={} hold={} keepalive={} families={})",
                n.peer_asn,
                n.hold_time,
                n.keepalive_interval,
                n.families
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Action::SessionDown(r) => format!("SessionDown({r:?})"),
            Action::ProcessUpdate => "ProcessUpdate".into(),
        }
    }
}
