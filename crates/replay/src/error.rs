//! Errors of the replay client and the sink: small `Copy` values that say
//! which peer and which step failed, printable as one line.

use std::fmt;
use std::io;

/// The step of a session that was under way when something failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Bind,
    Connect,
    /// Sending our OPEN or waiting for the peer's.
    Open,
    /// Waiting for the KEEPALIVE that confirms our OPEN (RFC 4271 §8.2.2,
    /// OpenConfirm).
    OpenConfirm,
    /// Writing UPDATEs and End-of-RIB.
    Send,
    /// Keeping the established session up.
    Hold,
    Accept,
    /// Reading the input file.
    Input,
    /// The monitor session.
    Monitor,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Bind => "binding the source address",
            Phase::Connect => "connecting",
            Phase::Open => "exchanging OPEN",
            Phase::OpenConfirm => "waiting for KEEPALIVE after OPEN",
            Phase::Send => "sending UPDATEs",
            Phase::Hold => "holding the session",
            Phase::Accept => "accepting a session",
            Phase::Input => "reading the input",
            Phase::Monitor => "monitor session",
        })
    }
}

/// Why a session (or the whole replay) failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// A socket call failed.
    Io { phase: Phase, kind: io::ErrorKind },
    /// A bounded wait ran out.
    Timeout { phase: Phase, secs: u32 },
    /// The peer closed the TCP connection.
    Closed { phase: Phase },
    /// The peer sent a NOTIFICATION (RFC 4271 §4.5).
    Notification { phase: Phase, code: u8, subcode: u8 },
    /// The peer sent bytes that are not a valid BGP message.
    Malformed { phase: Phase, code: u8, subcode: u8 },
    /// The peer sent a message type that is wrong at this step.
    Unexpected { phase: Phase, msg_type: u8 },
    /// The peer's OPEN names another AS than configured.
    WrongPeerAs { expected: u32, got: u32 },
    /// The peer did not advertise the 4-octet AS capability (RFC 6793),
    /// which the pre-encoded UPDATEs assume.
    NoFourOctetAs,
    /// The peer did not advertise IPv4 unicast (RFC 4760).
    NoIpv4Unicast,
    /// A message could not be encoded (a bug in the workload builder).
    Encode,
    /// Arguments that cannot work.
    Config(&'static str),
    /// A feature of the full replay client that is not written yet.
    Unsupported(&'static str),
    /// The MRT input is damaged beyond the records already read.
    Mrt(mrt::MrtError),
    /// The input cannot be replayed as asked.
    Input(&'static str),
}

impl ReplayError {
    pub fn io(phase: Phase, e: &io::Error) -> ReplayError {
        match e.kind() {
            // Read/write timeouts surface as WouldBlock or TimedOut
            // depending on the platform.
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                ReplayError::Timeout { phase, secs: 0 }
            }
            io::ErrorKind::UnexpectedEof => ReplayError::Closed { phase },
            kind => ReplayError::Io { phase, kind },
        }
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Io { phase, kind } => write!(f, "{phase}: {kind}"),
            ReplayError::Timeout { phase, secs: 0 } => write!(f, "{phase}: timed out"),
            ReplayError::Timeout { phase, secs } => write!(f, "{phase}: timed out after {secs} s"),
            ReplayError::Closed { phase } => write!(f, "{phase}: peer closed the connection"),
            ReplayError::Notification {
                phase,
                code,
                subcode,
            } => write!(
                f,
                "{phase}: peer sent NOTIFICATION {code}/{subcode} ({})",
                notification_name(*code, *subcode)
            ),
            ReplayError::Malformed {
                phase,
                code,
                subcode,
            } => write!(
                f,
                "{phase}: malformed message from peer (error {code}/{subcode})"
            ),
            ReplayError::Unexpected { phase, msg_type } => {
                write!(f, "{phase}: unexpected message type {msg_type}")
            }
            ReplayError::WrongPeerAs { expected, got } => {
                write!(f, "peer OPEN says AS {got}, expected AS {expected}")
            }
            ReplayError::NoFourOctetAs => f.write_str(
                "peer did not advertise 4-octet AS numbers (RFC 6793); replay needs them",
            ),
            ReplayError::NoIpv4Unicast => {
                f.write_str("peer did not advertise IPv4 unicast (multiprotocol capability)")
            }
            ReplayError::Encode => f.write_str("could not encode a message (workload bug)"),
            ReplayError::Config(what) => write!(f, "bad configuration: {what}"),
            ReplayError::Unsupported(what) => write!(f, "not supported yet: {what}"),
            ReplayError::Mrt(e) => write!(f, "MRT input: {e}"),
            ReplayError::Input(what) => write!(f, "input: {what}"),
        }
    }
}

impl std::error::Error for ReplayError {}

/// Names for the NOTIFICATION codes an operator meets when a session to a
/// DUT fails (RFC 4271 §4.5, RFC 4486 for Cease subcodes).
fn notification_name(code: u8, subcode: u8) -> &'static str {
    match (code, subcode) {
        (1, _) => "message header error",
        (2, 2) => "OPEN: bad peer AS",
        (2, 3) => "OPEN: bad BGP identifier",
        (2, 6) => "OPEN: unacceptable hold time",
        (2, 7) => "OPEN: unsupported capability",
        (2, _) => "OPEN message error",
        (3, _) => "UPDATE message error",
        (4, _) => "hold timer expired",
        (5, _) => "finite state machine error",
        (6, 1) => "cease: maximum prefixes reached",
        (6, 2) => "cease: administrative shutdown",
        (6, 3) => "cease: peer de-configured",
        (6, 4) => "cease: administrative reset",
        (6, 5) => "cease: connection rejected (is this source address configured as a neighbor?)",
        (6, 7) => "cease: connection collision resolution",
        (6, 8) => "cease: out of resources",
        (6, _) => "cease",
        _ => "unknown",
    }
}
