//! BGP4MP and BGP4MP_ET records (RFC 6396 §4.4, RFC 8050 §3): session state
//! changes and raw BGP messages with the peering they were seen on.

#![deny(clippy::indexing_slicing)]

use crate::error::Malformed;
use crate::header::subtypes as st;
use crate::wire::{put_ip, put_u16, put_u32, Cursor};
use base::{Afi, Asn};
use std::net::IpAddr;

/// The addressing part shared by every BGP4MP subtype.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Peering {
    /// The peer's AS (2 octets on the wire unless the subtype is an AS4 one).
    pub peer_as: Asn,
    /// The collector's own AS, sized as `peer_as`.
    pub local_as: Asn,
    /// The collector's interface index (0 when unknown).
    pub interface_index: u16,
    /// Peer address. Its family gives the AFI field when encoding.
    pub peer_ip: IpAddr,
    /// Local address, of the same family as `peer_ip` (the single AFI field
    /// covers both; a mismatched one is written mapped into that family).
    pub local_ip: IpAddr,
}

impl Peering {
    fn parse(c: &mut Cursor<'_>, as4: bool) -> Result<Peering, Malformed> {
        let (peer_as, local_as) = if as4 {
            (Asn(c.u32("peer AS")?), Asn(c.u32("local AS")?))
        } else {
            (
                Asn(u32::from(c.u16("peer AS")?)),
                Asn(u32::from(c.u16("local AS")?)),
            )
        };
        let interface_index = c.u16("interface index")?;
        let afi = c.u16("AFI")?;
        let v6 = match Afi::from_u16(afi) {
            Afi::Ipv4 => false,
            Afi::Ipv6 => true,
            Afi::Other(_) => return Err(Malformed::Afi { afi }),
        };
        let peer_ip = c.ip(v6, "peer IP")?;
        let local_ip = c.ip(v6, "local IP")?;
        Ok(Peering {
            peer_as,
            local_as,
            interface_index,
            peer_ip,
            local_ip,
        })
    }

    /// The AFI written in the record.
    pub fn afi(&self) -> Afi {
        if self.peer_ip.is_ipv6() {
            Afi::Ipv6
        } else {
            Afi::Ipv4
        }
    }

    fn encode(&self, as4: bool, out: &mut Vec<u8>) {
        if as4 {
            put_u32(out, self.peer_as.0);
            put_u32(out, self.local_as.0);
        } else {
            put_u16(out, self.peer_as.to_u16_or_trans());
            put_u16(out, self.local_as.to_u16_or_trans());
        }
        put_u16(out, self.interface_index);
        let afi = self.afi();
        put_u16(out, afi.to_u16());
        let v6 = afi == Afi::Ipv6;
        put_ip(out, self.peer_ip, v6);
        put_ip(out, self.local_ip, v6);
    }
}

/// True for subtypes with 4-octet AS fields.
pub const fn is_as4_subtype(subtype: u16) -> bool {
    matches!(
        subtype,
        st::MESSAGE_AS4
            | st::STATE_CHANGE_AS4
            | st::MESSAGE_AS4_LOCAL
            | st::MESSAGE_AS4_ADDPATH
            | st::MESSAGE_AS4_LOCAL_ADDPATH
    )
}

/// BGP FSM states as numbered in RFC 6396 §4.4.1.
pub mod state {
    /// Idle (1).
    pub const IDLE: u16 = 1;
    /// Connect (2).
    pub const CONNECT: u16 = 2;
    /// Active (3).
    pub const ACTIVE: u16 = 3;
    /// OpenSent (4).
    pub const OPEN_SENT: u16 = 4;
    /// OpenConfirm (5).
    pub const OPEN_CONFIRM: u16 = 5;
    /// Established (6).
    pub const ESTABLISHED: u16 = 6;
}

/// STATE_CHANGE (0) / STATE_CHANGE_AS4 (5).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StateChange {
    /// STATE_CHANGE or STATE_CHANGE_AS4.
    pub subtype: u16,
    /// Who the session is with.
    pub peering: Peering,
    /// The state left, numbered as in [`state`].
    pub old_state: u16,
    /// The state entered, numbered as in [`state`].
    pub new_state: u16,
}

impl StateChange {
    /// Decodes a state-change body; the whole body must be used.
    pub fn parse(subtype: u16, body: &[u8]) -> Result<Self, Malformed> {
        let mut c = Cursor::new(body);
        let peering = Peering::parse(&mut c, is_as4_subtype(subtype))?;
        let old_state = c.u16("old state")?;
        let new_state = c.u16("new state")?;
        c.finish()?;
        Ok(StateChange {
            subtype,
            peering,
            old_state,
            new_state,
        })
    }

    /// Whether the subtype carries 4-octet AS numbers.
    pub fn is_as4(&self) -> bool {
        is_as4_subtype(self.subtype)
    }

    /// Appends the body (without the MRT header); never fails.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        self.peering.encode(self.is_as4(), out);
        put_u16(out, self.old_state);
        put_u16(out, self.new_state);
        Ok(())
    }
}

/// MESSAGE, MESSAGE_AS4, their _LOCAL forms and the RFC 8050 _ADDPATH forms.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Message<'a> {
    /// One of the MESSAGE subtypes (1, 4, 6..=11).
    pub subtype: u16,
    /// Who the message was exchanged with.
    pub peering: Peering,
    /// The whole BGP message, 16-octet marker included (RFC 4271 §4.1).
    pub message: &'a [u8],
}

impl<'a> Message<'a> {
    /// Decodes the peering; the rest of the body is the BGP message, not checked here.
    pub fn parse(subtype: u16, body: &'a [u8]) -> Result<Self, Malformed> {
        let mut c = Cursor::new(body);
        let peering = Peering::parse(&mut c, is_as4_subtype(subtype))?;
        Ok(Message {
            subtype,
            peering,
            message: c.rest(),
        })
    }

    /// True when AS numbers are 4 octets in the record (and, by convention,
    /// in the message's AS_PATH).
    pub fn is_as4(&self) -> bool {
        is_as4_subtype(self.subtype)
    }

    /// True for messages sent by the local speaker (_LOCAL subtypes).
    pub fn is_local(&self) -> bool {
        matches!(
            self.subtype,
            st::MESSAGE_LOCAL
                | st::MESSAGE_AS4_LOCAL
                | st::MESSAGE_LOCAL_ADDPATH
                | st::MESSAGE_AS4_LOCAL_ADDPATH
        )
    }

    /// True when NLRI in the message carry ADD-PATH path identifiers
    /// (RFC 8050 §3).
    pub fn is_add_path(&self) -> bool {
        matches!(self.subtype, 8..=11)
    }

    /// The BGP message type octet, if the message is long enough to hold one.
    pub fn bgp_type(&self) -> Option<u8> {
        self.message.get(18).copied()
    }

    /// Appends the body (without the MRT header); never fails.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        self.peering.encode(self.is_as4(), out);
        out.extend_from_slice(self.message);
        Ok(())
    }
}

/// True for BGP4MP subtypes this crate decodes.
pub const fn is_known_subtype(subtype: u16) -> bool {
    matches!(subtype, 0 | 1 | 4..=11)
}

/// True for the state-change subtypes.
pub const fn is_state_change_subtype(subtype: u16) -> bool {
    matches!(subtype, st::STATE_CHANGE | st::STATE_CHANGE_AS4)
}
