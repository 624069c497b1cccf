//! A compact prefix for the per-peer hash maps (rejected routes, the
//! pre-policy difference, Adj-RIB-Out): 20 bytes where a [`Prefix`] took
//! 48 (Prefix6's u128 was 16-byte aligned, and the enum added another 16
//! for its tag; Prefix6 now keeps octets and [`Prefix`] is 20 bytes too).
//! Per-peer maps hold an entry per route per peer, so the key size is
//! most of their memory: a `(Prefix, u32)` slot was 64 bytes.

use std::hash::{Hash, Hasher};

use base::{Prefix, Prefix4, Prefix6};

use crate::intern::AttrHandle;

/// A masked prefix as a map key; convert back with [`PKey::prefix`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PKey {
    /// Address bits, most significant word first (IPv4 in `addr[0]`).
    addr: [u32; 4],
    len: u8,
    v6: bool,
}

impl From<Prefix> for PKey {
    fn from(p: Prefix) -> PKey {
        match p.masked() {
            Prefix::V4(p) => PKey {
                addr: [p.addr_bits(), 0, 0, 0],
                len: p.len(),
                v6: false,
            },
            Prefix::V6(p) => {
                let a = p.addr_bits();
                PKey {
                    addr: [
                        (a >> 96) as u32,
                        (a >> 64) as u32,
                        (a >> 32) as u32,
                        a as u32,
                    ],
                    len: p.len(),
                    v6: true,
                }
            }
        }
    }
}

impl PKey {
    /// The prefix again. Never `None` for a key made from a prefix (the
    /// length was valid then); callers skip `None` rather than panic.
    pub(crate) fn prefix(self) -> Option<Prefix> {
        let [a, b, c, d] = self.addr.map(u128::from);
        if self.v6 {
            let bits = a << 96 | b << 64 | c << 32 | d;
            Prefix6::new(bits, self.len).ok().map(Prefix::V6)
        } else {
            Prefix4::new(self.addr[0], self.len).ok().map(Prefix::V4)
        }
    }
}

impl Hash for PKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // Three words for the FastHasher instead of six.
        let [a, b, c, d] = self.addr.map(u64::from);
        h.write_u64(a << 32 | b);
        h.write_u64(c << 32 | d);
        h.write_u16(u16::from(self.len) | u16::from(self.v6) << 8);
    }
}

/// An IPv4 prefix in 5 bytes with alignment 1, the key of the
/// Adj-RIB-Out's IPv4 tables (issue 17): with [`Prefix4`] (8 bytes, the
/// `u32` aligning it) an update group's slot was 16 bytes and a private
/// table's 12; packed they are 13 and 9, so a table of a full IPv4 table
/// takes 14 bytes a bucket instead of 17 (10 instead of 13), hashbrown's
/// control byte included.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct P4 {
    addr: [u8; 4],
    len: u8,
}

impl From<Prefix4> for P4 {
    fn from(p: Prefix4) -> P4 {
        let p = p.masked();
        P4 {
            addr: p.addr_bits().to_ne_bytes(),
            len: p.len(),
        }
    }
}

impl P4 {
    /// The prefix again (never `None` for a key made from a prefix;
    /// callers skip `None` rather than panic).
    pub(crate) fn prefix4(self) -> Option<Prefix4> {
        Prefix4::new(u32::from_ne_bytes(self.addr), self.len).ok()
    }
}

impl Hash for P4 {
    fn hash<H: Hasher>(&self, h: &mut H) {
        // One word, as `Prefix4`'s fields would give.
        h.write_u64(u64::from(u32::from_ne_bytes(self.addr)) << 8 | u64::from(self.len));
    }
}

/// An [`AttrHandle`] in 4 bytes with alignment 1 (a packed slot's value).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PHandle([u8; 4]);

impl From<AttrHandle> for PHandle {
    fn from(h: AttrHandle) -> PHandle {
        PHandle(h.0.to_ne_bytes())
    }
}

impl From<PHandle> for AttrHandle {
    fn from(h: PHandle) -> AttrHandle {
        AttrHandle(u32::from_ne_bytes(h.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_ipv4_key_round_trips_in_five_bytes() {
        assert_eq!(std::mem::size_of::<P4>(), 5);
        assert_eq!(std::mem::size_of::<(P4, PHandle)>(), 9);
        assert_eq!(std::mem::align_of::<(P4, PHandle)>(), 1);
        for s in ["0.0.0.0/0", "10.1.2.0/24", "255.255.255.255/32"] {
            let p: Prefix4 = s.parse().unwrap();
            assert_eq!(P4::from(p).prefix4(), Some(p), "{s}");
        }
        let a: Prefix4 = "10.1.2.3/24".parse().unwrap();
        let b: Prefix4 = "10.1.2.0/24".parse().unwrap();
        let c: Prefix4 = "10.1.2.0/25".parse().unwrap();
        assert_eq!(P4::from(a), P4::from(b));
        assert_ne!(P4::from(b), P4::from(c));
        let h = AttrHandle(0x0102_0304);
        assert_eq!(AttrHandle::from(PHandle::from(h)), h);
    }

    #[test]
    fn round_trips_and_stays_small() {
        assert_eq!(std::mem::size_of::<PKey>(), 20);
        assert_eq!(std::mem::size_of::<(PKey, u32)>(), 24);
        for s in [
            "0.0.0.0/0",
            "10.1.2.0/24",
            "255.255.255.255/32",
            "::/0",
            "2001:db8:1:2::/64",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
        ] {
            let p: Prefix = s.parse().unwrap();
            assert_eq!(PKey::from(p).prefix(), Some(p), "{s}");
        }
        // Host bits are masked; families and lengths stay apart.
        let a: Prefix = "10.1.2.3/24".parse().unwrap();
        let b: Prefix = "10.1.2.0/24".parse().unwrap();
        assert_eq!(PKey::from(a), PKey::from(b));
        let c: Prefix = "10.1.2.0/25".parse().unwrap();
        assert_ne!(PKey::from(b), PKey::from(c));
        let v6: Prefix = "::a01:200/120".parse().unwrap();
        assert_ne!(PKey::from(v6), PKey::from(b));
    }
}
