//! What the forwarding cores read: LPM tables, adjacencies, neighbours.
//!
//! The three parts are one value so that `lpm::publish` swaps them
//! together: a route never points at an adjacency readers cannot see yet,
//! and an adjacency is cleared only in a batch that no longer uses it.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use base::{Prefix4, Prefix6};
use lpm::publish::{Absorb, Delta};
use lpm::{Lpm, LpmError, LpmMut, NextHop, Poptrie4, Poptrie6};

/// Where packets of a next hop go.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Adjacency {
    /// Dataplane port (index into the configured interfaces).
    pub port: u16,
    /// The neighbour to send to; `None` for a connected prefix, where the
    /// packet's destination is the neighbour.
    pub gw: Option<IpAddr>,
    /// The gateway's MAC, once learned (ARP); `None` until then.
    pub mac: Option<[u8; 6]>,
    /// Non-zero for a route across the cluster fabric that the ingress
    /// resolved to (egress node, egress port): `elements::fabric::egress_tag`,
    /// the `anno.nh` the lookup gives its packets. `port` is then the
    /// fabric port and `gw` the neighbour at the egress (`None`: the
    /// destination itself), which the egress resolves on the tagged port.
    pub tag: u32,
}

/// Next-hop ids from here up name next-hop groups (multipath routes),
/// group `g` being `GROUP_BASE + g`; below it they name adjacencies.
pub const GROUP_BASE: u32 = 1 << 19;

/// Whether next-hop id `nh` names a group.
#[inline]
pub fn is_group(nh: NextHop) -> bool {
    nh.0 >= GROUP_BASE
}

/// One change to [`FibTables`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FibDelta {
    Insert4(Prefix4, NextHop),
    Remove4(Prefix4),
    Insert6(Prefix6, NextHop),
    Remove6(Prefix6),
    /// Sets adjacency `NextHop` (new, or its MAC changed).
    SetAdj(NextHop, Adjacency),
    /// Frees adjacency `NextHop` (no route uses it any more).
    ClearAdj(NextHop),
    /// A neighbour's MAC (for connected destinations); `None` forgets it.
    Neigh(IpAddr, Option<[u8; 6]>),
    /// Sets next-hop group `NextHop` (an id from [`GROUP_BASE`] up) to its
    /// member adjacencies; a route whose LPM result is the group sends each
    /// flow to one member ([`FibTables::pick`]).
    SetGroup(NextHop, Arc<[NextHop]>),
    /// Frees group `NextHop` (no route uses it any more).
    ClearGroup(NextHop),
}

/// Where a looked-up packet goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Out of `port` to `mac`.
    Ready { port: u16, mac: [u8; 6] },
    /// Out of `port`, but `target`'s MAC is not known yet.
    Resolve { port: u16, target: IpAddr },
}

/// The forwarding state of one dataplane.
#[derive(Clone, Debug, Default)]
pub struct FibTables {
    pub v4: Poptrie4,
    pub v6: Poptrie6,
    adj: Vec<Option<Adjacency>>,
    /// Next-hop groups by `id - GROUP_BASE`: member adjacencies.
    groups: Vec<Option<Arc<[NextHop]>>>,
    neigh: HashMap<IpAddr, [u8; 6]>,
    /// Scratch of [`Absorb::absorb_all`]: a batch's IPv4 and IPv6 route
    /// changes (empty between batches; kept for their allocations).
    batch4: Vec<Delta<Prefix4>>,
    batch6: Vec<Delta<Prefix6>>,
}

impl FibTables {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adjacency `nh`, if set.
    #[inline]
    pub fn adjacency(&self, nh: NextHop) -> Option<&Adjacency> {
        self.adj.get(nh.0 as usize).and_then(Option::as_ref)
    }

    /// The members of group `nh`, if `nh` is a live group.
    #[inline]
    pub fn group(&self, nh: NextHop) -> Option<&[NextHop]> {
        let g = nh.0.checked_sub(GROUP_BASE)?;
        self.groups.get(g as usize)?.as_deref()
    }

    /// The adjacency id a packet with flow hash `hash` takes for LPM
    /// result `nh`: `nh` itself unless it is a group, else the member
    /// `hash mod members` (so one flow always takes one member while the
    /// group is unchanged). No allocation: this is the per-packet path.
    #[inline]
    pub fn pick(&self, nh: NextHop, hash: u32) -> NextHop {
        match self.group(nh) {
            Some(m) if !m.is_empty() => m.get(hash as usize % m.len()).copied().unwrap_or(nh),
            _ => nh,
        }
    }

    /// The learned MAC of neighbour `ip`.
    #[inline]
    pub fn neighbour(&self, ip: IpAddr) -> Option<[u8; 6]> {
        self.neigh.get(&ip).copied()
    }

    /// Looks `dst` up and says where it goes.
    #[inline]
    pub fn route4(&self, dst: u32) -> Option<Hop> {
        let nh = self.pick(self.v4.lookup(dst)?, dst);
        let a = self.adjacency(nh)?;
        let target = a.gw.unwrap_or(IpAddr::V4(std::net::Ipv4Addr::from(dst)));
        let mac = match a.gw {
            Some(_) => a.mac,
            None => self.neighbour(target),
        };
        Some(match mac {
            Some(mac) => Hop::Ready { port: a.port, mac },
            None => Hop::Resolve {
                port: a.port,
                target,
            },
        })
    }

    /// Number of adjacency slots in use.
    pub fn adjacencies(&self) -> usize {
        self.adj.iter().flatten().count()
    }
}

impl FibTables {
    /// [`Absorb::absorb_all`] (`done`: none) or [`Absorb::absorb_again`]
    /// (`done`: the copy that has just taken `ds`): the adjacency, group
    /// and neighbour changes one by one, then each family's route changes
    /// as one batch.
    fn absorb_split(&mut self, ds: &[FibDelta], done: Option<&Self>) -> Result<(), LpmError> {
        let mut v4 = std::mem::take(&mut self.batch4);
        let mut v6 = std::mem::take(&mut self.batch6);
        let mut r = Ok(());
        for d in ds {
            match *d {
                FibDelta::Insert4(p, nh) => v4.push(Delta::Insert(p, nh)),
                FibDelta::Remove4(p) => v4.push(Delta::Remove(p)),
                FibDelta::Insert6(p, nh) => v6.push(Delta::Insert(p, nh)),
                FibDelta::Remove6(p) => v6.push(Delta::Remove(p)),
                _ => {
                    if let Err(e) = self.absorb(d) {
                        r = r.and(Err(e));
                    }
                }
            }
        }
        if !v4.is_empty() {
            r = r.and(match done {
                Some(d) => self.v4.apply_again(&v4, &d.v4),
                None => self.v4.apply_all(&v4),
            });
        }
        if !v6.is_empty() {
            r = r.and(match done {
                Some(d) => self.v6.apply_again(&v6, &d.v6),
                None => self.v6.apply_all(&v6),
            });
        }
        v4.clear();
        v6.clear();
        self.batch4 = v4;
        self.batch6 = v6;
        r
    }
}

impl Absorb<FibDelta> for FibTables {
    fn absorb(&mut self, d: &FibDelta) -> Result<(), LpmError> {
        match d {
            FibDelta::SetGroup(nh, m) => {
                let Some(g) = nh.0.checked_sub(GROUP_BASE) else {
                    return Err(LpmError::NextHopTooLarge);
                };
                if nh.0 > NextHop::MAX_VALID {
                    return Err(LpmError::NextHopTooLarge);
                }
                let i = g as usize;
                if self.groups.len() <= i {
                    self.groups.resize(i + 1, None);
                }
                if let Some(s) = self.groups.get_mut(i) {
                    *s = Some(Arc::clone(m));
                }
                return Ok(());
            }
            FibDelta::ClearGroup(nh) => {
                if let Some(g) = nh.0.checked_sub(GROUP_BASE) {
                    if let Some(s) = self.groups.get_mut(g as usize) {
                        *s = None;
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        match *d {
            FibDelta::Insert4(p, nh) => self.v4.insert(p, nh).map(|_| ()),
            FibDelta::Remove4(p) => {
                self.v4.remove(p);
                Ok(())
            }
            FibDelta::Insert6(p, nh) => self.v6.insert(p, nh).map(|_| ()),
            FibDelta::Remove6(p) => {
                self.v6.remove(p);
                Ok(())
            }
            FibDelta::SetAdj(nh, a) => {
                let i = nh.0 as usize;
                if nh.0 > NextHop::MAX_VALID {
                    return Err(LpmError::NextHopTooLarge);
                }
                if self.adj.len() <= i {
                    self.adj.resize(i + 1, None);
                }
                if let Some(s) = self.adj.get_mut(i) {
                    *s = Some(a);
                }
                Ok(())
            }
            FibDelta::ClearAdj(nh) => {
                if let Some(s) = self.adj.get_mut(nh.0 as usize) {
                    *s = None;
                }
                Ok(())
            }
            FibDelta::Neigh(ip, Some(m)) => {
                self.neigh.insert(ip, m);
                Ok(())
            }
            FibDelta::Neigh(ip, None) => {
                self.neigh.remove(&ip);
                Ok(())
            }
            FibDelta::SetGroup(..) | FibDelta::ClearGroup(_) => Ok(()),
        }
    }

    /// Applies a batch with the result of [`FibTables::absorb`] on each
    /// change in order, but hands the IPv4 and the IPv6 route changes to
    /// their tables as one batch each ([`LpmMut::apply_all`]: the Poptrie
    /// sorts them by slot and rebuilds each touched subtree once). Routes,
    /// adjacencies, groups and neighbours are disjoint parts that no change
    /// reads across, so adjacency, group and neighbour changes in order,
    /// then each family's route changes in order, leave the same tables;
    /// readers see none of it before the whole batch is published. The
    /// same changes are refused; when refusals fall in more than one part,
    /// the error returned is that of the adjacency/group/neighbour part,
    /// else IPv4's, else IPv6's (not necessarily the earliest in the batch).
    fn absorb_all(&mut self, ds: &[FibDelta]) -> Result<(), LpmError> {
        self.absorb_split(ds, None)
    }

    /// [`FibTables::absorb_all`] on the second copy of the pair: the same
    /// parts in the same order, but each family's route batch through
    /// [`LpmMut::apply_again`], which copies what `done`'s Poptrie wrote
    /// for it instead of recomputing it.
    fn absorb_again(&mut self, ds: &[FibDelta], done: &Self) -> Result<(), LpmError> {
        self.absorb_split(ds, Some(done))
    }
}

/// So that an `elements` lookup (or any `Lpm` user) can read the IPv4 part
/// through the same published handle.
impl Lpm<u32> for FibTables {
    #[inline]
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        self.v4.lookup(addr)
    }
    #[inline]
    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<NextHop>]) {
        self.v4.lookup_batch(addrs, out)
    }
}

impl Lpm<u128> for FibTables {
    #[inline]
    fn lookup(&self, addr: u128) -> Option<NextHop> {
        self.v6.lookup(addr)
    }
    #[inline]
    fn lookup_batch(&self, addrs: &[u128], out: &mut [Option<NextHop>]) {
        self.v6.lookup_batch(addrs, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn p4(s: &str) -> Prefix4 {
        s.parse().expect("prefix")
    }

    #[test]
    fn route4_resolves_gateway_and_connected_macs() {
        let mut t = FibTables::new();
        let gw = IpAddr::V4(Ipv4Addr::new(10, 2, 0, 2));
        for d in [
            FibDelta::SetAdj(
                NextHop(0),
                Adjacency {
                    port: 1,
                    gw: None,
                    mac: None,
                    tag: 0,
                },
            ),
            FibDelta::SetAdj(
                NextHop(1),
                Adjacency {
                    port: 1,
                    gw: Some(gw),
                    mac: Some([7; 6]),
                    tag: 0,
                },
            ),
            FibDelta::Insert4(p4("10.2.0.0/24"), NextHop(0)),
            FibDelta::Insert4(p4("203.0.113.0/24"), NextHop(1)),
        ] {
            t.absorb(&d).expect("absorb");
        }
        assert_eq!(
            t.route4(0xcb00_7105),
            Some(Hop::Ready {
                port: 1,
                mac: [7; 6]
            })
        );
        let d = u32::from(Ipv4Addr::new(10, 2, 0, 9));
        assert_eq!(
            t.route4(d),
            Some(Hop::Resolve {
                port: 1,
                target: IpAddr::V4(Ipv4Addr::new(10, 2, 0, 9))
            }),
            "connected destination without a neighbour entry"
        );
        t.absorb(&FibDelta::Neigh(
            IpAddr::V4(Ipv4Addr::new(10, 2, 0, 9)),
            Some([9; 6]),
        ))
        .expect("neigh");
        assert_eq!(
            t.route4(d),
            Some(Hop::Ready {
                port: 1,
                mac: [9; 6]
            })
        );
        assert_eq!(t.route4(0x0808_0808), None);
        t.absorb(&FibDelta::ClearAdj(NextHop(1))).expect("clear");
        assert_eq!(
            t.route4(0xcb00_7105),
            None,
            "dangling next hop reads as no route"
        );
        assert_eq!(t.adjacencies(), 1);
        assert_eq!(
            t.absorb(&FibDelta::SetAdj(
                NextHop(NextHop::MAX_VALID + 1),
                Adjacency {
                    port: 0,
                    gw: None,
                    mac: None,
                    tag: 0,
                }
            )),
            Err(LpmError::NextHopTooLarge)
        );
    }
}
