//! Legacy TABLE_DUMP records (MRT type 12, RFC 6396 §4.2): one RIB entry per
//! record, with 2-octet AS numbers in the peer field and in the AS_PATH.

#![deny(clippy::indexing_slicing)]

use crate::error::Malformed;
use crate::header::subtypes;
use crate::wire::{len16, put_ip, put_u16, put_u32, Cursor};
use base::{Asn, Prefix, Prefix4, Prefix6};
use std::net::IpAddr;

/// A TABLE_DUMP record (subtype AFI_IPv4 = 1 or AFI_IPv6 = 2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TableDump<'a> {
    /// View number (normally 0).
    pub view: u16,
    /// Sequence number (wraps at 65535).
    pub sequence: u16,
    /// The prefix; the address is kept in full, as carried (4 or 16 octets).
    pub prefix: Prefix,
    /// Status octet (unused, 1 by convention).
    pub status: u8,
    /// Time the route was originated (seconds since the epoch).
    pub originated_time: u32,
    /// Peer address; of the same family as the prefix (the subtype fixes both).
    pub peer_ip: IpAddr,
    /// Peer AS, a 2-octet field on the wire.
    pub peer_as: Asn,
    /// Path attributes, raw, with 2-octet AS_PATH encoding.
    pub attributes: &'a [u8],
}

impl<'a> TableDump<'a> {
    /// Decodes the body of a TABLE_DUMP record of the given subtype
    /// (callers dispatch only subtypes 1 and 2 here).
    pub fn parse(subtype: u16, body: &'a [u8]) -> Result<Self, Malformed> {
        let v6 = subtype == subtypes::AFI_IPV6;
        let mut c = Cursor::new(body);
        let view = c.u16("view")?;
        let sequence = c.u16("sequence")?;
        let prefix = if v6 {
            let a = u128::from_be_bytes(c.array("prefix")?);
            let len = c.u8("prefix length")?;
            Prefix::V6(Prefix6::new(a, len).map_err(|_| Malformed::PrefixLength { len })?)
        } else {
            let a = u32::from_be_bytes(c.array("prefix")?);
            let len = c.u8("prefix length")?;
            Prefix::V4(Prefix4::new(a, len).map_err(|_| Malformed::PrefixLength { len })?)
        };
        let status = c.u8("status")?;
        let originated_time = c.u32("originated time")?;
        let peer_ip = c.ip(v6, "peer IP")?;
        let peer_as = Asn(u32::from(c.u16("peer AS")?));
        let alen = c.u16("attribute length")?;
        let attributes = c.bytes(usize::from(alen), "attributes")?;
        c.finish()?;
        Ok(TableDump {
            view,
            sequence,
            prefix,
            status,
            originated_time,
            peer_ip,
            peer_as,
            attributes,
        })
    }

    /// The subtype this entry encodes as (from the prefix family).
    pub fn subtype(&self) -> u16 {
        match self.prefix {
            Prefix::V4(_) => subtypes::AFI_IPV4,
            Prefix::V6(_) => subtypes::AFI_IPV6,
        }
    }

    /// Appends the body. The peer AS is written as AS_TRANS when it does not
    /// fit 2 octets (RFC 6793 §9).
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        let alen = len16(self.attributes.len(), "attributes")?;
        put_u16(out, self.view);
        put_u16(out, self.sequence);
        let v6 = match self.prefix {
            Prefix::V4(p) => {
                put_u32(out, p.addr_bits());
                false
            }
            Prefix::V6(p) => {
                out.extend_from_slice(&p.addr_bits().to_be_bytes());
                true
            }
        };
        out.push(self.prefix.len());
        out.push(self.status);
        put_u32(out, self.originated_time);
        put_ip(out, self.peer_ip, v6);
        put_u16(out, self.peer_as.to_u16_or_trans());
        put_u16(out, alen);
        out.extend_from_slice(self.attributes);
        Ok(())
    }
}
