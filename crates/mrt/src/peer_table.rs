//! PEER_INDEX_TABLE (RFC 6396 §4.3.1) and GEO_PEER_TABLE (RFC 6397 §4).
//! Entries are validated once when the record is decoded, then iterated
//! lazily from the borrowed body.

#![deny(clippy::indexing_slicing)]

use crate::error::Malformed;
use crate::wire::{len16, put_ip, put_u16, put_u32, Cursor};
use base::Asn;
use std::net::{IpAddr, Ipv4Addr};

/// Peer type bit: the peer address is IPv6 (RFC 6396 §4.3.1).
pub const PEER_TYPE_IPV6: u8 = 0x01;
/// Peer type bit: the peer AS is 4 octets.
pub const PEER_TYPE_AS4: u8 = 0x02;

/// One peer of a PEER_INDEX_TABLE.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Peer {
    /// Peer type octet as carried. When encoding, the IPv6 bit follows
    /// `ip`'s family and the AS4 bit is forced on for ASNs above 65535.
    pub peer_type: u8,
    /// The peer's BGP identifier.
    pub bgp_id: Ipv4Addr,
    /// The peer's address.
    pub ip: IpAddr,
    /// The peer's AS.
    pub asn: Asn,
}

impl Peer {
    /// A peer encoded with a 4-octet AS field.
    pub fn new(bgp_id: Ipv4Addr, ip: IpAddr, asn: Asn) -> Peer {
        let v6 = if ip.is_ipv6() { PEER_TYPE_IPV6 } else { 0 };
        Peer {
            peer_type: v6 | PEER_TYPE_AS4,
            bgp_id,
            ip,
            asn,
        }
    }

    fn parse(c: &mut Cursor<'_>) -> Result<Peer, Malformed> {
        let peer_type = c.u8("peer type")?;
        let bgp_id = Ipv4Addr::from(c.array::<4>("peer BGP ID")?);
        let ip = c.ip(peer_type & PEER_TYPE_IPV6 != 0, "peer IP")?;
        let asn = if peer_type & PEER_TYPE_AS4 != 0 {
            Asn(c.u32("peer AS")?)
        } else {
            Asn(u32::from(c.u16("peer AS")?))
        };
        Ok(Peer {
            peer_type,
            bgp_id,
            ip,
            asn,
        })
    }

    /// The peer type octet that [`Peer::encode`] writes.
    pub fn wire_type(&self) -> u8 {
        let mut t = self.peer_type & !PEER_TYPE_IPV6;
        if self.ip.is_ipv6() {
            t |= PEER_TYPE_IPV6;
        }
        if self.asn.is_4byte() {
            t |= PEER_TYPE_AS4;
        }
        t
    }

    /// Appends the entry, with [`Peer::wire_type`] as its type octet.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let t = self.wire_type();
        out.push(t);
        out.extend_from_slice(&self.bgp_id.octets());
        put_ip(out, self.ip, t & PEER_TYPE_IPV6 != 0);
        if t & PEER_TYPE_AS4 != 0 {
            put_u32(out, self.asn.0);
        } else {
            put_u16(out, self.asn.to_u16_or_trans());
        }
    }
}

/// A PEER_INDEX_TABLE record, borrowing the record body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PeerIndexTable<'a> {
    /// The collector's BGP identifier.
    pub collector_bgp_id: Ipv4Addr,
    /// View name, raw (UTF-8 by convention, not checked).
    pub view_name: &'a [u8],
    /// Number of peer entries, as carried.
    pub peer_count: u16,
    /// The peer entries, raw; see [`PeerIndexTable::peers`].
    pub entries: &'a [u8],
}

impl<'a> PeerIndexTable<'a> {
    /// Decodes the body and checks every peer entry, so that [`PeerIndexTable::peers`] cannot fail.
    pub fn parse(body: &'a [u8]) -> Result<Self, Malformed> {
        let mut c = Cursor::new(body);
        let collector_bgp_id = Ipv4Addr::from(c.array::<4>("collector BGP ID")?);
        let nlen = c.u16("view name length")?;
        let view_name = c.bytes(usize::from(nlen), "view name")?;
        let peer_count = c.u16("peer count")?;
        let entries = c.rest();
        // Validate every entry now so that iteration cannot fail later.
        for _ in 0..peer_count {
            Peer::parse(&mut c)?;
        }
        c.finish()?;
        Ok(PeerIndexTable {
            collector_bgp_id,
            view_name,
            peer_count,
            entries,
        })
    }

    /// Iterates the peers (index 0 first).
    pub fn peers(&self) -> Peers<'a> {
        Peers {
            c: Cursor::new(self.entries),
            left: self.peer_count,
        }
    }

    /// Appends a PEER_INDEX_TABLE body built from parts.
    pub fn encode_parts(
        collector_bgp_id: Ipv4Addr,
        view_name: &[u8],
        peers: impl ExactSizeIterator<Item = Peer>,
        out: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        out.extend_from_slice(&collector_bgp_id.octets());
        put_u16(out, len16(view_name.len(), "view name")?);
        out.extend_from_slice(view_name);
        put_u16(out, len16(peers.len(), "peer table")?);
        for p in peers {
            p.encode(out);
        }
        Ok(())
    }

    /// Appends the body, re-encoding every peer from its decoded form.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        Self::encode_parts(self.collector_bgp_id, self.view_name, self.peers(), out)
    }
}

/// Iterator over the peers of a validated [`PeerIndexTable`].
#[derive(Clone, Debug)]
pub struct Peers<'a> {
    c: Cursor<'a>,
    left: u16,
}

impl Iterator for Peers<'_> {
    type Item = Peer;
    fn next(&mut self) -> Option<Peer> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Entries were validated at parse time; stop quietly if not.
        Peer::parse(&mut self.c).ok()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::from(self.left), Some(usize::from(self.left)))
    }
}

impl ExactSizeIterator for Peers<'_> {}

/// The reader's owned copy of the latest PEER_INDEX_TABLE, used to resolve
/// the peer index of TABLE_DUMP_V2 RIB entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerTable {
    /// The collector's BGP identifier; `None` until a table was loaded.
    pub collector_bgp_id: Option<Ipv4Addr>,
    /// View name, raw.
    pub view_name: Vec<u8>,
    /// The peers, by peer index.
    pub peers: Vec<Peer>,
}

impl PeerTable {
    /// Replaces the contents with `t`, reusing the allocations.
    pub fn load(&mut self, t: &PeerIndexTable<'_>) {
        self.collector_bgp_id = Some(t.collector_bgp_id);
        self.view_name.clear();
        self.view_name.extend_from_slice(t.view_name);
        self.peers.clear();
        self.peers.extend(t.peers());
    }

    /// The peer at `index`, if the table has one.
    pub fn get(&self, index: u16) -> Option<&Peer> {
        self.peers.get(usize::from(index))
    }

    /// Number of peers.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether there is no peer.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}

/// One peer of a GEO_PEER_TABLE (RFC 6397 §4). Coordinates are kept as the
/// raw bits of the IEEE 754 single-precision values so that equality and
/// re-encoding are exact (NaN included).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GeoPeer {
    /// Peer type octet as carried; encoding sets the IPv6 bit from `ip`.
    pub peer_type: u8,
    /// The peer's BGP identifier.
    pub bgp_id: Ipv4Addr,
    /// The peer's address.
    pub ip: IpAddr,
    /// Latitude, raw `f32` bits.
    pub latitude_bits: u32,
    /// Longitude, raw `f32` bits.
    pub longitude_bits: u32,
}

impl GeoPeer {
    /// Latitude in degrees.
    pub fn latitude(&self) -> f32 {
        f32::from_bits(self.latitude_bits)
    }
    /// Longitude in degrees.
    pub fn longitude(&self) -> f32 {
        f32::from_bits(self.longitude_bits)
    }

    fn parse(c: &mut Cursor<'_>) -> Result<GeoPeer, Malformed> {
        let peer_type = c.u8("peer type")?;
        let bgp_id = Ipv4Addr::from(c.array::<4>("peer BGP ID")?);
        let ip = c.ip(peer_type & PEER_TYPE_IPV6 != 0, "peer IP")?;
        let latitude_bits = c.u32("peer latitude")?;
        let longitude_bits = c.u32("peer longitude")?;
        Ok(GeoPeer {
            peer_type,
            bgp_id,
            ip,
            latitude_bits,
            longitude_bits,
        })
    }

    /// Appends the entry; the IPv6 type bit follows `ip`'s family.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let v6 = self.ip.is_ipv6();
        out.push((self.peer_type & !PEER_TYPE_IPV6) | if v6 { PEER_TYPE_IPV6 } else { 0 });
        out.extend_from_slice(&self.bgp_id.octets());
        put_ip(out, self.ip, v6);
        put_u32(out, self.latitude_bits);
        put_u32(out, self.longitude_bits);
    }
}

/// A GEO_PEER_TABLE record (TABLE_DUMP_V2 subtype 7, RFC 6397 §4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GeoPeerTable<'a> {
    /// The collector's BGP identifier.
    pub collector_bgp_id: Ipv4Addr,
    /// The collector's latitude, raw `f32` bits.
    pub collector_latitude_bits: u32,
    /// The collector's longitude, raw `f32` bits.
    pub collector_longitude_bits: u32,
    /// Number of peer entries, as carried.
    pub peer_count: u16,
    /// The peer entries, raw; see [`GeoPeerTable::peers`].
    pub entries: &'a [u8],
}

impl<'a> GeoPeerTable<'a> {
    /// Decodes the body and checks every peer entry.
    pub fn parse(body: &'a [u8]) -> Result<Self, Malformed> {
        let mut c = Cursor::new(body);
        let collector_bgp_id = Ipv4Addr::from(c.array::<4>("collector BGP ID")?);
        let collector_latitude_bits = c.u32("collector latitude")?;
        let collector_longitude_bits = c.u32("collector longitude")?;
        let peer_count = c.u16("peer count")?;
        let entries = c.rest();
        for _ in 0..peer_count {
            GeoPeer::parse(&mut c)?;
        }
        c.finish()?;
        Ok(GeoPeerTable {
            collector_bgp_id,
            collector_latitude_bits,
            collector_longitude_bits,
            peer_count,
            entries,
        })
    }

    /// The peers, in order.
    pub fn peers(&self) -> impl Iterator<Item = GeoPeer> + 'a {
        let mut c = Cursor::new(self.entries);
        (0..self.peer_count).map_while(move |_| GeoPeer::parse(&mut c).ok())
    }

    /// Appends the body (without the MRT header); never fails.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.extend_from_slice(&self.collector_bgp_id.octets());
        put_u32(out, self.collector_latitude_bits);
        put_u32(out, self.collector_longitude_bits);
        put_u16(out, self.peer_count);
        for p in self.peers() {
            p.encode(out);
        }
        Ok(())
    }
}
