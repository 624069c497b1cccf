//! Evaluation: matching against either an editable [`AttrsBuilder`]
//! (import) or a frozen [`AttrSet`] read in place (export), and the actions,
//! which always edit a builder.

use std::net::{IpAddr, Ipv4Addr};

use base::{Afi, Asn, Prefix};
use bgp_rib::{AttrSet, AttrsBuilder, ExportVerdict, Verdict};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{
    AsPath, AsPathView, AsSegment, AttrValue, ExtCommunity, LargeCommunity, NextHop, PathAttr,
    SegmentType,
};

use crate::compile::{Act, Cond, Med, NextHopAct, Policy};
use crate::regex::AsPathRegex;

/// What a policy knows about the session a route is evaluated for.
///
/// On import `neighbor`/`neighbor_asn` are the peer the route came from; on
/// export, the peer it is being sent to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RouteCtx {
    /// The peer's session address.
    pub neighbor: IpAddr,
    /// The peer's AS.
    pub neighbor_asn: Asn,
    /// Prepended by `prepend` unless `prepend_as` is given.
    pub local_asn: Asn,
    /// Our BGP identifier.
    pub router_id: Ipv4Addr,
    /// Our address on the session: `next_hop = "self"`. When absent, or of
    /// a family that cannot carry the route (IPv4 for an IPv6 prefix), the
    /// action leaves the next hop alone.
    pub local_addr: Option<IpAddr>,
    /// The route's address family. Matching uses the prefix's own family;
    /// this field is informational for callers that log or dispatch on it.
    pub afi: Afi,
    /// The route's RFC 6811 origin validation state, for `rpki = "..."`
    /// matches; the caller computes it (NotFound without RPKI).
    pub rpki: rov::RovState,
    /// The route's ASPA AS_PATH verification state, for `aspa = "..."`
    /// matches; None when it is not verified (no role towards the
    /// neighbour it came from, iBGP, ours, or no RPKI), which no
    /// `aspa` match accepts.
    pub aspa: Option<rov::AspaState>,
}

impl Default for RouteCtx {
    fn default() -> Self {
        RouteCtx {
            neighbor: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            neighbor_asn: Asn(0),
            local_asn: Asn(0),
            router_id: Ipv4Addr::UNSPECIFIED,
            local_addr: None,
            afi: Afi::Ipv4,
            rpki: rov::RovState::NotFound,
            aspa: None,
        }
    }
}

/// The origin AS of RFC 6811 §2 for route origin validation: the last ASN
/// of an AS_PATH ending in an AS_SEQUENCE; `local_asn` for an empty path
/// (a route we originate, or one from an iBGP peer that did); None (the
/// RFC's NONE, which matches no VRP) when the path ends in an AS_SET or a
/// confederation segment.
pub fn origin_of_builder(b: &AttrsBuilder, local_asn: Asn) -> Option<u32> {
    let v = BuilderView(b);
    // Segments without ASNs say nothing (an empty AS_SEQUENCE is how
    // some encoders write an empty path).
    let last = v
        .as_path()
        .and_then(|p| p.segments.iter().rev().find(|s| !s.asns.is_empty()));
    let Some(last) = last else {
        return Some(local_asn.0);
    };
    if last.kind != SegmentType::Sequence {
        return None;
    }
    last.asns.last().map(|a| a.0)
}

/// The AS_PATH as ASPA verification reads it: the ASes of its
/// AS_SEQUENCE segments into `out` (cleared first), most recent first;
/// returns whether it has an AS_SET (which makes it Invalid).
/// Confederation segments are left out (they never cross an eBGP
/// boundary, RFC 5065 §5.3).
pub fn aspa_path_of_builder(b: &AttrsBuilder, out: &mut Vec<u32>) -> bool {
    out.clear();
    let mut set = false;
    for s in BuilderView(b)
        .as_path()
        .into_iter()
        .flat_map(|p| p.segments.iter())
    {
        match s.kind {
            SegmentType::Sequence => out.extend(s.asns.iter().map(|a| a.0)),
            SegmentType::Set => set = true,
            _ => {}
        }
    }
    set
}

/// [`aspa_path_of_builder`] for a stored attribute set.
pub fn aspa_path_of_set(set: &AttrSet, out: &mut Vec<u32>) -> bool {
    out.clear();
    let mut has_set = false;
    if let Some(p) = SetView::new(set).as_path {
        for s in p.segments() {
            match s.kind {
                SegmentType::Sequence => out.extend(s.asns().map(|a| a.0)),
                SegmentType::Set => has_set = true,
                _ => {}
            }
        }
    }
    has_set
}

/// [`origin_of_builder`] for a stored attribute set.
pub fn origin_of_set(set: &AttrSet, local_asn: Asn) -> Option<u32> {
    let v = SetView::new(set);
    let Some(p) = v.as_path else {
        return Some(local_asn.0);
    };
    let Some(last) = p.segments().filter(|s| s.asns().next().is_some()).last() else {
        return Some(local_asn.0);
    };
    if last.kind != SegmentType::Sequence {
        return None;
    }
    last.asns().last().map(|a| a.0)
}

/// Read access to a route's attributes, without allocating.
trait Attrs {
    fn path_len(&self) -> u32;
    fn origin_as(&self) -> Option<u32>;
    fn path_matches(&self, re: &AsPathRegex) -> bool;
    fn any_community(&self, f: impl Fn(u32) -> bool) -> bool;
    fn any_ext(&self, f: impl Fn(&ExtCommunity) -> bool) -> bool;
    fn any_large(&self, f: impl Fn(&LargeCommunity) -> bool) -> bool;
    fn next_hop(&self) -> Option<IpAddr>;
}

fn nh_addr(n: NextHop) -> IpAddr {
    match n {
        NextHop::V4(a) => IpAddr::V4(a),
        NextHop::V6(a) | NextHop::V6LinkLocal(a, _) => IpAddr::V6(a),
    }
}

/// An [`AttrSet`] scanned once for the attributes policy reads.
struct SetView<'a> {
    set: &'a AttrSet,
    as_path: Option<AsPathView<'a>>,
    comm: &'a [u8],
    ext: &'a [u8],
    large: &'a [u8],
}

impl<'a> SetView<'a> {
    fn new(set: &'a AttrSet) -> SetView<'a> {
        let mut v = SetView {
            set,
            as_path: None,
            comm: &[],
            ext: &[],
            large: &[],
        };
        for a in set.attrs().map_while(Result::ok) {
            match a.type_code {
                // Stored sets always use 4-octet ASNs.
                at::AS_PATH => v.as_path = AsPathView::parse(a.value, true),
                at::COMMUNITIES => v.comm = a.value,
                at::EXTENDED_COMMUNITIES => v.ext = a.value,
                at::LARGE_COMMUNITY => v.large = a.value,
                _ => {}
            }
        }
        v
    }
}

fn be32(b: &[u8], i: usize) -> u32 {
    b.get(i..i + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_be_bytes)
}

impl Attrs for SetView<'_> {
    fn path_len(&self) -> u32 {
        u32::from(self.set.summary().as_path_len())
    }
    fn origin_as(&self) -> Option<u32> {
        self.as_path.and_then(|p| p.origin_asn()).map(|a| a.0)
    }
    fn path_matches(&self, re: &AsPathRegex) -> bool {
        let segs = self.as_path.into_iter().flat_map(|p| p.segments());
        re.matches(segs.flat_map(|s| s.asns()).map(|a| a.0))
    }
    fn any_community(&self, f: impl Fn(u32) -> bool) -> bool {
        self.comm.chunks_exact(4).any(|c| f(be32(c, 0)))
    }
    fn any_ext(&self, f: impl Fn(&ExtCommunity) -> bool) -> bool {
        self.ext
            .chunks_exact(8)
            .any(|c| <[u8; 8]>::try_from(c).is_ok_and(|b| f(&ExtCommunity(b))))
    }
    fn any_large(&self, f: impl Fn(&LargeCommunity) -> bool) -> bool {
        self.large.chunks_exact(12).any(|c| {
            f(&LargeCommunity {
                global_admin: be32(c, 0),
                local_data1: be32(c, 4),
                local_data2: be32(c, 8),
            })
        })
    }
    fn next_hop(&self) -> Option<IpAddr> {
        self.set.next_hop().map(nh_addr)
    }
}

/// An [`AttrsBuilder`] read through its owned values.
struct BuilderView<'a>(&'a AttrsBuilder);

impl BuilderView<'_> {
    fn as_path(&self) -> Option<&AsPath> {
        match self.0.get(at::AS_PATH).map(|a| &a.value) {
            Some(AttrValue::AsPath(p)) => Some(p),
            _ => None,
        }
    }
}

impl Attrs for BuilderView<'_> {
    fn path_len(&self) -> u32 {
        self.as_path()
            .map_or(0, |p| p.path_len().min(u16::MAX as usize) as u32)
    }
    fn origin_as(&self) -> Option<u32> {
        let last = self.as_path()?.segments.last()?;
        if last.kind != SegmentType::Sequence {
            return None;
        }
        last.asns.last().map(|a| a.0)
    }
    fn path_matches(&self, re: &AsPathRegex) -> bool {
        let segs = self.as_path().into_iter().flat_map(|p| p.segments.iter());
        re.matches(segs.flat_map(|s| s.asns.iter()).map(|a| a.0))
    }
    fn any_community(&self, f: impl Fn(u32) -> bool) -> bool {
        match self.0.get(at::COMMUNITIES).map(|a| &a.value) {
            Some(AttrValue::Communities(v)) => v.iter().any(|c| f(c.0)),
            _ => false,
        }
    }
    fn any_ext(&self, f: impl Fn(&ExtCommunity) -> bool) -> bool {
        match self.0.get(at::EXTENDED_COMMUNITIES).map(|a| &a.value) {
            Some(AttrValue::ExtendedCommunities(v)) => v.iter().any(f),
            _ => false,
        }
    }
    fn any_large(&self, f: impl Fn(&LargeCommunity) -> bool) -> bool {
        match self.0.get(at::LARGE_COMMUNITY).map(|a| &a.value) {
            Some(AttrValue::LargeCommunities(v)) => v.iter().any(f),
            _ => false,
        }
    }
    fn next_hop(&self) -> Option<IpAddr> {
        self.0.next_hop().map(nh_addr)
    }
}

impl Cond {
    /// Cheap tests first; the AS-path automaton last.
    fn matches(&self, ctx: &RouteCtx, prefix: &Prefix, a: &impl Attrs) -> bool {
        if self.afi.is_some_and(|f| f != prefix.afi()) {
            return false;
        }
        if self.rpki.is_some_and(|s| s != ctx.rpki) {
            return false;
        }
        if self.aspa.is_some_and(|s| Some(s) != ctx.aspa) {
            return false;
        }
        if self
            .neighbor
            .as_ref()
            .is_some_and(|l| !l.contains(ctx.neighbor))
        {
            return false;
        }
        if self.prefix.as_ref().is_some_and(|l| !l.matches(prefix)) {
            return false;
        }
        if let Some((lo, hi)) = self.path_len {
            if !(lo..=hi).contains(&a.path_len()) {
                return false;
            }
        }
        if !self.origin_as.is_empty()
            && (a.origin_as()).is_none_or(|o| self.origin_as.binary_search(&o).is_err())
        {
            return false;
        }
        if let Some(l) = &self.next_hop {
            if !a.next_hop().is_some_and(|n| l.contains(n)) {
                return false;
            }
        }
        if !self.community.is_empty()
            && !a.any_community(|c| self.community.iter().any(|p| p.matches(c)))
        {
            return false;
        }
        if !self.ext_community.is_empty()
            && !a.any_ext(|c| self.ext_community.iter().any(|p| p.matches(c)))
        {
            return false;
        }
        if !self.large_community.is_empty()
            && !a.any_large(|c| self.large_community.iter().any(|p| p.matches(c)))
        {
            return false;
        }
        self.as_path.as_ref().is_none_or(|re| a.path_matches(re))
    }
}

/// The edited list when it differs from `cur`: `set` replaces, then
/// `remove` drops matching items, then `add` appends missing ones.
fn edit_list<T: Copy + PartialEq>(
    cur: &[T],
    set: Option<&[T]>,
    remove: impl Fn(&T) -> bool,
    add: &[T],
) -> Option<Vec<T>> {
    let mut v: Vec<T> = set.unwrap_or(cur).to_vec();
    v.retain(|x| !remove(x));
    for x in add {
        if !v.contains(x) {
            v.push(*x);
        }
    }
    (v != cur).then_some(v)
}

/// Applies one list edit to the builder; an empty result drops the attribute.
fn apply_list<T: Copy + PartialEq>(
    b: &mut AttrsBuilder,
    code: u8,
    get: impl Fn(&AttrValue) -> Option<&Vec<T>>,
    wrap: impl Fn(Vec<T>) -> AttrValue,
    set: Option<&[T]>,
    remove: impl Fn(&T) -> bool,
    add: &[T],
) {
    let cur: &[T] = b.get(code).and_then(|a| get(&a.value)).map_or(&[], |v| v);
    if let Some(new) = edit_list(cur, set, remove, add) {
        if new.is_empty() {
            b.remove(code);
        } else {
            b.set(PathAttr::new(wrap(new)));
        }
    }
}

/// Inserts `n` copies of `asn` at the front of the path, after any leading
/// confederation segments (RFC 5065 §5.3: those belong to the confederation
/// and are removed at its border, so our ASNs go behind them).
fn prepend(path: &mut AsPath, asn: Asn, n: u8) {
    let i = (path.segments.iter())
        .position(|s| !s.kind.is_confed())
        .unwrap_or(path.segments.len());
    let copies = std::iter::repeat_n(asn, usize::from(n));
    match path.segments.get_mut(i) {
        Some(s) if s.kind == SegmentType::Sequence => {
            s.asns.splice(0..0, copies);
        }
        _ => path.segments.insert(
            i,
            AsSegment {
                kind: SegmentType::Sequence,
                asns: copies.collect(),
            },
        ),
    }
}

impl Act {
    fn apply(&self, ctx: &RouteCtx, prefix: &Prefix, b: &mut AttrsBuilder) {
        if let Some(lp) = self.local_pref {
            if b.local_pref() != Some(lp) {
                b.set_local_pref(lp);
            }
        }
        if let Some(m) = self.med {
            // A route without MED counts as MED 0 for relative changes
            // (RFC 4271 §9.1.2.2 c treats a missing MED as the lowest).
            let cur = b.med().unwrap_or(0);
            let new = match m {
                Med::Set(v) => v,
                Med::Add(v) => cur.saturating_add(v),
                Med::Sub(v) => cur.saturating_sub(v),
            };
            if b.med() != Some(new) {
                b.set_med(new);
            }
        }
        if self.community_set.is_some()
            || !self.community_remove.is_empty()
            || !self.community_add.is_empty()
        {
            apply_list(
                b,
                at::COMMUNITIES,
                |v| match v {
                    AttrValue::Communities(c) => Some(c),
                    _ => None,
                },
                AttrValue::Communities,
                self.community_set.as_deref(),
                |c| self.community_remove.iter().any(|p| p.matches(c.0)),
                &self.community_add,
            );
        }
        if !self.ext_remove.is_empty() || !self.ext_add.is_empty() {
            apply_list(
                b,
                at::EXTENDED_COMMUNITIES,
                |v| match v {
                    AttrValue::ExtendedCommunities(c) => Some(c),
                    _ => None,
                },
                AttrValue::ExtendedCommunities,
                None,
                |c| self.ext_remove.iter().any(|p| p.matches(c)),
                &self.ext_add,
            );
        }
        if !self.large_remove.is_empty() || !self.large_add.is_empty() {
            apply_list(
                b,
                at::LARGE_COMMUNITY,
                |v| match v {
                    AttrValue::LargeCommunities(c) => Some(c),
                    _ => None,
                },
                AttrValue::LargeCommunities,
                None,
                |c| self.large_remove.iter().any(|p| p.matches(c)),
                &self.large_add,
            );
        }
        if let Some((n, asn)) = self.prepend {
            let asn = asn.map_or(ctx.local_asn, Asn);
            let mut path = match b.get(at::AS_PATH).map(|a| &a.value) {
                Some(AttrValue::AsPath(p)) => p.clone(),
                _ => AsPath::default(),
            };
            prepend(&mut path, asn, n);
            b.set(PathAttr::new(AttrValue::AsPath(path)));
        }
        if let Some(nh) = self.next_hop {
            let addr = match nh {
                NextHopAct::Addr(a) => Some(a),
                NextHopAct::Local => ctx.local_addr,
            };
            // IPv6 next hops may carry IPv4 routes (RFC 8950), not the
            // reverse.
            let nh = match (addr, prefix) {
                (Some(IpAddr::V4(a)), Prefix::V4(_)) => Some(NextHop::V4(a)),
                (Some(IpAddr::V6(a)), _) => Some(NextHop::V6(a)),
                _ => None,
            };
            if let Some(nh) = nh.filter(|n| b.next_hop() != Some(*n)) {
                b.set_next_hop(nh);
            }
        }
    }
}

impl Policy {
    /// Import: runs the terms on the route's editable attributes. Edits
    /// happen in place; the RIB sees them through
    /// [`AttrsBuilder::is_dirty`]. Actions that change nothing (adding a
    /// community already present) leave the builder clean.
    pub fn import(&self, ctx: &RouteCtx, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict {
        for t in self.terms.iter() {
            if !t.cond.matches(ctx, prefix, &BuilderView(attrs)) {
                continue;
            }
            if t.act.verdict == Some(Verdict::Reject) {
                return Verdict::Reject;
            }
            if t.act.modifies {
                t.act.apply(ctx, prefix, attrs);
            }
            if let Some(v) = t.act.verdict {
                return v;
            }
        }
        self.default
    }

    /// Export: matches on the interned set in place; only a term whose
    /// actions edit attributes makes a copy (`to_builder`), which later
    /// terms then read. Returns `Replace` only when the copy differs.
    pub fn export(&self, ctx: &RouteCtx, prefix: &Prefix, attrs: &AttrSet) -> ExportVerdict {
        let view = SetView::new(attrs);
        let mut owned: Option<AttrsBuilder> = None;
        for t in self.terms.iter() {
            let hit = match &owned {
                None => t.cond.matches(ctx, prefix, &view),
                Some(b) => t.cond.matches(ctx, prefix, &BuilderView(b)),
            };
            if !hit {
                continue;
            }
            if t.act.verdict == Some(Verdict::Reject) {
                return ExportVerdict::Reject;
            }
            if t.act.modifies {
                let b = owned.get_or_insert_with(|| attrs.to_builder());
                t.act.apply(ctx, prefix, b);
            }
            if t.act.verdict == Some(Verdict::Accept) {
                return finish(owned);
            }
        }
        match self.default {
            Verdict::Accept => finish(owned),
            Verdict::Reject => ExportVerdict::Reject,
        }
    }
}

fn finish(owned: Option<AttrsBuilder>) -> ExportVerdict {
    match owned {
        Some(b) if b.is_dirty() => ExportVerdict::Replace(b),
        _ => ExportVerdict::Accept,
    }
}
