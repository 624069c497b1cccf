//! Several RTR caches with preference and failover (RFC 8210 §10), as a
//! pure state machine: the edge reports connections, data and losses with
//! the time; this picks the cache whose data is used and says which VRP
//! prefixes changed in the table in use.
//!
//! Rules: the cache with the lowest preference value among those that hold
//! current data (synchronised, not expired) is used; ties go to the first
//! configured. A cache keeps its data after its connection is lost until
//! its Expire Interval runs out (RFC 8210 §6), so a short loss changes
//! nothing; when it expires another cache's data takes over, or, with
//! none left, the table empties (every route becomes NotFound).
//!
//! ASPA records (RTR version 2) follow the same cache: the table in use
//! holds the active cache's ASPAs, and the customer ASes whose records
//! changed are collected for [`Selector::take_aspa_changes`].

use std::collections::HashSet;
use std::time::Duration;

use base::{Instant, Prefix};

use crate::{Aspa, AspaTable, Vrp, VrpTable};

/// What one cache is doing, for `show rpki`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CacheState {
    /// Not connected, no data.
    Idle,
    /// Connected, waiting for the first End of Data.
    Connecting,
    /// Connected with current data.
    Synced,
    /// Connection lost; its data is kept until `expire`.
    Stale,
}

impl CacheState {
    /// Word for the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Idle => "idle",
            CacheState::Connecting => "connecting",
            CacheState::Synced => "synced",
            CacheState::Stale => "stale",
        }
    }
}

/// One cache as the selector keeps it.
#[derive(Clone, Debug)]
pub struct Cache {
    /// Lower is preferred (RFC 8210 §10).
    pub preference: u8,
    /// Its current state.
    pub state: CacheState,
    /// Its VRP set (kept while Stale).
    pub vrps: HashSet<Vrp>,
    /// Its ASPAs (kept while Stale).
    pub aspas: AspaTable,
    /// Serial of its last End of Data.
    pub serial: Option<u32>,
    /// Session id of its last End of Data.
    pub session: Option<u16>,
    /// The Expire Interval in use: configured, or the cache's own when a
    /// delivery carries one.
    pub expire: Duration,
    /// When its data was last confirmed (End of Data).
    pub last_update: Option<Instant>,
}

/// The caches and the table of the one in use.
#[derive(Clone, Debug, Default)]
pub struct Selector {
    caches: Vec<Cache>,
    active: Option<usize>,
    table: VrpTable,
    aspa: AspaTable,
    /// Customer ASes whose ASPA in use changed since the last
    /// [`Selector::take_aspa_changes`].
    aspa_changed: Vec<u32>,
}

/// A data set a cache delivered (one End of Data's worth).
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    /// A reset (full set) rather than an incremental update.
    pub reset: bool,
    /// Announced VRPs.
    pub announce: Vec<Vrp>,
    /// Withdrawn VRPs.
    pub withdraw: Vec<Vrp>,
    /// Serial and session id of the End of Data.
    pub serial: u32,
    /// Session id.
    pub session: u16,
    /// The cache's Expire Interval, when it sent one (RFC 8210 v1+).
    pub expire: Option<Duration>,
    /// Announced ASPAs (RTR v2): each replaces the customer's record.
    pub aspa_announce: Vec<Aspa>,
    /// Withdrawn ASPAs, by customer AS.
    pub aspa_withdraw: Vec<u32>,
}

impl Selector {
    /// Caches with these preferences and configured expire intervals.
    pub fn new(caches: impl IntoIterator<Item = (u8, Duration)>) -> Selector {
        Selector {
            caches: caches
                .into_iter()
                .map(|(preference, expire)| Cache {
                    preference,
                    state: CacheState::Idle,
                    vrps: HashSet::new(),
                    aspas: AspaTable::default(),
                    serial: None,
                    session: None,
                    expire,
                    last_update: None,
                })
                .collect(),
            active: None,
            table: VrpTable::default(),
            aspa: AspaTable::default(),
            aspa_changed: Vec::new(),
        }
    }

    /// The caches, in configured order.
    pub fn caches(&self) -> &[Cache] {
        &self.caches
    }

    /// The index of the cache in use.
    pub fn active(&self) -> Option<usize> {
        self.active
    }

    /// The table in use.
    pub fn table(&self) -> &VrpTable {
        &self.table
    }

    /// The ASPAs in use (the active cache's).
    pub fn aspa(&self) -> &AspaTable {
        &self.aspa
    }

    /// The customer ASes whose ASPA in use changed since the last call,
    /// sorted, each once.
    pub fn take_aspa_changes(&mut self) -> Vec<u32> {
        let mut v = std::mem::take(&mut self.aspa_changed);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Cache `i` connected (its data, if any, stays in use until new data).
    pub fn connected(&mut self, i: usize) {
        if let Some(c) = self.caches.get_mut(i) {
            if c.state == CacheState::Idle {
                c.state = CacheState::Connecting;
            }
        }
    }

    /// Cache `i` lost its connection at `now`: its data goes Stale (or it
    /// is Idle if it had none). Returns the changed VRP prefixes.
    pub fn lost(&mut self, i: usize, now: Instant) -> Vec<Prefix> {
        if let Some(c) = self.caches.get_mut(i) {
            c.state = if c.last_update.is_some() {
                CacheState::Stale
            } else {
                CacheState::Idle
            };
        }
        self.expire(now)
    }

    /// Cache `i` delivered data at `now`. A corrupt incremental update
    /// (withdrawing what it never announced, RFC 8210 §5.6 error 6/7) is
    /// applied as far as it goes; the edge resets the session on it.
    /// Returns the changed VRP prefixes of the table in use.
    pub fn deliver(&mut self, i: usize, d: Delivery, now: Instant) -> Vec<Prefix> {
        let Some(c) = self.caches.get_mut(i) else {
            return Vec::new();
        };
        if d.reset {
            c.vrps.clear();
            c.aspas = AspaTable::default();
        }
        for v in &d.withdraw {
            c.vrps.remove(v);
        }
        c.vrps.extend(d.announce.iter().copied());
        for a in &d.aspa_withdraw {
            c.aspas.remove(*a);
        }
        for a in &d.aspa_announce {
            c.aspas.insert(a.clone());
        }
        c.state = CacheState::Synced;
        c.serial = Some(d.serial);
        c.session = Some(d.session);
        if let Some(e) = d.expire {
            c.expire = e;
        }
        c.last_update = Some(now);
        if self.active == Some(i) && !d.reset {
            // The cache in use stays preferred (it was the best usable
            // one and still is): apply its difference, no set compare.
            self.drop_expired(now);
            let mut changed = Vec::new();
            for v in &d.withdraw {
                if self.table.remove(v) {
                    changed.push(v.prefix());
                }
            }
            for v in &d.announce {
                if self.table.insert(*v) {
                    changed.push(v.prefix());
                }
            }
            changed.sort_unstable();
            changed.dedup();
            self.sync_aspa();
            return changed;
        }
        self.expire(now)
    }

    /// Drops the data of caches whose Expire Interval ran out, then
    /// re-selects. Returns the changed VRP prefixes.
    pub fn expire(&mut self, now: Instant) -> Vec<Prefix> {
        self.drop_expired(now);
        self.reselect()
    }

    fn drop_expired(&mut self, now: Instant) {
        for c in &mut self.caches {
            let old = c.last_update.is_some_and(|t| now.since(t) >= c.expire);
            if c.state == CacheState::Stale && old {
                c.state = CacheState::Idle;
                c.vrps.clear();
                c.aspas = AspaTable::default();
                c.serial = None;
                c.session = None;
                c.last_update = None;
            }
        }
    }

    /// The next time [`Self::expire`] may change something.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.caches
            .iter()
            .filter(|c| c.state == CacheState::Stale)
            .filter_map(|c| Some(c.last_update? + c.expire))
            .min()
    }

    fn usable(c: &Cache) -> bool {
        matches!(c.state, CacheState::Synced | CacheState::Stale)
    }

    /// Picks the preferred usable cache and brings the table to its set.
    fn reselect(&mut self) -> Vec<Prefix> {
        let best = (self.caches.iter().enumerate())
            .filter(|(_, c)| Self::usable(c))
            .min_by_key(|(i, c)| (c.preference, *i))
            .map(|(i, _)| i);
        self.active = best;
        let empty = HashSet::new();
        let want = best
            .and_then(|i| self.caches.get(i))
            .map_or(&empty, |c| &c.vrps);
        let mut changed = Vec::new();
        let gone: Vec<Vrp> = self.table.iter().filter(|v| !want.contains(v)).collect();
        for v in gone {
            self.table.remove(&v);
            changed.push(v.prefix());
        }
        for v in want {
            if self.table.insert(*v) {
                changed.push(v.prefix());
            }
        }
        changed.sort_unstable();
        changed.dedup();
        self.sync_aspa();
        changed
    }

    /// Brings the ASPAs in use to the active cache's, noting the changed
    /// customers.
    fn sync_aspa(&mut self) {
        let empty = AspaTable::default();
        let want = (self.active)
            .and_then(|i| self.caches.get(i))
            .map_or(&empty, |c| &c.aspas);
        if *want != self.aspa {
            self.aspa_changed.extend(self.aspa.diff(want));
            self.aspa = want.clone();
        }
    }
}
