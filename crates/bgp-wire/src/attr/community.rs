//! Community-like attributes: fixed-size items in a list.
//!
//! ```text
//! COMMUNITIES (RFC 1997), 4 octets each:   | global AS (2) | local (2) |
//! EXTENDED_COMMUNITIES (RFC 4360), 8:      | type | subtype | value (6) |
//! IPv6 extended communities (RFC 5701), 20:| type | subtype | IPv6 (16) | local (2) |
//! LARGE_COMMUNITY (RFC 8092), 12:          | global (4) | local 1 (4) | local 2 (4) |
//! CLUSTER_LIST (RFC 4456), 4:              | CLUSTER_ID (4) |
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::net::Ipv4Addr;

use crate::util::{array_at, u32_at};

/// A fixed-size list item.
pub trait FixedItem: Sized + Copy + 'static {
    /// Octets per item on the wire.
    const LEN: usize;
    /// `b` is exactly `LEN` octets.
    fn from_bytes(b: &[u8]) -> Option<Self>;
    /// Appends the item's `LEN` octets.
    fn write(&self, out: &mut Vec<u8>);
}

/// A standard community (RFC 1997).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Community(pub u32);

impl Community {
    /// RFC 8326.
    pub const GRACEFUL_SHUTDOWN: Community = Community(0xffff_0000);
    /// RFC 7999.
    pub const BLACKHOLE: Community = Community(0xffff_029a);
    /// NO_EXPORT (RFC 1997): do not advertise outside the AS or confederation.
    pub const NO_EXPORT: Community = Community(0xffff_ff01);
    /// NO_ADVERTISE (RFC 1997): do not advertise to any peer.
    pub const NO_ADVERTISE: Community = Community(0xffff_ff02);
    /// NO_EXPORT_SUBCONFED (RFC 1997): do not advertise to external peers, confederation members
    /// included.
    pub const NO_EXPORT_SUBCONFED: Community = Community(0xffff_ff03);
    /// RFC 3765.
    pub const NO_PEER: Community = Community(0xffff_ff04);
    /// LLGR_STALE (RFC 9494): a route kept after its session went
    /// down, in the long-lived stale phase.
    pub const LLGR_STALE: Community = Community(0xffff_0006);
    /// NO_LLGR (RFC 9494): do not keep the route as long-lived stale.
    pub const NO_LLGR: Community = Community(0xffff_0007);

    /// The high 16 bits, by convention the AS that defines the value.
    pub const fn asn(self) -> u16 {
        (self.0 >> 16) as u16
    }
    /// The low 16 bits.
    pub const fn value(self) -> u16 {
        self.0 as u16
    }
}

impl fmt::Display for Community {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.asn(), self.value())
    }
}

/// An extended community (RFC 4360).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExtCommunity(pub [u8; 8]);

impl ExtCommunity {
    /// The type octet (high byte of the type field).
    pub const fn type_high(self) -> u8 {
        self.0[0]
    }
    /// The subtype octet (second octet; meaningful for extended types).
    pub const fn subtype(self) -> u8 {
        self.0[1]
    }
    /// RFC 4360 §2: bit 0x40 of the type is "non-transitive".
    pub const fn is_transitive(self) -> bool {
        self.0[0] & 0x40 == 0
    }
}

/// An IPv6 address specific extended community (RFC 5701).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv6ExtCommunity(pub [u8; 20]);

/// A large community (RFC 8092).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LargeCommunity {
    /// Global administrator: the AS that defines the community.
    pub global_admin: u32,
    /// First local data part.
    pub local_data1: u32,
    /// Second local data part.
    pub local_data2: u32,
}

impl fmt::Display for LargeCommunity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}",
            self.global_admin, self.local_data1, self.local_data2
        )
    }
}

impl FixedItem for Community {
    const LEN: usize = 4;
    fn from_bytes(b: &[u8]) -> Option<Self> {
        u32_at(b, 0).map(Community)
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_be_bytes());
    }
}

impl FixedItem for ExtCommunity {
    const LEN: usize = 8;
    fn from_bytes(b: &[u8]) -> Option<Self> {
        array_at(b, 0).map(ExtCommunity)
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

impl FixedItem for Ipv6ExtCommunity {
    const LEN: usize = 20;
    fn from_bytes(b: &[u8]) -> Option<Self> {
        array_at(b, 0).map(Ipv6ExtCommunity)
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

impl FixedItem for LargeCommunity {
    const LEN: usize = 12;
    fn from_bytes(b: &[u8]) -> Option<Self> {
        Some(LargeCommunity {
            global_admin: u32_at(b, 0)?,
            local_data1: u32_at(b, 4)?,
            local_data2: u32_at(b, 8)?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.global_admin.to_be_bytes());
        out.extend_from_slice(&self.local_data1.to_be_bytes());
        out.extend_from_slice(&self.local_data2.to_be_bytes());
    }
}

impl FixedItem for Ipv4Addr {
    const LEN: usize = 4;
    fn from_bytes(b: &[u8]) -> Option<Self> {
        u32_at(b, 0).map(Ipv4Addr::from)
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.octets());
    }
}

/// A borrowed list of fixed-size items, validated to be a non-zero
/// multiple of the item size (RFC 7606 §7.8, §7.10, §7.14, §7.15; RFC 8092
/// §6 all call other lengths malformed).
pub struct ListView<'a, T> {
    bytes: &'a [u8],
    _t: PhantomData<T>,
}

// Manual impls: derive would require `T: Clone` etc. needlessly.
impl<T> Clone for ListView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for ListView<'_, T> {}
impl<T> PartialEq for ListView<'_, T> {
    fn eq(&self, o: &Self) -> bool {
        self.bytes == o.bytes
    }
}
impl<T> Eq for ListView<'_, T> {}
impl<T> fmt::Debug for ListView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ListView({} octets)", self.bytes.len())
    }
}

impl<'a, T: FixedItem> ListView<'a, T> {
    /// A view of `bytes` if it is a non-empty whole number of items.
    pub fn parse(bytes: &'a [u8]) -> Option<ListView<'a, T>> {
        if bytes.is_empty() || bytes.len() % T::LEN != 0 {
            return None;
        }
        Some(ListView {
            bytes,
            _t: PhantomData,
        })
    }
    /// Number of items.
    pub fn len(&self) -> usize {
        self.bytes.len() / T::LEN
    }
    /// Always false for a parsed list (an empty value does not parse).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    /// The value octets as received.
    pub fn raw(&self) -> &'a [u8] {
        self.bytes
    }
    /// The items in wire order.
    pub fn iter(&self) -> impl Iterator<Item = T> + 'a {
        self.bytes.chunks_exact(T::LEN).filter_map(T::from_bytes)
    }
    /// The items, copied.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().collect()
    }
}

/// COMMUNITIES, borrowed.
pub type Communities<'a> = ListView<'a, Community>;
/// EXTENDED_COMMUNITIES, borrowed.
pub type ExtCommunities<'a> = ListView<'a, ExtCommunity>;
/// IPV6_EXTENDED_COMMUNITIES, borrowed.
pub type Ipv6ExtCommunities<'a> = ListView<'a, Ipv6ExtCommunity>;
/// LARGE_COMMUNITY, borrowed.
pub type LargeCommunities<'a> = ListView<'a, LargeCommunity>;
/// CLUSTER_LIST, borrowed: cluster IDs, most recent first.
pub type ClusterList<'a> = ListView<'a, Ipv4Addr>;

pub(crate) fn write_list<T: FixedItem>(list: &[T], out: &mut Vec<u8>) {
    for i in list {
        i.write(out);
    }
}
