//! The MRT common header (RFC 6396 §2) and the extended-timestamp variant
//! (RFC 6396 §3).

#![deny(clippy::indexing_slicing)]

/// MRT type codes (RFC 6396 §4, IANA "MRT Types").
pub mod types {
    /// Legacy TABLE_DUMP (RFC 6396 §4.2).
    pub const TABLE_DUMP: u16 = 12;
    /// TABLE_DUMP_V2 (RFC 6396 §4.3).
    pub const TABLE_DUMP_V2: u16 = 13;
    /// BGP4MP (RFC 6396 §4.4).
    pub const BGP4MP: u16 = 16;
    /// BGP4MP with microsecond timestamps (RFC 6396 §3, §4.4).
    pub const BGP4MP_ET: u16 = 17;
}

/// Subtype codes, per type.
pub mod subtypes {
    /// TABLE_DUMP (RFC 6396 §4.2).
    pub const AFI_IPV4: u16 = 1;
    /// TABLE_DUMP with IPv6 entries.
    pub const AFI_IPV6: u16 = 2;

    /// TABLE_DUMP_V2 (RFC 6396 §4.3, RFC 6397, RFC 8050 §4).
    pub const PEER_INDEX_TABLE: u16 = 1;
    /// RIB_IPV4_UNICAST.
    pub const RIB_IPV4_UNICAST: u16 = 2;
    /// RIB_IPV4_MULTICAST.
    pub const RIB_IPV4_MULTICAST: u16 = 3;
    /// RIB_IPV6_UNICAST.
    pub const RIB_IPV6_UNICAST: u16 = 4;
    /// RIB_IPV6_MULTICAST.
    pub const RIB_IPV6_MULTICAST: u16 = 5;
    /// RIB_GENERIC: any AFI/SAFI, NLRI carried raw.
    pub const RIB_GENERIC: u16 = 6;
    /// GEO_PEER_TABLE (RFC 6397).
    pub const GEO_PEER_TABLE: u16 = 7;
    /// RIB_IPV4_UNICAST_ADDPATH (RFC 8050).
    pub const RIB_IPV4_UNICAST_ADDPATH: u16 = 8;
    /// RIB_IPV4_MULTICAST_ADDPATH (RFC 8050).
    pub const RIB_IPV4_MULTICAST_ADDPATH: u16 = 9;
    /// RIB_IPV6_UNICAST_ADDPATH (RFC 8050).
    pub const RIB_IPV6_UNICAST_ADDPATH: u16 = 10;
    /// RIB_IPV6_MULTICAST_ADDPATH (RFC 8050).
    pub const RIB_IPV6_MULTICAST_ADDPATH: u16 = 11;
    /// RIB_GENERIC_ADDPATH (RFC 8050).
    pub const RIB_GENERIC_ADDPATH: u16 = 12;

    /// BGP4MP / BGP4MP_ET (RFC 6396 §4.4, RFC 8050 §3).
    pub const STATE_CHANGE: u16 = 0;
    /// BGP4MP_MESSAGE: a message with 2-octet ASNs in the peering.
    pub const MESSAGE: u16 = 1;
    /// BGP4MP_MESSAGE_AS4: a message with 4-octet ASNs in the peering.
    pub const MESSAGE_AS4: u16 = 4;
    /// BGP4MP_STATE_CHANGE_AS4.
    pub const STATE_CHANGE_AS4: u16 = 5;
    /// BGP4MP_MESSAGE_LOCAL: a message the collector sent.
    pub const MESSAGE_LOCAL: u16 = 6;
    /// BGP4MP_MESSAGE_AS4_LOCAL.
    pub const MESSAGE_AS4_LOCAL: u16 = 7;
    /// BGP4MP_MESSAGE_ADDPATH (RFC 8050).
    pub const MESSAGE_ADDPATH: u16 = 8;
    /// BGP4MP_MESSAGE_AS4_ADDPATH (RFC 8050).
    pub const MESSAGE_AS4_ADDPATH: u16 = 9;
    /// BGP4MP_MESSAGE_LOCAL_ADDPATH (RFC 8050).
    pub const MESSAGE_LOCAL_ADDPATH: u16 = 10;
    /// BGP4MP_MESSAGE_AS4_LOCAL_ADDPATH (RFC 8050).
    pub const MESSAGE_AS4_LOCAL_ADDPATH: u16 = 11;
}

/// Size of the common header on the wire.
pub const HEADER_LEN: usize = 12;

/// An MRT record header.
///
/// `length` is the header's length field as on the wire: for `_ET` types it
/// counts the 4-byte microsecond field too (RFC 6396 §3), so the body that
/// follows the microseconds is `length - 4` bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// Seconds since the Unix epoch.
    pub timestamp: u32,
    /// Microseconds, present for extended-timestamp (`_ET`) types.
    pub microseconds: Option<u32>,
    /// The MRT type (see [`types`]).
    pub mrt_type: u16,
    /// The subtype, whose meaning depends on the type (see [`subtypes`]).
    pub subtype: u16,
    /// Octets after the header, the microsecond field of `_ET` types included.
    pub length: u32,
}

impl Header {
    /// Builds a header; `length` is filled in by the encoder.
    pub const fn new(
        timestamp: u32,
        microseconds: Option<u32>,
        mrt_type: u16,
        subtype: u16,
    ) -> Self {
        Header {
            timestamp,
            microseconds,
            mrt_type,
            subtype,
            length: 0,
        }
    }

    /// Decodes the 12 fixed octets. Microseconds are read separately, from
    /// the start of the body, when [`Header::is_extended`] is true.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Header {
        let [t0, t1, t2, t3, y0, y1, s0, s1, l0, l1, l2, l3] = *b;
        Header {
            timestamp: u32::from_be_bytes([t0, t1, t2, t3]),
            microseconds: None,
            mrt_type: u16::from_be_bytes([y0, y1]),
            subtype: u16::from_be_bytes([s0, s1]),
            length: u32::from_be_bytes([l0, l1, l2, l3]),
        }
    }

    /// True for types that carry a microsecond field (RFC 6396 §3: the
    /// `_ET` types; only BGP4MP_ET is in use).
    pub const fn is_extended(mrt_type: u16) -> bool {
        mrt_type == types::BGP4MP_ET
    }

    /// The timestamp as seconds with a fraction.
    pub fn time_f64(&self) -> f64 {
        f64::from(self.timestamp) + f64::from(self.microseconds.unwrap_or(0)) / 1e6
    }

    /// The header octets for a body of `body_len` octets (12, or 16 with
    /// microseconds, which count in the length), and how many are used.
    /// Fails when the body does not fit the 32-bit length field.
    pub fn wire_bytes(&self, body_len: usize) -> std::io::Result<([u8; 16], usize)> {
        let extra = if self.microseconds.is_some() { 4 } else { 0 };
        let len = body_len
            .checked_add(extra)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| crate::wire::too_long("MRT record body"))?;
        let mut b = [0u8; 16];
        let us = self.microseconds.unwrap_or(0);
        for (dst, src) in b.iter_mut().zip(
            self.timestamp
                .to_be_bytes()
                .into_iter()
                .chain(self.mrt_type.to_be_bytes())
                .chain(self.subtype.to_be_bytes())
                .chain(len.to_be_bytes())
                .chain(us.to_be_bytes()),
        ) {
            *dst = src;
        }
        Ok((b, HEADER_LEN + extra))
    }

    /// Appends the header for a body of `body_len` octets.
    pub fn encode(&self, body_len: usize, out: &mut Vec<u8>) -> std::io::Result<()> {
        let (b, n) = self.wire_bytes(body_len)?;
        out.extend_from_slice(b.get(..n).unwrap_or(&b));
        Ok(())
    }
}
