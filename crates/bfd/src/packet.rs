//! The BFD Control packet (RFC 5880 §4.1 mandatory section, §4.2-4.4
//! authentication sections) and the checks of §6.8.6 that need no session
//! state. [`ControlPacket::decode`] never panics and never allocates.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |Vers |  Diag   |Sta|P|F|C|A|D|M|  Detect Mult  |    Length     |
//! |                       My Discriminator                        |
//! |                      Your Discriminator                       |
//! |                    Desired Min TX Interval                    |
//! |                   Required Min RX Interval                    |
//! |                 Required Min Echo RX Interval                 |
//! ```

/// The protocol version we speak (§4.1).
pub const VERSION: u8 = 1;
/// Length of the mandatory section, bytes.
pub const MANDATORY_LEN: usize = 24;
/// The UDP destination port of single-hop control packets (RFC 5881 §4).
pub const PORT: u16 = 3784;

/// `bfd.SessionState` / the packet's `Sta` field (§4.1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// 0.
    AdminDown,
    /// 1.
    Down,
    /// 2.
    Init,
    /// 3.
    Up,
}

impl State {
    /// The 2-bit code.
    pub fn code(self) -> u8 {
        match self {
            State::AdminDown => 0,
            State::Down => 1,
            State::Init => 2,
            State::Up => 3,
        }
    }
    /// From the 2-bit code (higher bits ignored).
    pub fn from_code(c: u8) -> State {
        match c & 3 {
            0 => State::AdminDown,
            1 => State::Down,
            2 => State::Init,
            _ => State::Up,
        }
    }
    /// The name used in logs and `tessera show bfd`.
    pub fn name(self) -> &'static str {
        match self {
            State::AdminDown => "AdminDown",
            State::Down => "Down",
            State::Init => "Init",
            State::Up => "Up",
        }
    }
}

/// The diagnostic code (§4.1 `Diag`): why the session last left Up.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Diag {
    /// 0: no diagnostic.
    None,
    /// 1: Control Detection Time Expired.
    DetectionTimeExpired,
    /// 2: Echo Function Failed.
    EchoFailed,
    /// 3: Neighbor Signaled Session Down.
    NeighborDown,
    /// 4: Forwarding Plane Reset.
    ForwardingReset,
    /// 5: Path Down.
    PathDown,
    /// 6: Concatenated Path Down.
    ConcatenatedPathDown,
    /// 7: Administratively Down.
    AdminDown,
    /// 8: Reverse Concatenated Path Down.
    ReverseConcatenatedPathDown,
    /// 9-31: reserved; kept as received.
    Reserved(u8),
}

impl Diag {
    /// The 5-bit code.
    pub fn code(self) -> u8 {
        match self {
            Diag::None => 0,
            Diag::DetectionTimeExpired => 1,
            Diag::EchoFailed => 2,
            Diag::NeighborDown => 3,
            Diag::ForwardingReset => 4,
            Diag::PathDown => 5,
            Diag::ConcatenatedPathDown => 6,
            Diag::AdminDown => 7,
            Diag::ReverseConcatenatedPathDown => 8,
            Diag::Reserved(c) => c & 31,
        }
    }
    /// From the 5-bit code (higher bits ignored).
    pub fn from_code(c: u8) -> Diag {
        match c & 31 {
            0 => Diag::None,
            1 => Diag::DetectionTimeExpired,
            2 => Diag::EchoFailed,
            3 => Diag::NeighborDown,
            4 => Diag::ForwardingReset,
            5 => Diag::PathDown,
            6 => Diag::ConcatenatedPathDown,
            7 => Diag::AdminDown,
            8 => Diag::ReverseConcatenatedPathDown,
            c => Diag::Reserved(c),
        }
    }
    /// Short text for logs and `tessera show bfd`.
    pub fn name(self) -> &'static str {
        match self {
            Diag::None => "none",
            Diag::DetectionTimeExpired => "detection-time-expired",
            Diag::EchoFailed => "echo-failed",
            Diag::NeighborDown => "neighbor-down",
            Diag::ForwardingReset => "forwarding-reset",
            Diag::PathDown => "path-down",
            Diag::ConcatenatedPathDown => "concatenated-path-down",
            Diag::AdminDown => "admin-down",
            Diag::ReverseConcatenatedPathDown => "reverse-concatenated-path-down",
            Diag::Reserved(_) => "reserved",
        }
    }
}

/// The authentication section's type (§4.1 `Auth Type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AuthType {
    /// 1: Simple Password (§4.2), 1 to 16 bytes of password.
    SimplePassword,
    /// 2: Keyed MD5 (§4.3).
    KeyedMd5,
    /// 3: Meticulous Keyed MD5.
    MeticulousKeyedMd5,
    /// 4: Keyed SHA1 (§4.4).
    KeyedSha1,
    /// 5: Meticulous Keyed SHA1.
    MeticulousKeyedSha1,
}

/// A parsed authentication section: its type, key and sequence number;
/// the password or digest itself is not kept (we authenticate nothing).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Auth {
    /// The type.
    pub kind: AuthType,
    /// Auth Key ID.
    pub key_id: u8,
    /// Sequence Number (0 for Simple Password).
    pub seq: u32,
}

/// Why a received packet was discarded before any session saw it: the
/// session-independent checks of §6.8.6 and the section lengths of §4.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer than 24 bytes.
    Short,
    /// The version is not 1.
    Version(u8),
    /// `Length` is below the minimum (24, or 26 with the A bit).
    LengthTooSmall(u8),
    /// `Length` is larger than the payload.
    LengthBeyondPayload(u8),
    /// `Detect Mult` is zero.
    ZeroDetectMult,
    /// The Multipoint (M) bit is set.
    Multipoint,
    /// `My Discriminator` is zero.
    ZeroMyDiscriminator,
    /// `Your Discriminator` is zero while `State` is Init or Up.
    ZeroYourDiscriminator,
    /// The authentication type is 0 or above 5.
    AuthType(u8),
    /// The authentication section's length is wrong for its type, or does
    /// not fit in `Length`.
    AuthLength(u8),
}

impl DecodeError {
    /// Short text for logs and counters.
    pub fn name(self) -> &'static str {
        match self {
            DecodeError::Short => "short",
            DecodeError::Version(_) => "version",
            DecodeError::LengthTooSmall(_) => "length-too-small",
            DecodeError::LengthBeyondPayload(_) => "length-beyond-payload",
            DecodeError::ZeroDetectMult => "zero-detect-mult",
            DecodeError::Multipoint => "multipoint",
            DecodeError::ZeroMyDiscriminator => "zero-my-discriminator",
            DecodeError::ZeroYourDiscriminator => "zero-your-discriminator",
            DecodeError::AuthType(_) => "auth-type",
            DecodeError::AuthLength(_) => "auth-length",
        }
    }
}

/// One control packet, every field of the mandatory section as a value;
/// intervals in microseconds as on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ControlPacket {
    /// `Diag`.
    pub diag: Diag,
    /// `Sta`.
    pub state: State,
    /// Poll (P).
    pub poll: bool,
    /// Final (F).
    pub final_: bool,
    /// Control Plane Independent (C).
    pub cpi: bool,
    /// Demand (D).
    pub demand: bool,
    /// `Detect Mult`.
    pub detect_mult: u8,
    /// `My Discriminator`.
    pub my_disc: u32,
    /// `Your Discriminator`.
    pub your_disc: u32,
    /// `Desired Min TX Interval`, µs.
    pub desired_min_tx_us: u32,
    /// `Required Min RX Interval`, µs.
    pub required_min_rx_us: u32,
    /// `Required Min Echo RX Interval`, µs.
    pub required_min_echo_rx_us: u32,
    /// The authentication section, when the A bit is set.
    pub auth: Option<Auth>,
}

fn be32(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

impl ControlPacket {
    /// Parses a UDP payload and applies the session-independent checks of
    /// §6.8.6 (version, length, detect multiplier, multipoint,
    /// discriminators). Bytes after `Length` are ignored.
    pub fn decode(b: &[u8]) -> Result<ControlPacket, DecodeError> {
        let h: [u8; MANDATORY_LEN] = match b.get(..MANDATORY_LEN) {
            Some(s) => {
                let mut h = [0u8; MANDATORY_LEN];
                h.copy_from_slice(s);
                h
            }
            None => return Err(DecodeError::Short),
        };
        let version = h[0] >> 5;
        if version != VERSION {
            return Err(DecodeError::Version(version));
        }
        let flags = h[1];
        let auth_bit = flags & 0x04 != 0;
        let len = h[3];
        let min = if auth_bit {
            MANDATORY_LEN + 2
        } else {
            MANDATORY_LEN
        };
        if usize::from(len) < min {
            return Err(DecodeError::LengthTooSmall(len));
        }
        if usize::from(len) > b.len() {
            return Err(DecodeError::LengthBeyondPayload(len));
        }
        let detect_mult = h[2];
        if detect_mult == 0 {
            return Err(DecodeError::ZeroDetectMult);
        }
        if flags & 0x01 != 0 {
            return Err(DecodeError::Multipoint);
        }
        let state = State::from_code(flags >> 6);
        let my_disc = be32(&h, 4);
        let your_disc = be32(&h, 8);
        if my_disc == 0 {
            return Err(DecodeError::ZeroMyDiscriminator);
        }
        if your_disc == 0 && matches!(state, State::Init | State::Up) {
            return Err(DecodeError::ZeroYourDiscriminator);
        }
        let auth = if auth_bit {
            let sec = b.get(MANDATORY_LEN..usize::from(len)).unwrap_or(&[]);
            Some(decode_auth(sec)?)
        } else {
            None
        };
        Ok(ControlPacket {
            diag: Diag::from_code(h[0]),
            state,
            poll: flags & 0x20 != 0,
            final_: flags & 0x10 != 0,
            cpi: flags & 0x08 != 0,
            demand: flags & 0x02 != 0,
            detect_mult,
            my_disc,
            your_disc,
            desired_min_tx_us: be32(&h, 12),
            required_min_rx_us: be32(&h, 16),
            required_min_echo_rx_us: be32(&h, 20),
            auth,
        })
    }

    /// The 24-byte mandatory section. The A bit is never set: we send no
    /// authentication.
    pub fn encode(&self) -> [u8; MANDATORY_LEN] {
        let mut b = [0u8; MANDATORY_LEN];
        b[0] = (VERSION << 5) | self.diag.code();
        b[1] = (self.state.code() << 6)
            | (u8::from(self.poll) << 5)
            | (u8::from(self.final_) << 4)
            | (u8::from(self.cpi) << 3)
            | (u8::from(self.demand) << 1);
        b[2] = self.detect_mult;
        b[3] = MANDATORY_LEN as u8;
        b[4..8].copy_from_slice(&self.my_disc.to_be_bytes());
        b[8..12].copy_from_slice(&self.your_disc.to_be_bytes());
        b[12..16].copy_from_slice(&self.desired_min_tx_us.to_be_bytes());
        b[16..20].copy_from_slice(&self.required_min_rx_us.to_be_bytes());
        b[20..24].copy_from_slice(&self.required_min_echo_rx_us.to_be_bytes());
        b
    }
}

/// §4.2-4.4: type, length, key id, and the fixed lengths of each type.
/// `sec` is the section as bounded by the packet's `Length`.
fn decode_auth(sec: &[u8]) -> Result<Auth, DecodeError> {
    let (Some(&t), Some(&l)) = (sec.first(), sec.get(1)) else {
        return Err(DecodeError::AuthLength(0));
    };
    let kind = match t {
        1 => AuthType::SimplePassword,
        2 => AuthType::KeyedMd5,
        3 => AuthType::MeticulousKeyedMd5,
        4 => AuthType::KeyedSha1,
        5 => AuthType::MeticulousKeyedSha1,
        t => return Err(DecodeError::AuthType(t)),
    };
    let ok = match kind {
        // Type, Len, Key ID, 1 to 16 bytes of password.
        AuthType::SimplePassword => (4..=19).contains(&l),
        // Type, Len, Key ID, Reserved, Sequence, 16-byte digest.
        AuthType::KeyedMd5 | AuthType::MeticulousKeyedMd5 => l == 24,
        // ... 20-byte hash.
        AuthType::KeyedSha1 | AuthType::MeticulousKeyedSha1 => l == 28,
    };
    if !ok || usize::from(l) > sec.len() {
        return Err(DecodeError::AuthLength(l));
    }
    let key_id = sec.get(2).copied().unwrap_or(0);
    let seq = match kind {
        AuthType::SimplePassword => 0,
        _ => be32(sec, 4),
    };
    Ok(Auth { kind, key_id, seq })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt() -> ControlPacket {
        ControlPacket {
            diag: Diag::NeighborDown,
            state: State::Up,
            poll: true,
            final_: false,
            cpi: true,
            demand: false,
            detect_mult: 3,
            my_disc: 0x0102_0304,
            your_disc: 9,
            desired_min_tx_us: 300_000,
            required_min_rx_us: 10_000,
            required_min_echo_rx_us: 0,
            auth: None,
        }
    }

    #[test]
    fn round_trip() {
        let p = pkt();
        let b = p.encode();
        assert_eq!(b[0], 0x23);
        assert_eq!(b[1], 0xe8);
        assert_eq!(b[3], 24);
        assert_eq!(ControlPacket::decode(&b), Ok(p));
    }

    #[test]
    fn auth_sections() {
        let mut b = pkt().encode().to_vec();
        b[1] |= 0x04;
        // Simple password "abc": type 1, len 6, key 5.
        b.extend_from_slice(&[1, 6, 5, b'a', b'b', b'c']);
        b[3] = b.len() as u8;
        let a = ControlPacket::decode(&b).unwrap().auth.unwrap();
        assert_eq!((a.kind, a.key_id, a.seq), (AuthType::SimplePassword, 5, 0));
        // Keyed SHA1 with a wrong length.
        let mut c = pkt().encode().to_vec();
        c[1] |= 0x04;
        c.extend_from_slice(&[4, 24, 1, 0]);
        c.extend_from_slice(&[0; 20]);
        c[3] = c.len() as u8;
        assert_eq!(ControlPacket::decode(&c), Err(DecodeError::AuthLength(24)));
        // Unknown type.
        c[24] = 9;
        assert_eq!(ControlPacket::decode(&c), Err(DecodeError::AuthType(9)));
        // A bit with only the mandatory section.
        let mut d = pkt().encode();
        d[1] |= 0x04;
        assert_eq!(
            ControlPacket::decode(&d),
            Err(DecodeError::LengthTooSmall(24))
        );
    }
}
