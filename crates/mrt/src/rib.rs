//! TABLE_DUMP_V2 RIB records (RFC 6396 §4.3.2-§4.3.4) and their RFC 8050
//! ADD-PATH variants, which add a 4-octet path identifier to each entry.

#![deny(clippy::indexing_slicing)]

use crate::error::Malformed;
use crate::header::subtypes as st;
use crate::wire::{len16, put_nlri_prefix, put_u16, put_u32, Cursor};
use base::{Afi, AfiSafi, Prefix, Prefix4, Prefix6, Safi};

/// One RIB entry (RFC 6396 §4.3.4; RFC 8050 §4.1 for `path_id`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RibEntry<'a> {
    /// Index into the PEER_INDEX_TABLE.
    pub peer_index: u16,
    /// When the route was received, seconds since the Unix epoch.
    pub originated_time: u32,
    /// Path identifier, present in ADD-PATH subtypes.
    pub path_id: Option<u32>,
    /// Path attributes, raw. AS_PATH uses 4-octet ASNs, and MP_REACH_NLRI is
    /// abbreviated to next-hop length + next hop (RFC 6396 §4.3.4).
    pub attributes: &'a [u8],
}

impl<'a> RibEntry<'a> {
    #[inline]
    fn parse(c: &mut Cursor<'a>, add_path: bool) -> Result<Self, Malformed> {
        let peer_index = c.u16("peer index")?;
        let originated_time = c.u32("originated time")?;
        let path_id = if add_path {
            Some(c.u32("path identifier")?)
        } else {
            None
        };
        let alen = c.u16("attribute length")?;
        let attributes = c.bytes(usize::from(alen), "attributes")?;
        Ok(RibEntry {
            peer_index,
            originated_time,
            path_id,
            attributes,
        })
    }

    /// Appends the entry. With `add_path` a missing path id is written as 0;
    /// without it the path id is dropped.
    pub fn encode(&self, add_path: bool, out: &mut Vec<u8>) -> std::io::Result<()> {
        let alen = len16(self.attributes.len(), "attributes")?;
        put_u16(out, self.peer_index);
        put_u32(out, self.originated_time);
        if add_path {
            put_u32(out, self.path_id.unwrap_or(0));
        }
        put_u16(out, alen);
        out.extend_from_slice(self.attributes);
        Ok(())
    }
}

/// Lazy iterator over the (already validated) entries of a RIB record.
#[derive(Clone, Debug)]
pub struct RibEntries<'a> {
    c: Cursor<'a>,
    left: u16,
    add_path: bool,
}

impl<'a> Iterator for RibEntries<'a> {
    type Item = RibEntry<'a>;
    #[inline]
    fn next(&mut self) -> Option<RibEntry<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        RibEntry::parse(&mut self.c, self.add_path).ok()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::from(self.left), Some(usize::from(self.left)))
    }
}

impl ExactSizeIterator for RibEntries<'_> {}

/// Walks `count` entries to check that they fill `c` exactly.
fn validate_entries(c: &mut Cursor<'_>, count: u16, add_path: bool) -> Result<(), Malformed> {
    for _ in 0..count {
        RibEntry::parse(c, add_path)?;
    }
    c.finish()
}

fn encode_entries<'e>(
    entries: impl ExactSizeIterator<Item = RibEntry<'e>>,
    add_path: bool,
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    put_u16(out, len16(entries.len(), "RIB entry count")?);
    for e in entries {
        e.encode(add_path, out)?;
    }
    Ok(())
}

/// True for the RFC 8050 ADD-PATH RIB subtypes (8..=12).
pub const fn is_add_path_subtype(subtype: u16) -> bool {
    matches!(subtype, 8..=12)
}

/// An AFI/SAFI-specific RIB record: RIB_IPV4_UNICAST, RIB_IPV4_MULTICAST,
/// RIB_IPV6_UNICAST, RIB_IPV6_MULTICAST (2..=5) and ADD-PATH forms (8..=11).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rib<'a> {
    /// One of 2..=5 or 8..=11.
    pub subtype: u16,
    /// Sequence number of the record in its dump.
    pub sequence: u32,
    /// The prefix all entries are for.
    pub prefix: Prefix,
    /// Number of entries, as carried.
    pub entry_count: u16,
    /// The entries, raw; see [`Rib::entries`].
    pub entries_raw: &'a [u8],
}

impl<'a> Rib<'a> {
    /// Decodes the body and checks every entry, so that [`Rib::entries`] cannot fail.
    pub fn parse(subtype: u16, body: &'a [u8]) -> Result<Self, Malformed> {
        let v6 = matches!(
            subtype,
            st::RIB_IPV6_UNICAST
                | st::RIB_IPV6_MULTICAST
                | st::RIB_IPV6_UNICAST_ADDPATH
                | st::RIB_IPV6_MULTICAST_ADDPATH
        );
        let mut c = Cursor::new(body);
        let sequence = c.u32("sequence")?;
        let prefix = c.nlri_prefix(v6)?;
        let entry_count = c.u16("entry count")?;
        let entries_raw = c.rest();
        validate_entries(&mut c, entry_count, is_add_path_subtype(subtype))?;
        Ok(Rib {
            subtype,
            sequence,
            prefix,
            entry_count,
            entries_raw,
        })
    }

    /// Whether entries carry path identifiers (RFC 8050).
    pub fn is_add_path(&self) -> bool {
        is_add_path_subtype(self.subtype)
    }

    /// The address family pair that the subtype names.
    pub fn afi_safi(&self) -> AfiSafi {
        let afi = self.prefix.afi();
        let safi = match self.subtype {
            st::RIB_IPV4_MULTICAST
            | st::RIB_IPV6_MULTICAST
            | st::RIB_IPV4_MULTICAST_ADDPATH
            | st::RIB_IPV6_MULTICAST_ADDPATH => Safi::Multicast,
            _ => Safi::Unicast,
        };
        AfiSafi::new(afi, safi)
    }

    #[inline]
    /// The entries, in order.
    pub fn entries(&self) -> RibEntries<'a> {
        RibEntries {
            c: Cursor::new(self.entries_raw),
            left: self.entry_count,
            add_path: self.is_add_path(),
        }
    }

    /// The subtype for a prefix family, SAFI and ADD-PATH flag (`None` for a
    /// SAFI other than unicast/multicast, which needs RIB_GENERIC).
    pub fn subtype_for(afi_safi: AfiSafi, add_path: bool) -> Option<u16> {
        let base = match (afi_safi.afi, afi_safi.safi) {
            (Afi::Ipv4, Safi::Unicast) => st::RIB_IPV4_UNICAST,
            (Afi::Ipv4, Safi::Multicast) => st::RIB_IPV4_MULTICAST,
            (Afi::Ipv6, Safi::Unicast) => st::RIB_IPV6_UNICAST,
            (Afi::Ipv6, Safi::Multicast) => st::RIB_IPV6_MULTICAST,
            _ => return None,
        };
        Some(if add_path { base + 6 } else { base })
    }

    /// Appends a RIB body built from parts (`add_path` selects whether entries
    /// carry path identifiers; it must match the record's subtype).
    pub fn encode_parts<'e>(
        sequence: u32,
        prefix: Prefix,
        entries: impl ExactSizeIterator<Item = RibEntry<'e>>,
        add_path: bool,
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        put_u32(out, sequence);
        put_nlri_prefix(out, prefix);
        encode_entries(entries, add_path, out)
    }

    /// Appends the body (without the MRT header); never fails.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        Self::encode_parts(
            self.sequence,
            self.prefix,
            self.entries(),
            self.is_add_path(),
            out,
        )
    }
}

/// RIB_GENERIC (6) and RIB_GENERIC_ADDPATH (12) records (RFC 6396 §4.3.3).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RibGeneric<'a> {
    /// 6 or 12.
    pub subtype: u16,
    /// Sequence number of the record in its dump.
    pub sequence: u32,
    /// The address family of the NLRI.
    pub afi: Afi,
    /// The subsequent address family of the NLRI.
    pub safi: Safi,
    /// A single NLRI as in MP_REACH_NLRI: a length octet in bits followed by
    /// that many bits of data (labels/RD included for labelled SAFIs).
    pub nlri: &'a [u8],
    /// Number of entries, as carried.
    pub entry_count: u16,
    /// The entries, raw; see [`RibGeneric::entries`].
    pub entries_raw: &'a [u8],
}

impl<'a> RibGeneric<'a> {
    /// Decodes the body and checks every entry, so that [`RibGeneric::entries`] cannot fail.
    pub fn parse(subtype: u16, body: &'a [u8]) -> Result<Self, Malformed> {
        let mut c = Cursor::new(body);
        let sequence = c.u32("sequence")?;
        let afi = Afi::from_u16(c.u16("AFI")?);
        let safi = Safi::from_u8(c.u8("SAFI")?);
        let nlri_all = c.rest();
        let bits = c.u8("NLRI length")?;
        c.bytes(usize::from(bits).div_ceil(8), "NLRI")?;
        let nlri = nlri_all
            .get(..1 + usize::from(bits).div_ceil(8))
            .unwrap_or(&[]);
        let entry_count = c.u16("entry count")?;
        let entries_raw = c.rest();
        validate_entries(&mut c, entry_count, is_add_path_subtype(subtype))?;
        Ok(RibGeneric {
            subtype,
            sequence,
            afi,
            safi,
            nlri,
            entry_count,
            entries_raw,
        })
    }

    /// Whether entries carry path identifiers (RFC 8050).
    pub fn is_add_path(&self) -> bool {
        is_add_path_subtype(self.subtype)
    }

    /// The NLRI as a prefix, for IPv4/IPv6 unicast and multicast.
    pub fn prefix(&self) -> Option<Prefix> {
        if !matches!(self.safi, Safi::Unicast | Safi::Multicast) {
            return None;
        }
        let (&len, rest) = self.nlri.split_first()?;
        match self.afi {
            Afi::Ipv4 => Prefix4::from_nlri_bytes(len, rest).ok().map(Prefix::V4),
            Afi::Ipv6 => Prefix6::from_nlri_bytes(len, rest).ok().map(Prefix::V6),
            Afi::Other(_) => None,
        }
    }

    #[inline]
    /// The entries, in order.
    pub fn entries(&self) -> RibEntries<'a> {
        RibEntries {
            c: Cursor::new(self.entries_raw),
            left: self.entry_count,
            add_path: self.is_add_path(),
        }
    }

    /// Appends the body (without the MRT header); never fails.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        put_u32(out, self.sequence);
        put_u16(out, self.afi.to_u16());
        out.push(self.safi.to_u8());
        out.extend_from_slice(self.nlri);
        encode_entries(self.entries(), self.is_add_path(), out)
    }
}
