//! One peer's pre-encoded UPDATEs ([`Feed`]) and the per-peer session
//! facts they are encoded for ([`FeedParams`]): the types the encoders
//! (`pack`, [`crate::workload`], the MRT readers) and the senders
//! share, kept in a leaf module so that none of them needs another.

use base::Asn;
use std::net::{Ipv4Addr, Ipv6Addr};

/// RFC 4271 §4: without extended messages (RFC 8654) a message is at most
/// 4096 octets. Replay never negotiates extended messages, so every DUT
/// can take what we send.
pub const MAX_MESSAGE: usize = 4096;

/// Target size of one write: big enough that syscalls are not the
/// bottleneck, small enough that the per-second report moves smoothly.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Per-peer session facts that change the encoded attributes.
#[derive(Copy, Clone, Debug)]
pub struct FeedParams {
    /// The AS this replayed peer speaks as. With `as_recorded`, readers
    /// of recorded input put the recorded peer's AS here.
    pub local_as: Asn,
    /// The session speaks as the recorded peer (`--peer-as recorded`):
    /// recorded AS paths are sent as they are, not prepended with
    /// `local_as` (the recorded peer's AS already leads them); the MRT
    /// readers replace `local_as` with the recorded peer's AS.
    pub as_recorded: bool,
    /// iBGP: the path is sent as learned (no own AS prepended) with
    /// LOCAL_PREF (RFC 4271 §5.1.5); eBGP: our AS leads the path (§5.1.2).
    pub ibgp: bool,
    /// NEXT_HOP (RFC 4271 §5.1.3); normally the session's source address.
    pub next_hop: Ipv4Addr,
    /// Next hop of IPv6 routes (MP_REACH_NLRI, RFC 4760 §3); `None` uses
    /// the IPv4-mapped form of `next_hop` (RFC 4291 §2.5.5.2), which is
    /// what speakers put there for IPv6 routes over an IPv4 session.
    pub next_hop6: Option<Ipv6Addr>,
}

impl FeedParams {
    /// eBGP parameters with the next hop at `source`.
    pub fn ebgp(local_as: Asn, next_hop: Ipv4Addr) -> FeedParams {
        FeedParams {
            local_as,
            as_recorded: false,
            ibgp: false,
            next_hop,
            next_hop6: None,
        }
    }

    pub fn next_hop6(&self) -> Ipv6Addr {
        self.next_hop6
            .unwrap_or_else(|| self.next_hop.to_ipv6_mapped())
    }
}

/// One message inside [`Feed::bytes`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MsgInfo {
    /// End offset (exclusive); the message starts where the previous one
    /// ended.
    pub end: usize,
    /// Announced prefixes (NLRI plus MP_REACH_NLRI).
    pub prefixes: u32,
    /// Withdrawn prefixes (withdrawn routes plus MP_UNREACH_NLRI).
    pub withdrawn: u32,
}

/// A session event of an update trace (BGP4MP STATE_CHANGE, RFC 6396
/// §4.4.1), taking effect before message `before` of the feed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub before: u32,
    pub kind: EventKind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The recorded session left Established: close ours (Cease), so the
    /// DUT withdraws what this peer announced.
    Down,
    /// The recorded session reached Established: open ours again.
    Up,
}

/// One peer's pre-encoded UPDATEs, End-of-RIB not included.
#[derive(Clone, Debug, Default)]
pub struct Feed {
    /// Whole BGP messages back to back, ready to write.
    pub bytes: Vec<u8>,
    pub msgs: Vec<MsgInfo>,
    /// Trace time of each message in microseconds since the trace's first
    /// record; empty for workloads without timing (synthetic, RIB dumps).
    pub times_us: Vec<u64>,
    /// Sorted by `before`.
    pub events: Vec<Event>,
    pub messages: u64,
    pub prefixes: u64,
    pub withdrawn: u64,
    /// Distinct attribute sets, i.e. how well the routes packed.
    pub attr_sets: usize,
    /// Whether any message carries IPv6 (then IPv6 End-of-RIB is sent too).
    pub has_v6: bool,
    /// Who this peer is in the input ("AS3856 206.220.231.55"), or empty.
    pub label: String,
}

impl Feed {
    /// Appends one whole message.
    pub fn push_msg(&mut self, msg: &[u8], prefixes: u32, withdrawn: u32, time_us: Option<u64>) {
        self.bytes.extend_from_slice(msg);
        self.msgs.push(MsgInfo {
            end: self.bytes.len(),
            prefixes,
            withdrawn,
        });
        if let Some(t) = time_us {
            self.times_us.push(t);
        }
        self.messages += 1;
        self.prefixes += u64::from(prefixes);
        self.withdrawn += u64::from(withdrawn);
    }

    /// Appends `other`'s messages after this feed's (two inputs of one
    /// peer, played one after the other). Session events keep their place;
    /// times are kept only when both sides are timed, and `other`'s then
    /// start where this feed's end (`time_base`, the latest time of the
    /// earlier inputs, is added to them).
    pub fn append(&mut self, other: &Feed, time_base: u64) {
        let (k, off) = (self.msgs.len() as u32, self.bytes.len());
        self.bytes.extend_from_slice(&other.bytes);
        self.msgs.extend(other.msgs.iter().map(|m| MsgInfo {
            end: m.end + off,
            ..*m
        }));
        self.times_us
            .extend(other.times_us.iter().map(|t| t.saturating_add(time_base)));
        self.events.extend(other.events.iter().map(|e| Event {
            before: e.before + k,
            kind: e.kind,
        }));
        self.messages += other.messages;
        self.prefixes += other.prefixes;
        self.withdrawn += other.withdrawn;
        self.attr_sets += other.attr_sets;
        self.has_v6 |= other.has_v6;
        if self.label.is_empty() {
            self.label.clone_from(&other.label);
        }
    }

    /// Where message `k` starts in `bytes`.
    pub fn start_of(&self, k: usize) -> usize {
        match k.checked_sub(1) {
            None => 0,
            Some(p) => self.msgs.get(p).map_or(self.bytes.len(), |m| m.end),
        }
    }

    /// The bytes of messages `a..b`.
    pub fn range(&self, a: usize, b: usize) -> &[u8] {
        let end = self.start_of(b);
        self.bytes.get(self.start_of(a)..end).unwrap_or(&[])
    }

    /// Announced and withdrawn prefixes in messages `a..b`.
    pub fn counts(&self, a: usize, b: usize) -> (u64, u64) {
        self.msgs
            .get(a..b)
            .unwrap_or(&[])
            .iter()
            .fold((0, 0), |(p, w), m| {
                (p + u64::from(m.prefixes), w + u64::from(m.withdrawn))
            })
    }

    /// Trace time of message `k`, if the feed is timed.
    pub fn time_us(&self, k: usize) -> Option<u64> {
        self.times_us.get(k).copied()
    }

    /// The end of the next write starting at message `a`: whole messages
    /// up to about [`CHUNK_BYTES`], never past `limit`.
    pub fn chunk_end(&self, a: usize, limit: usize) -> usize {
        let start = self.start_of(a);
        let mut b = a;
        while b < limit {
            b += 1;
            if self.start_of(b) - start >= CHUNK_BYTES {
                break;
            }
        }
        b
    }
}
