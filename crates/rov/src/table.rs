//! The VRP table and RFC 6811 §2 validation.

use std::collections::HashMap;

use base::Prefix;

use crate::{Key, RovState};

/// One Validated ROA Payload: `asn` may originate `prefix` and any more
/// specific prefix up to `max_len` bits (RFC 6811 §2, RFC 8210 §5.6/5.7).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Vrp {
    prefix: Prefix,
    max_len: u8,
    asn: u32,
}

/// Why a [`Vrp`] cannot be built.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum VrpError {
    /// The maximum length is shorter than the prefix or longer than the
    /// family allows (RFC 8210 §5.6: such a PDU is corrupt).
    BadMaxLength,
}

impl std::fmt::Display for VrpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("max length below the prefix length or above the family's")
    }
}

impl std::error::Error for VrpError {}

impl Vrp {
    /// A VRP; the prefix's host bits are cleared.
    pub fn new(prefix: Prefix, max_len: u8, asn: u32) -> Result<Vrp, VrpError> {
        let bits = match prefix {
            Prefix::V4(_) => 32,
            Prefix::V6(_) => 128,
        };
        if max_len < prefix.len() || max_len > bits {
            return Err(VrpError::BadMaxLength);
        }
        Ok(Vrp {
            prefix: prefix.masked(),
            max_len,
            asn,
        })
    }

    /// The prefix (host bits clear).
    pub fn prefix(&self) -> Prefix {
        self.prefix
    }

    /// The longest prefix length it authorises.
    pub fn max_len(&self) -> u8 {
        self.max_len
    }

    /// The origin AS it authorises (0: none, RFC 6483 §4).
    pub fn asn(&self) -> u32 {
        self.asn
    }
}

/// Bit set of the prefix lengths present, so that a lookup probes only
/// lengths some VRP has (0..=128: three words).
#[derive(Clone, Debug, Default)]
struct Lens([u64; 3]);

impl Lens {
    fn set(&mut self, len: u8, on: bool) {
        let (w, b) = (usize::from(len / 64), len % 64);
        if let Some(x) = self.0.get_mut(w) {
            if on {
                *x |= 1 << b;
            } else {
                *x &= !(1 << b);
            }
        }
    }

    fn has(&self, len: u8) -> bool {
        let (w, b) = (usize::from(len / 64), len % 64);
        self.0.get(w).is_some_and(|x| x & (1 << b) != 0)
    }
}

/// The VRPs in use, keyed by prefix. A set: inserting a VRP twice keeps
/// one copy.
#[derive(Clone, Debug, Default)]
pub struct VrpTable {
    /// (max length, ASN) per VRP prefix, no duplicates.
    map: HashMap<Key, Vec<(u8, u32)>>,
    /// Prefixes per length, per family (for [`Lens`]).
    per_len: [HashMap<u8, usize>; 2],
    lens: [Lens; 2],
    count: usize,
}

impl VrpTable {
    /// Adds `v`; false if it was there.
    pub fn insert(&mut self, v: Vrp) -> bool {
        let k = Key::of(&v.prefix);
        let e = self.map.entry(k).or_default();
        if e.contains(&(v.max_len, v.asn)) {
            return false;
        }
        if e.is_empty() {
            let fam = usize::from(k.v6);
            if let (Some(n), Some(l)) = (self.per_len.get_mut(fam), self.lens.get_mut(fam)) {
                *n.entry(k.len).or_default() += 1;
                l.set(k.len, true);
            }
        }
        e.push((v.max_len, v.asn));
        self.count += 1;
        true
    }

    /// Removes `v`; false if it was not there.
    pub fn remove(&mut self, v: &Vrp) -> bool {
        let k = Key::of(&v.prefix);
        let Some(e) = self.map.get_mut(&k) else {
            return false;
        };
        let Some(i) = e.iter().position(|x| *x == (v.max_len, v.asn)) else {
            return false;
        };
        e.swap_remove(i);
        self.count -= 1;
        if e.is_empty() {
            self.map.remove(&k);
            let fam = usize::from(k.v6);
            if let (Some(n), Some(l)) = (self.per_len.get_mut(fam), self.lens.get_mut(fam)) {
                if let Some(c) = n.get_mut(&k.len) {
                    *c -= 1;
                    if *c == 0 {
                        n.remove(&k.len);
                        l.set(k.len, false);
                    }
                }
            }
        }
        true
    }

    /// Number of VRPs.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of IPv4 and IPv6 VRPs.
    pub fn len_by_family(&self) -> (usize, usize) {
        let mut n = (0, 0);
        for (k, e) in &self.map {
            if k.v6 {
                n.1 += e.len();
            } else {
                n.0 += e.len();
            }
        }
        n
    }

    /// Every VRP, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = Vrp> + '_ {
        self.map.iter().flat_map(|(k, e)| {
            let p = k.prefix();
            e.iter().filter_map(move |&(max_len, asn)| {
                Some(Vrp {
                    prefix: p?,
                    max_len,
                    asn,
                })
            })
        })
    }

    /// The VRPs covering `prefix` (RFC 6811 §2: VRP prefix length at most
    /// the route's, same leading bits).
    pub fn covering<'a>(&'a self, prefix: &Prefix) -> impl Iterator<Item = Vrp> + 'a {
        let k = Key::of(prefix);
        let lens = self.lens.get(usize::from(k.v6));
        (0..=k.len)
            .filter(move |&l| lens.is_some_and(|s| s.has(l)))
            .filter_map(move |l| {
                let kk = k.truncate(l);
                let e = self.map.get(&kk)?;
                Some((kk.prefix()?, e))
            })
            .flat_map(|(p, e)| {
                e.iter().map(move |&(max_len, asn)| Vrp {
                    prefix: p,
                    max_len,
                    asn,
                })
            })
    }

    /// RFC 6811 §2: a route is Valid when a covering VRP has its origin
    /// AS and a max length at least its length, Invalid when VRPs cover
    /// it but none matches, NotFound when none covers it. `origin` None is
    /// the RFC's NONE (the AS_PATH ends in an AS_SET, or is empty): it
    /// matches no VRP. AS 0 in a VRP matches no route (RFC 6483 §4);
    /// an AS 0 origin is never Valid either.
    pub fn validate(&self, prefix: &Prefix, origin: Option<u32>) -> RovState {
        let mut covered = false;
        for v in self.covering(prefix) {
            covered = true;
            if v.asn != 0 && Some(v.asn) == origin && prefix.len() <= v.max_len {
                return RovState::Valid;
            }
        }
        if covered {
            RovState::Invalid
        } else {
            RovState::NotFound
        }
    }
}
