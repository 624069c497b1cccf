//! Naive reference tables: a map per prefix length, searched from the
//! longest length down. Slow, obviously correct; the differential tests
//! compare every fast table with these.

use std::collections::HashMap;

use base::{Prefix4, Prefix6};

use crate::{Lpm, LpmError, LpmMut, NextHop};

/// IPv4 reference table.
#[derive(Clone, Debug)]
pub struct Reference4 {
    by_len: Vec<HashMap<u32, NextHop>>,
    len: usize,
}

impl Default for Reference4 {
    fn default() -> Self {
        Reference4 {
            by_len: vec![HashMap::new(); 33],
            len: 0,
        }
    }
}

fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    }
}

fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

impl Lpm<u32> for Reference4 {
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        (0..=32u8)
            .rev()
            .find_map(|l| self.by_len[l as usize].get(&(addr & mask4(l))).copied())
    }
}

impl LpmMut<Prefix4> for Reference4 {
    fn insert(&mut self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        if nh.0 > NextHop::MAX_VALID {
            return Err(LpmError::NextHopTooLarge);
        }
        let p = p.masked();
        let old = self.by_len[p.len() as usize].insert(p.addr_bits(), nh);
        if old.is_none() {
            self.len += 1;
        }
        Ok(old)
    }
    fn remove(&mut self, p: Prefix4) -> Option<NextHop> {
        let p = p.masked();
        let old = self.by_len[p.len() as usize].remove(&p.addr_bits());
        if old.is_some() {
            self.len -= 1;
        }
        old
    }
    fn len(&self) -> usize {
        self.len
    }
}

/// IPv6 reference table.
#[derive(Clone, Debug)]
pub struct Reference6 {
    by_len: Vec<HashMap<u128, NextHop>>,
    len: usize,
}

impl Default for Reference6 {
    fn default() -> Self {
        Reference6 {
            by_len: vec![HashMap::new(); 129],
            len: 0,
        }
    }
}

impl Lpm<u128> for Reference6 {
    fn lookup(&self, addr: u128) -> Option<NextHop> {
        (0..=128u8)
            .rev()
            .find_map(|l| self.by_len[l as usize].get(&(addr & mask6(l))).copied())
    }
}

impl LpmMut<Prefix6> for Reference6 {
    fn insert(&mut self, p: Prefix6, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        if nh.0 > NextHop::MAX_VALID {
            return Err(LpmError::NextHopTooLarge);
        }
        let p = p.masked();
        let old = self.by_len[p.len() as usize].insert(p.addr_bits(), nh);
        if old.is_none() {
            self.len += 1;
        }
        Ok(old)
    }
    fn remove(&mut self, p: Prefix6) -> Option<NextHop> {
        let p = p.masked();
        let old = self.by_len[p.len() as usize].remove(&p.addr_bits());
        if old.is_some() {
            self.len -= 1;
        }
        old
    }
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_wins_and_remove_falls_back() {
        let mut t = Reference4::default();
        let p8 = Prefix4::new(0x0a00_0000, 8).unwrap();
        let p24 = Prefix4::new(0x0a01_0200, 24).unwrap();
        t.insert(p8, NextHop(1)).unwrap();
        t.insert(p24, NextHop(2)).unwrap();
        assert_eq!(t.lookup(0x0a01_0203), Some(NextHop(2)));
        assert_eq!(t.lookup(0x0a02_0203), Some(NextHop(1)));
        assert_eq!(t.lookup(0x0b00_0000), None);
        assert_eq!(t.remove(p24), Some(NextHop(2)));
        assert_eq!(t.lookup(0x0a01_0203), Some(NextHop(1)));
        assert_eq!(t.len(), 1);
    }
}
