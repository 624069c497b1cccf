//! [`Stats`]: counts over a stream of records.

use crate::header::types;
use crate::record::{Body, Record};
use base::{Asn, Prefix};
use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

/// Accumulated statistics. Feed records with [`Stats::add_record`]; prefixes
/// inside BGP4MP messages need a BGP decoder, so callers that have one add
/// them with [`Stats::add_prefix`].
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Records seen (decoded ones, via `add_record`).
    pub records: u64,
    /// Records per (type, subtype).
    pub by_type: BTreeMap<(u16, u16), u64>,
    /// RIB entries (TABLE_DUMP records count one each).
    pub rib_entries: u64,
    /// BGP4MP messages and state changes.
    pub messages: u64,
    /// BGP4MP state changes.
    pub state_changes: u64,
    /// Distinct (peer IP, peer AS) that appear in RIB entries, TABLE_DUMP
    /// records and BGP4MP records.
    pub peers: HashSet<(IpAddr, Asn)>,
    /// Largest PEER_INDEX_TABLE seen (number of peers).
    pub peer_table_size: usize,
    /// Distinct prefixes, as carried (host bits kept).
    pub prefixes: HashSet<Prefix>,
    /// Earliest and latest header timestamps (seconds, microseconds).
    pub first_time: Option<(u32, u32)>,
    /// Latest header timestamp (seconds, microseconds).
    pub last_time: Option<(u32, u32)>,
    /// RIB entries whose peer index is not in the peer table.
    pub unresolved_peer_indexes: u64,
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one prefix (hook for BGP4MP messages decoded elsewhere).
    pub fn add_prefix(&mut self, p: Prefix) {
        self.prefixes.insert(p);
    }

    /// Counts one peer.
    pub fn add_peer(&mut self, ip: IpAddr, asn: Asn) {
        self.peers.insert((ip, asn));
    }

    /// Counts one record: its type, time, entries, peers and prefixes.
    pub fn add_record(&mut self, rec: &Record<'_>) {
        self.records += 1;
        *self
            .by_type
            .entry((rec.header.mrt_type, rec.header.subtype))
            .or_insert(0) += 1;
        let t = (rec.header.timestamp, rec.header.microseconds.unwrap_or(0));
        self.first_time = Some(self.first_time.map_or(t, |f| f.min(t)));
        self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
        match &rec.body {
            Body::TableDump(d) => {
                self.rib_entries += 1;
                self.prefixes.insert(d.prefix);
                self.peers.insert((d.peer_ip, d.peer_as));
            }
            Body::PeerIndexTable(p) => {
                self.peer_table_size = self.peer_table_size.max(usize::from(p.peer_count));
            }
            Body::GeoPeerTable(_) => {}
            Body::Rib(r) => {
                self.prefixes.insert(r.prefix);
                self.add_entries(rec, r.entries());
            }
            Body::RibGeneric(r) => {
                if let Some(p) = r.prefix() {
                    self.prefixes.insert(p);
                }
                self.add_entries(rec, r.entries());
            }
            Body::StateChange(s) => {
                self.state_changes += 1;
                self.peers.insert((s.peering.peer_ip, s.peering.peer_as));
            }
            Body::Message(m) => {
                self.messages += 1;
                self.peers.insert((m.peering.peer_ip, m.peering.peer_as));
            }
        }
    }

    fn add_entries<'a>(
        &mut self,
        rec: &Record<'_>,
        entries: impl Iterator<Item = crate::rib::RibEntry<'a>>,
    ) {
        // Consecutive entries usually come from different peers, but the
        // set insert is cheap enough; skip it when the index repeats.
        let mut last: Option<u16> = None;
        for e in entries {
            self.rib_entries += 1;
            if last == Some(e.peer_index) {
                continue;
            }
            last = Some(e.peer_index);
            match rec.peer(e.peer_index) {
                Some(p) => {
                    self.peers.insert((p.ip, p.asn));
                }
                None => self.unresolved_peer_indexes += 1,
            }
        }
    }

    /// Records of one MRT type, all subtypes.
    pub fn records_of_type(&self, mrt_type: u16) -> u64 {
        self.by_type
            .range((mrt_type, 0)..=(mrt_type, u16::MAX))
            .map(|(_, n)| n)
            .sum()
    }

    /// True when any record had a type with a microsecond timestamp.
    pub fn has_microseconds(&self) -> bool {
        self.records_of_type(types::BGP4MP_ET) > 0
    }
}
