//! The UPDATE encoder: turns an [`ExportBatch`] drained from a shard's
//! Adj-RIB-Out into complete BGP UPDATE messages for one session
//! (RFC 4271 §4.3 and §9.2, RFC 4760, RFC 6793 §4.2.2, RFC 7911, RFC 8654,
//! RFC 8950).
//!
//! * Per-session rewriting happens here, once per attribute set, so that
//!   the RIB's sets stay shared between peers: towards eBGP the local AS is
//!   prepended (not for route-server clients, RFC 7947 §2.2.2) and
//!   LOCAL_PREF, ORIGINATOR_ID and CLUSTER_LIST are dropped; towards iBGP a
//!   missing LOCAL_PREF becomes 100; 2-octet peers get AS_TRANS plus
//!   AS4_PATH / AS4_AGGREGATOR; unknown transitive attributes get the
//!   Partial bit and unknown non-transitive ones are dropped (§9.1.3); OTC
//!   is added towards Customers, Peers and RS-Clients (RFC 9234 §5, see
//!   [`UpdateEncoder::set_peer_role`]).
//! * MULTI_EXIT_DISC is *not* touched here: like FRR, the received MED is
//!   removed towards eBGP before export policy runs, so that a MED the
//!   policy sets still goes out. That happens in
//!   [`crate::Propagation`], which sees both ends of the route.
//! * IPv4 unicast travels in the classic fields with NEXT_HOP, unless its
//!   next hop is IPv6 (RFC 8950: then in MP_REACH_NLRI with AFI 1); IPv6
//!   unicast travels in MP_REACH_NLRI / MP_UNREACH_NLRI with a global next
//!   hop, plus the link-local one when the session has one (RFC 2545 §3).
//! * IPv4 routes go out with an IPv6 next hop (RFC 8950) only on the
//!   families of [`EncodeParams::ext_next_hop`] (the Extended Next Hop
//!   Encoding capability was negotiated); elsewhere, as BIRD does, an IPv6
//!   next hop is replaced by our IPv4 address on the session, and without
//!   one the route is not sent.
//! * Multicast (SAFI 2, RFC 4760 §6) routes, from their own table, are
//!   encoded by [`UpdateEncoder::encode_safi`]: both address families in
//!   MP_REACH_NLRI / MP_UNREACH_NLRI with SAFI 2, only when that family
//!   was negotiated.
//! * Prefixes are packed as many per message as fit (4096 octets, or 65535
//!   with extended messages, RFC 8654); nothing is allocated per prefix.
//! * ADD-PATH send (RFC 7911): on families in `add_path_tx` every NLRI
//!   carries a path identifier: the one the ADD-PATH Adj-RIB-Out allocated
//!   (`announce_paths` / `withdraw_paths` of the batch), or 1 for a batch
//!   from a single-path Adj-RIB-Out. On other families the identifier is
//!   omitted.

use std::net::{Ipv4Addr, Ipv6Addr};

use base::{Afi, AfiSafi, Asn, Prefix, Safi};
use bgp_wire::consts::{attr_flags as af, attr_type as at, msg_type};
use bgp_wire::emit;
use bgp_wire::{NextHop, HEADER_LEN};

use crate::encode_attrs::{put_attr, AttrBlock, Rewrite};
use crate::shard::RibShard;
use crate::types::ExportBatch;

/// Which next hop to send.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum NextHopMode {
    /// Self towards eBGP, unchanged towards iBGP and route-server clients
    /// (BIRD's default).
    #[default]
    Auto,
    /// Always our own address.
    SelfAlways,
    /// Always the route's next hop (third-party next hop).
    Unchanged,
}

/// What the encoder needs to know about one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeParams {
    /// Our AS, prepended towards external peers.
    pub local_asn: Asn,
    /// The peer's AS.
    pub peer_asn: Asn,
    /// External session (no LOCAL_PREF sent, local AS prepended).
    pub ebgp: bool,
    /// RFC 6793 negotiated; if false, AS_PATH carries 2-octet ASNs with
    /// AS_TRANS and the real path goes in AS4_PATH (and AS4_AGGREGATOR).
    pub four_octet_asn: bool,
    /// RFC 8654 negotiated: messages up to 65535 octets, else 4096.
    pub extended_message: bool,
    /// Negotiated families; empty means IPv4 unicast only (no
    /// Multiprotocol capability exchanged, RFC 4760 §8). Prefixes of other
    /// families are not sent.
    pub families: Vec<AfiSafi>,
    /// Families on which we send path identifiers (RFC 7911).
    pub add_path_tx: Vec<AfiSafi>,
    /// Where the next hop of announced routes points.
    pub next_hop: NextHopMode,
    /// IPv4 families whose routes may go out with an IPv6 next hop: the
    /// peer and we advertised the Extended Next Hop Encoding capability
    /// for them (RFC 8950 §3).
    pub ext_next_hop: Vec<AfiSafi>,
    /// Our IPv4 address on the session, for next-hop-self.
    pub local_v4: Option<Ipv4Addr>,
    /// Our global IPv6 address on the session, for next-hop-self.
    pub local_v6: Option<Ipv6Addr>,
    /// Our link-local IPv6 address, sent beside the global one (RFC 2545 §3).
    pub local_v6_link_local: Option<Ipv6Addr>,
    /// RFC 7947 route-server client: no local AS prepend, next hop
    /// unchanged (under [`NextHopMode::Auto`]).
    pub route_server: bool,
}

/// Where an IPv4 route's next hop goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum V4Nh {
    /// NEXT_HOP attribute, NLRI in the classic field.
    Classic(Ipv4Addr),
    /// RFC 8950: IPv6 next hop, NLRI in MP_REACH_NLRI with AFI 1.
    Mp(NextHop),
}

/// One session's encoder; see the module docs.
#[derive(Debug)]
pub struct UpdateEncoder {
    p: EncodeParams,
    role: Option<u8>,
    /// RFC 5065: the peer is in another member AS of our confederation.
    confed: bool,
    max: usize,
    /// The SAFI being encoded; `v4`, `v6` and `add_path_*` are for it.
    safi: Safi,
    v4: bool,
    v6: bool,
    add_path_v4: bool,
    add_path_v6: bool,
    attrs: AttrBlock,
}

const MP_REACH_FLAGS: u8 = af::OPTIONAL | af::EXTENDED_LENGTH;

/// An NLRI to encode: a prefix, and the path identifier it goes under on
/// ADD-PATH families. Generic so that the single-path case stays a plain
/// slice of prefixes.
trait Item {
    fn prefix(&self) -> &Prefix;
    fn path_id(&self) -> u32;
}

impl Item for Prefix {
    fn prefix(&self) -> &Prefix {
        self
    }
    /// A single-path Adj-RIB-Out sends its one path as identifier 1.
    fn path_id(&self) -> u32 {
        1
    }
}

impl Item for (Prefix, u32) {
    fn prefix(&self) -> &Prefix {
        &self.0
    }
    fn path_id(&self) -> u32 {
        self.1
    }
}

fn patch_u16(out: &mut [u8], at: usize, v: usize) {
    if let Some(s) = out.get_mut(at..at + 2) {
        s.copy_from_slice(&(v.min(u16::MAX as usize) as u16).to_be_bytes());
    }
}

/// Patches the 2-octet length field at `at` to cover everything after it.
fn patch_len(out: &mut [u8], at: usize) {
    let n = out.len().saturating_sub(at + 2);
    patch_u16(out, at, n);
}

/// Starts an UPDATE (bgp-wire's framing).
fn begin(out: &mut Vec<u8>) -> usize {
    emit::begin_message(out, msg_type::UPDATE)
}

/// Patches the length of the UPDATE begun at `start` (the encoder sizes
/// its messages itself).
fn finish(out: &mut [u8], start: usize) {
    emit::set_message_len(out, start);
}

fn afi_safi_bytes(af: AfiSafi) -> [u8; 3] {
    let a = af.afi.to_u16().to_be_bytes();
    [a[0], a[1], af.safi.to_u8()]
}

impl UpdateEncoder {
    /// An encoder for one session.
    pub fn new(p: EncodeParams) -> UpdateEncoder {
        let mut e = UpdateEncoder {
            max: if p.extended_message { 65535 } else { 4096 },
            safi: Safi::Unicast,
            v4: false,
            v6: false,
            add_path_v4: false,
            add_path_v6: false,
            role: None,
            confed: false,
            attrs: AttrBlock::default(),
            p,
        };
        e.set_safi(Safi::Unicast);
        e
    }

    /// Encode routes of `safi` from now on.
    fn set_safi(&mut self, safi: Safi) {
        let p = &self.p;
        let has = |afi: Afi| p.families.contains(&AfiSafi::new(afi, safi));
        self.safi = safi;
        self.v4 = has(Afi::Ipv4) || (p.families.is_empty() && safi == Safi::Unicast);
        self.v6 = has(Afi::Ipv6);
        self.add_path_v4 = p.add_path_tx.contains(&AfiSafi::new(Afi::Ipv4, safi));
        self.add_path_v6 = p.add_path_tx.contains(&AfiSafi::new(Afi::Ipv6, safi));
    }

    /// Whether any family of `safi` was negotiated (its routes can go out).
    pub fn sends_safi(&self, safi: Safi) -> bool {
        let p = &self.p;
        [Afi::Ipv4, Afi::Ipv6]
            .iter()
            .any(|&afi| p.families.contains(&AfiSafi::new(afi, safi)))
            || (safi == Safi::Unicast && p.families.is_empty())
    }

    /// The session parameters.
    pub fn params(&self) -> &EncodeParams {
        &self.p
    }

    /// The RFC 9234 role code we see the peer as (0 Provider, 1 RS, 2
    /// RS-Client, 3 Customer, 4 Peer). Towards a Customer, Peer or
    /// RS-Client, routes without ONLY_TO_CUSTOMER get one with the local AS
    /// (RFC 9234 §5). Default: no role.
    pub fn set_peer_role(&mut self, role: Option<u8>) {
        self.role = role;
    }

    /// RFC 5065: the peer is in another member AS of our confederation
    /// (`ebgp` set, `local_asn` our member AS). Our member AS goes in an
    /// AS_CONFED_SEQUENCE, confederation segments and LOCAL_PREF are sent,
    /// ORIGINATOR_ID and CLUSTER_LIST are not, and under
    /// [`NextHopMode::Auto`] the next hop is left unchanged, as inside an
    /// AS. Default: false.
    pub fn set_confed_member(&mut self, confed: bool) {
        self.confed = confed;
    }

    /// Whether [`Self::set_confed_member`] is on.
    pub fn confed_member(&self) -> bool {
        self.confed
    }

    /// Whether this encoder writes the same bytes as `other` for every
    /// batch: the same parameters and role, the peer's AS aside (it is
    /// kept for the record and never written). Sessions whose encoders
    /// encode alike and that drain the same batch of one update group may
    /// share one encoding (issue 17, ADR 0005).
    pub fn encodes_like(&self, other: &UpdateEncoder) -> bool {
        let (a, b) = (&self.p, &other.p);
        let EncodeParams {
            local_asn,
            peer_asn: _,
            ebgp,
            four_octet_asn,
            extended_message,
            families,
            add_path_tx,
            next_hop,
            ext_next_hop,
            local_v4,
            local_v6,
            local_v6_link_local,
            route_server,
        } = a;
        self.role == other.role
            && self.confed == other.confed
            && self.max == other.max
            && *local_asn == b.local_asn
            && *ebgp == b.ebgp
            && *four_octet_asn == b.four_octet_asn
            && *extended_message == b.extended_message
            && *families == b.families
            && *add_path_tx == b.add_path_tx
            && *next_hop == b.next_hop
            && *ext_next_hop == b.ext_next_hop
            && *local_v4 == b.local_v4
            && *local_v6 == b.local_v6
            && *local_v6_link_local == b.local_v6_link_local
            && *route_server == b.route_server
    }

    /// Largest message this session accepts.
    pub fn max_message_len(&self) -> usize {
        self.max
    }

    fn rewrite(&self) -> Rewrite {
        Rewrite {
            local_asn: self.p.local_asn,
            ebgp: self.p.ebgp,
            four_octet_asn: self.p.four_octet_asn,
            route_server: self.p.route_server,
            role: self.role,
            confed: self.confed,
        }
    }

    /// The identifier to put before `p`'s NLRI, if its family sends them.
    fn path_id<T: Item>(&self, p: &T) -> Option<u32> {
        let on = match p.prefix() {
            Prefix::V4(_) => self.add_path_v4,
            Prefix::V6(_) => self.add_path_v6,
        };
        on.then(|| p.path_id())
    }

    fn family_on(&self, p: &Prefix) -> bool {
        match p {
            Prefix::V4(_) => self.v4,
            Prefix::V6(_) => self.v6,
        }
    }

    /// Whether to put our own address as next hop for a route whose next
    /// hop is `route_nh`.
    fn use_self(&self) -> bool {
        match self.p.next_hop {
            NextHopMode::SelfAlways => true,
            NextHopMode::Unchanged => false,
            NextHopMode::Auto => self.p.ebgp && !self.p.route_server && !self.confed,
        }
    }

    /// Our IPv6 next hop: global plus link-local when both are known
    /// (RFC 2545 §3), else whichever is known, else the IPv4-mapped form of
    /// our IPv4 address (IPv6 routes over an IPv4 session).
    fn self_v6(&self) -> Option<NextHop> {
        match (self.p.local_v6, self.p.local_v6_link_local) {
            (Some(g), Some(l)) => Some(NextHop::V6LinkLocal(g, l)),
            (Some(g), None) => Some(NextHop::V6(g)),
            (None, Some(l)) => Some(NextHop::V6(l)),
            (None, None) => self.p.local_v4.map(|a| NextHop::V6(a.to_ipv6_mapped())),
        }
    }

    /// RFC 8950: whether IPv4 routes of the current SAFI may carry an IPv6
    /// next hop on this session.
    fn v6_next_hop_ok(&self) -> bool {
        self.p
            .ext_next_hop
            .contains(&AfiSafi::new(Afi::Ipv4, self.safi))
    }

    fn nh_v4(&self, route: Option<NextHop>) -> Option<V4Nh> {
        let keep = match route {
            _ if self.use_self() => None,
            Some(NextHop::V4(a)) => Some(V4Nh::Classic(a)),
            // A link-local next hop only means something on its own link;
            // the global part goes on.
            Some(NextHop::V6(g) | NextHop::V6LinkLocal(g, _))
                if !g.is_unicast_link_local() && self.v6_next_hop_ok() =>
            {
                Some(V4Nh::Mp(NextHop::V6(g)))
            }
            _ => None,
        };
        keep.or_else(|| match self.p.local_v4 {
            Some(a) => Some(V4Nh::Classic(a)),
            None if self.v6_next_hop_ok() => self.self_v6().map(V4Nh::Mp),
            None => None,
        })
    }

    fn nh_v6(&self, route: Option<NextHop>) -> Option<NextHop> {
        let keep = match route {
            _ if self.use_self() => None,
            Some(NextHop::V6(g) | NextHop::V6LinkLocal(g, _)) if !g.is_unicast_link_local() => {
                Some(NextHop::V6(g))
            }
            Some(NextHop::V4(a)) => Some(NextHop::V6(a.to_ipv6_mapped())),
            _ => None,
        };
        keep.or_else(|| self.self_v6())
    }

    /// Appends complete UPDATE messages (19-byte header included) for
    /// `batch` to `out`, packing as many prefixes per message as fit;
    /// withdrawals are packed too. Returns the number of messages written.
    /// Prefixes of families not negotiated are skipped, as are groups whose
    /// attributes alone do not fit a message or that have no usable next
    /// hop (no local address of the needed family).
    pub fn encode(&mut self, shard: &RibShard, batch: &ExportBatch, out: &mut Vec<u8>) -> usize {
        self.encode_safi(shard, batch, Safi::Unicast, out)
    }

    /// [`Self::encode`] for a batch of routes of `safi` (unicast, or
    /// multicast from its own table: RFC 4760 §6, all in MP_REACH_NLRI /
    /// MP_UNREACH_NLRI with that SAFI).
    pub fn encode_safi(
        &mut self,
        shard: &RibShard,
        batch: &ExportBatch,
        safi: Safi,
        out: &mut Vec<u8>,
    ) -> usize {
        self.set_safi(safi);
        let mut n = self.withdraw(&batch.withdraw, out);
        n += self.withdraw(&batch.withdraw_paths, out);
        for (h, prefixes) in &batch.announce {
            n += self.announce_group(shard, *h, prefixes, out);
        }
        for (h, paths) in &batch.announce_paths {
            n += self.announce_group(shard, *h, paths, out);
        }
        n
    }

    /// The withdrawals of the current SAFI in `list`.
    fn withdraw<T: Item>(&self, list: &[T], out: &mut Vec<u8>) -> usize {
        let mut n = 0;
        if self.safi == Safi::Unicast {
            n += self.withdraw_v4(list, out);
        } else if self.v4 {
            n += self.withdraw_mp(list, Afi::Ipv4, out);
        }
        if self.v6 {
            n += self.withdraw_mp(list, Afi::Ipv6, out);
        }
        n
    }

    /// The messages for one attribute set.
    fn announce_group<T: Item>(
        &mut self,
        shard: &RibShard,
        h: crate::AttrHandle,
        prefixes: &[T],
        out: &mut Vec<u8>,
    ) -> usize {
        let Some(set) = shard.attrs(h) else {
            return 0;
        };
        if !prefixes.iter().any(|p| self.family_on(p.prefix())) {
            return 0;
        }
        let rw = self.rewrite();
        self.attrs.build(set, &rw);
        let route_nh = set.next_hop();
        let mut n = 0;
        let v4_fam = AfiSafi::new(Afi::Ipv4, self.safi);
        if self.v4 {
            match self.nh_v4(route_nh) {
                Some(V4Nh::Classic(a)) if self.safi == Safi::Unicast => {
                    n += self.announce_v4(prefixes, a, out)
                }
                Some(V4Nh::Classic(a)) => {
                    n += self.announce_mp(prefixes, v4_fam, NextHop::V4(a), out)
                }
                Some(V4Nh::Mp(nh)) => n += self.announce_mp(prefixes, v4_fam, nh, out),
                None => {}
            }
        }
        if self.v6 {
            if let Some(nh) = self.nh_v6(route_nh) {
                let fam = AfiSafi::new(Afi::Ipv6, self.safi);
                n += self.announce_mp(prefixes, fam, nh, out);
            }
        }
        n
    }

    /// IPv4 unicast withdrawals in the Withdrawn Routes field.
    fn withdraw_v4<T: Item>(&self, list: &[T], out: &mut Vec<u8>) -> usize {
        if !self.v4 {
            return 0;
        }
        let mut it = list
            .iter()
            .filter(|p| matches!(p.prefix(), Prefix::V4(_)))
            .peekable();
        let mut n = 0;
        while it.peek().is_some() {
            let start = begin(out);
            let wlen_at = out.len();
            out.extend_from_slice(&[0, 0]);
            let room = self.max - HEADER_LEN - 4;
            let mut used = 0;
            while let Some(p) = it
                .next_if(|p| used + emit::prefix_len_on_wire(p.prefix(), self.add_path_v4) <= room)
            {
                used += emit::prefix_len_on_wire(p.prefix(), self.add_path_v4);
                emit::put_prefix(out, p.prefix(), self.path_id(p));
            }
            if used == 0 {
                // Unreachable (a prefix is at most 21 octets); do not loop.
                out.truncate(start);
                break;
            }
            patch_u16(out, wlen_at, used);
            out.extend_from_slice(&[0, 0]);
            finish(out, start);
            n += 1;
        }
        n
    }

    /// Withdrawals of `afi` (IPv6, or IPv4 multicast) in MP_UNREACH_NLRI
    /// (RFC 4760 §4) with the current SAFI.
    fn withdraw_mp<T: Item>(&self, list: &[T], afi: Afi, out: &mut Vec<u8>) -> usize {
        let add_path = match afi {
            Afi::Ipv4 => self.add_path_v4,
            _ => self.add_path_v6,
        };
        let mut it = list.iter().filter(|p| p.prefix().afi() == afi).peekable();
        let mut n = 0;
        while it.peek().is_some() {
            let start = begin(out);
            out.extend_from_slice(&[0, 0]);
            let alen_at = out.len();
            out.extend_from_slice(&[0, 0, MP_REACH_FLAGS, at::MP_UNREACH_NLRI, 0, 0]);
            let vstart = out.len();
            out.extend_from_slice(&afi_safi_bytes(AfiSafi::new(afi, self.safi)));
            let room = self.max - (out.len() - start);
            let mut used = 0;
            while let Some(p) =
                it.next_if(|p| used + emit::prefix_len_on_wire(p.prefix(), add_path) <= room)
            {
                used += emit::prefix_len_on_wire(p.prefix(), add_path);
                emit::put_prefix(out, p.prefix(), self.path_id(p));
            }
            if used == 0 {
                out.truncate(start);
                break;
            }
            patch_len(out, vstart - 2);
            patch_len(out, alen_at);
            finish(out, start);
            n += 1;
        }
        n
    }

    /// IPv4 prefixes of one group in the classic NLRI field.
    fn announce_v4<T: Item>(&self, prefixes: &[T], nh: Ipv4Addr, out: &mut Vec<u8>) -> usize {
        let mut it = prefixes
            .iter()
            .filter(|p| matches!(p.prefix(), Prefix::V4(_)))
            .peekable();
        let b = &self.attrs;
        let head = b.block.get(..b.split_nh).unwrap_or_default();
        let tail = b.block.get(b.split_nh..).unwrap_or_default();
        let alen = b.block.len() + 7;
        let Some(room) = self.max.checked_sub(HEADER_LEN + 4 + alen) else {
            return 0;
        };
        let mut n = 0;
        while it.peek().is_some() {
            let start = begin(out);
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(&(alen as u16).to_be_bytes());
            out.extend_from_slice(head);
            put_attr(out, af::TRANSITIVE, at::NEXT_HOP, &nh.octets());
            out.extend_from_slice(tail);
            let mut used = 0;
            while let Some(p) = it
                .next_if(|p| used + emit::prefix_len_on_wire(p.prefix(), self.add_path_v4) <= room)
            {
                used += emit::prefix_len_on_wire(p.prefix(), self.add_path_v4);
                emit::put_prefix(out, p.prefix(), self.path_id(p));
            }
            if used == 0 {
                out.truncate(start);
                break;
            }
            finish(out, start);
            n += 1;
        }
        n
    }

    /// Prefixes of `fam` in one group, in MP_REACH_NLRI (RFC 4760 §3),
    /// placed in type-code order among the other attributes.
    fn announce_mp<T: Item>(
        &self,
        prefixes: &[T],
        fam: AfiSafi,
        nh: NextHop,
        out: &mut Vec<u8>,
    ) -> usize {
        let want = |p: &&T| p.prefix().afi() == fam.afi;
        let add_path = match fam.afi {
            Afi::Ipv4 => self.add_path_v4,
            _ => self.add_path_v6,
        };
        let mut it = prefixes.iter().filter(want).peekable();
        let b = &self.attrs;
        let head = b.block.get(..b.split_mp).unwrap_or_default();
        let tail = b.block.get(b.split_mp..).unwrap_or_default();
        let nh_len = match nh {
            NextHop::V4(_) => 4,
            NextHop::V6(_) => 16,
            NextHop::V6LinkLocal(..) => 32,
        };
        // Attribute header (4, extended length) + AFI/SAFI (3) + next-hop
        // length (1) + next hop + reserved (1).
        let mp_fixed = 4 + 3 + 1 + nh_len + 1;
        let Some(room) = self
            .max
            .checked_sub(HEADER_LEN + 4 + b.block.len() + mp_fixed)
        else {
            return 0;
        };
        let mut n = 0;
        while it.peek().is_some() {
            let start = begin(out);
            out.extend_from_slice(&[0, 0]);
            let alen_at = out.len();
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(head);
            out.extend_from_slice(&[MP_REACH_FLAGS, at::MP_REACH_NLRI, 0, 0]);
            let vstart = out.len();
            out.extend_from_slice(&afi_safi_bytes(fam));
            out.push(nh_len as u8);
            match nh {
                NextHop::V4(a) => out.extend_from_slice(&a.octets()),
                NextHop::V6(g) => out.extend_from_slice(&g.octets()),
                NextHop::V6LinkLocal(g, l) => {
                    out.extend_from_slice(&g.octets());
                    out.extend_from_slice(&l.octets());
                }
            }
            out.push(0);
            let mut used = 0;
            while let Some(p) =
                it.next_if(|p| used + emit::prefix_len_on_wire(p.prefix(), add_path) <= room)
            {
                used += emit::prefix_len_on_wire(p.prefix(), add_path);
                emit::put_prefix(out, p.prefix(), add_path.then(|| p.path_id()));
            }
            if used == 0 {
                out.truncate(start);
                break;
            }
            patch_len(out, vstart - 2);
            out.extend_from_slice(tail);
            patch_len(out, alen_at);
            finish(out, start);
            n += 1;
        }
        n
    }

    /// Appends the End-of-RIB marker for `af` (RFC 4724 §2): an empty UPDATE
    /// for IPv4 unicast, else an UPDATE with an empty MP_UNREACH_NLRI.
    pub fn end_of_rib(&self, af: AfiSafi, out: &mut Vec<u8>) {
        let start = begin(out);
        out.extend_from_slice(&[0, 0]);
        if af == AfiSafi::IPV4_UNICAST {
            out.extend_from_slice(&[0, 0]);
        } else {
            out.extend_from_slice(&[0, 6, af::OPTIONAL, at::MP_UNREACH_NLRI, 3]);
            out.extend_from_slice(&afi_safi_bytes(af));
        }
        finish(out, start);
    }
}
