//! From the config AST to the compiled [`Policy`]: every string is parsed
//! here, once; evaluation only compares numbers.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

use base::Afi;
use bgp_rib::Verdict;
use bgp_wire::{Community, ExtCommunity, LargeCommunity};

use crate::ast::{ActionDef, MatchDef, PolicyDef, TermDef};
use crate::community::{parse_ext, parse_large, parse_std, ExtPat, LargePat, StdPat};
use crate::error::{ErrorKind, PolicyError};
use crate::prefix_list::{AddrList, PrefixList, PrefixRange};
use crate::regex::AsPathRegex;
use crate::MAX_PREPEND;

/// A compiled policy. Cheap to share (`Arc`) between peers.
#[derive(Clone, Debug)]
pub struct Policy {
    pub(crate) terms: Box<[Term]>,
    pub(crate) default: Verdict,
    /// [`Policy::group_identity`], computed on first use.
    pub(crate) ident: OnceLock<crate::analysis::GroupIdentity>,
}

#[derive(Clone, Debug)]
pub(crate) struct Term {
    pub(crate) name: Option<Box<str>>,
    pub(crate) cond: Cond,
    pub(crate) act: Act,
}

/// All present conditions must hold; empty lists are absent conditions.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cond {
    pub(crate) afi: Option<Afi>,
    pub(crate) neighbor: Option<AddrList>,
    pub(crate) prefix: Option<PrefixList>,
    pub(crate) path_len: Option<(u32, u32)>,
    /// Sorted, for binary search.
    pub(crate) origin_as: Box<[u32]>,
    pub(crate) next_hop: Option<AddrList>,
    pub(crate) community: Box<[StdPat]>,
    pub(crate) ext_community: Box<[ExtPat]>,
    pub(crate) large_community: Box<[LargePat]>,
    pub(crate) as_path: Option<AsPathRegex>,
    /// The RFC 6811 state the route must have ([`crate::RouteCtx::rpki`]).
    pub(crate) rpki: Option<rov::RovState>,
    /// The ASPA state the route must have ([`crate::RouteCtx::aspa`]).
    pub(crate) aspa: Option<rov::AspaState>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Med {
    Set(u32),
    Add(u32),
    Sub(u32),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum NextHopAct {
    Addr(IpAddr),
    /// [`crate::RouteCtx::local_addr`].
    Local,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Act {
    pub(crate) verdict: Option<Verdict>,
    pub(crate) local_pref: Option<u32>,
    pub(crate) med: Option<Med>,
    pub(crate) community_set: Option<Box<[Community]>>,
    pub(crate) community_remove: Box<[StdPat]>,
    pub(crate) community_add: Box<[Community]>,
    pub(crate) ext_remove: Box<[ExtPat]>,
    pub(crate) ext_add: Box<[ExtCommunity]>,
    pub(crate) large_remove: Box<[LargePat]>,
    pub(crate) large_add: Box<[LargeCommunity]>,
    /// (count, ASN; `None` = the local AS).
    pub(crate) prepend: Option<(u8, Option<u32>)>,
    pub(crate) next_hop: Option<NextHopAct>,
    /// Whether any attribute edit is configured.
    pub(crate) modifies: bool,
}

/// Where in the AST an error is, for [`PolicyError`].
struct At<'a> {
    term: Option<usize>,
    name: Option<&'a str>,
}

impl At<'_> {
    fn err(
        &self,
        field: &'static str,
        index: Option<usize>,
        value: &str,
        kind: ErrorKind,
    ) -> PolicyError {
        PolicyError {
            policy: None,
            term: self.term,
            term_name: self.name.map(Box::from),
            field,
            index,
            value: value.into(),
            kind,
        }
    }

    /// Parses each string of a list field.
    fn list<T>(
        &self,
        field: &'static str,
        items: &[String],
        f: impl Fn(&str) -> Result<T, ErrorKind>,
    ) -> Result<Vec<T>, PolicyError> {
        items
            .iter()
            .enumerate()
            .map(|(i, s)| f(s).map_err(|k| self.err(field, Some(i), s, k)))
            .collect()
    }

    fn one<T>(
        &self,
        field: &'static str,
        s: &str,
        f: impl Fn(&str) -> Result<T, ErrorKind>,
    ) -> Result<T, PolicyError> {
        f(s).map_err(|k| self.err(field, None, s, k))
    }
}

fn verdict(s: &str) -> Result<Verdict, ErrorKind> {
    match s.trim() {
        "accept" => Ok(Verdict::Accept),
        "reject" => Ok(Verdict::Reject),
        _ => Err(ErrorKind::UnknownVerdict),
    }
}

fn afi(s: &str) -> Result<Afi, ErrorKind> {
    match s.trim() {
        "ipv4" => Ok(Afi::Ipv4),
        "ipv6" => Ok(Afi::Ipv6),
        _ => Err(ErrorKind::UnknownAfi),
    }
}

/// `N`, `== N`, `= N`, `<= N`, `>= N`, `< N`, `> N`, `N-M`: an inclusive
/// range of AS_PATH lengths.
fn path_len(s: &str) -> Result<(u32, u32), ErrorKind> {
    let s = s.trim();
    let num = |t: &str| t.trim().parse::<u32>().map_err(|_| ErrorKind::LengthSyntax);
    let r = if let Some(t) = s.strip_prefix("<=") {
        (0, num(t)?)
    } else if let Some(t) = s.strip_prefix(">=") {
        (num(t)?, u32::MAX)
    } else if let Some(t) = s.strip_prefix("==").or_else(|| s.strip_prefix('=')) {
        let n = num(t)?;
        (n, n)
    } else if let Some(t) = s.strip_prefix('<') {
        (0, num(t)?.checked_sub(1).ok_or(ErrorKind::LengthSyntax)?)
    } else if let Some(t) = s.strip_prefix('>') {
        (
            num(t)?.checked_add(1).ok_or(ErrorKind::LengthSyntax)?,
            u32::MAX,
        )
    } else if let Some((a, b)) = s.split_once('-') {
        (num(a)?, num(b)?)
    } else {
        let n = num(s)?;
        (n, n)
    };
    if r.0 > r.1 {
        return Err(ErrorKind::LengthSyntax);
    }
    Ok(r)
}

fn med(s: &str) -> Result<Med, ErrorKind> {
    let s = s.trim();
    let num = |t: &str| t.parse::<u32>().map_err(|_| ErrorKind::MedSyntax);
    if let Some(t) = s.strip_prefix('+') {
        Ok(Med::Add(num(t)?))
    } else if let Some(t) = s.strip_prefix('-') {
        Ok(Med::Sub(num(t)?))
    } else {
        Ok(Med::Set(num(s)?))
    }
}

fn next_hop(s: &str) -> Result<NextHopAct, ErrorKind> {
    match s.trim() {
        "self" => Ok(NextHopAct::Local),
        a => a
            .parse()
            .map(NextHopAct::Addr)
            .map_err(|_| ErrorKind::AddressSyntax),
    }
}

fn as_path(s: &str) -> Result<AsPathRegex, ErrorKind> {
    AsPathRegex::new(s).map_err(|(pos, err)| ErrorKind::Regex {
        pos: pos.min(u16::MAX as usize) as u16,
        err,
    })
}

fn dedup<T: PartialEq>(v: Vec<T>) -> Box<[T]> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out.into()
}

fn compile_match(at: &At<'_>, m: &MatchDef) -> Result<Cond, PolicyError> {
    let addr_list = |field, items: &[String]| -> Result<Option<AddrList>, PolicyError> {
        if items.is_empty() {
            return Ok(None);
        }
        Ok(Some(AddrList::new(&at.list(
            field,
            items,
            AddrList::parse_entry,
        )?)))
    };
    let prefix = if m.prefix.is_empty() {
        None
    } else {
        let v = at.list("match.prefix", &m.prefix, PrefixRange::parse)?;
        Some(PrefixList::new(&v))
    };
    let mut origin_as = m.origin_as.clone();
    origin_as.sort_unstable();
    origin_as.dedup();
    Ok(Cond {
        afi: m
            .afi
            .as_deref()
            .map(|s| at.one("match.afi", s, afi))
            .transpose()?,
        neighbor: addr_list("match.neighbor", &m.neighbor)?,
        prefix,
        path_len: (m.as_path_len.as_deref())
            .map(|s| at.one("match.as_path_len", s, path_len))
            .transpose()?,
        origin_as: origin_as.into(),
        next_hop: addr_list("match.next_hop", &m.next_hop)?,
        community: at
            .list("match.community", &m.community, StdPat::parse)?
            .into(),
        ext_community: (at.list("match.ext_community", &m.ext_community, ExtPat::parse)?).into(),
        large_community: (at.list("match.large_community", &m.large_community, LargePat::parse)?)
            .into(),
        as_path: (m.as_path.as_deref())
            .map(|s| at.one("match.as_path", s, as_path))
            .transpose()?,
        rpki: (m.rpki.as_deref())
            .map(|s| {
                at.one("match.rpki", s, |s| {
                    rov::RovState::parse(s).ok_or(ErrorKind::UnknownRpkiState)
                })
            })
            .transpose()?,
        aspa: (m.aspa.as_deref())
            .map(|s| {
                at.one("match.aspa", s, |s| {
                    rov::AspaState::parse(s).ok_or(ErrorKind::UnknownAspaState)
                })
            })
            .transpose()?,
    })
}

fn compile_then(at: &At<'_>, t: &ActionDef) -> Result<Act, PolicyError> {
    let prepend = match (t.prepend, t.prepend_as) {
        (None, None) => None,
        (None, Some(a)) => {
            return Err(at.err(
                "then.prepend_as",
                None,
                &a.to_string(),
                ErrorKind::PrependAsAlone,
            ))
        }
        (Some(n), _) if n > MAX_PREPEND => {
            return Err(at.err(
                "then.prepend",
                None,
                &n.to_string(),
                ErrorKind::PrependTooLong,
            ))
        }
        (Some(0), _) => None,
        (Some(n), a) => Some((n, a)),
    };
    let community_set = match &t.community_set {
        Some(v) => Some(dedup(at.list("then.community_set", v, parse_std)?)),
        None => None,
    };
    let mut a = Act {
        verdict: (t.action.as_deref())
            .map(|s| at.one("then.action", s, verdict))
            .transpose()?,
        local_pref: t.local_pref,
        med: t
            .med
            .as_deref()
            .map(|s| at.one("then.med", s, med))
            .transpose()?,
        community_set,
        community_remove: at
            .list("then.community_remove", &t.community_remove, StdPat::parse)?
            .into(),
        community_add: dedup(at.list("then.community_add", &t.community_add, parse_std)?),
        ext_remove: at
            .list(
                "then.ext_community_remove",
                &t.ext_community_remove,
                ExtPat::parse,
            )?
            .into(),
        ext_add: dedup(at.list("then.ext_community_add", &t.ext_community_add, parse_ext)?),
        large_remove: (at.list(
            "then.large_community_remove",
            &t.large_community_remove,
            LargePat::parse,
        )?)
        .into(),
        large_add: dedup(at.list(
            "then.large_community_add",
            &t.large_community_add,
            parse_large,
        )?),
        prepend,
        next_hop: (t.next_hop.as_deref())
            .map(|s| at.one("then.next_hop", s, next_hop))
            .transpose()?,
        modifies: false,
    };
    a.modifies = a.local_pref.is_some()
        || a.med.is_some()
        || a.community_set.is_some()
        || !a.community_remove.is_empty()
        || !a.community_add.is_empty()
        || !a.ext_remove.is_empty()
        || !a.ext_add.is_empty()
        || !a.large_remove.is_empty()
        || !a.large_add.is_empty()
        || a.prepend.is_some()
        || a.next_hop.is_some();
    Ok(a)
}

fn compile_term(i: usize, t: &TermDef) -> Result<Term, PolicyError> {
    let at = At {
        term: Some(i),
        name: t.name.as_deref(),
    };
    Ok(Term {
        name: t.name.as_deref().map(Box::from),
        cond: compile_match(&at, &t.matches)?,
        act: compile_then(&at, &t.then)?,
    })
}

/// Compiles one policy; the error names the first offending term and field.
pub fn compile(def: &PolicyDef) -> Result<Policy, PolicyError> {
    let terms = def
        .term
        .iter()
        .enumerate()
        .map(|(i, t)| compile_term(i, t))
        .collect::<Result<Vec<_>, _>>()?;
    let top = At {
        term: None,
        name: None,
    };
    let default = match &def.default {
        Some(s) => top.one("default", s, verdict)?,
        None => Verdict::Reject,
    };
    Ok(Policy {
        terms: terms.into(),
        default,
        ident: OnceLock::new(),
    })
}

/// Compiles every named policy of a config; the error also names the policy.
pub fn compile_all(
    defs: &BTreeMap<String, PolicyDef>,
) -> Result<BTreeMap<String, Arc<Policy>>, PolicyError> {
    defs.iter()
        .map(|(name, d)| match compile(d) {
            Ok(p) => Ok((name.clone(), Arc::new(p))),
            Err(mut e) => {
                e.policy = Some(name.as_str().into());
                Err(e)
            }
        })
        .collect()
}

impl Policy {
    /// A policy with no terms that returns `default` for every route.
    pub fn constant(default: Verdict) -> Policy {
        Policy {
            terms: Box::new([]),
            default,
            ident: OnceLock::new(),
        }
    }
    /// The verdict when no term decides.
    pub fn default_verdict(&self) -> Verdict {
        self.default
    }
    /// Whether a term matches on the RPKI state, so that the caller must
    /// fill [`crate::RouteCtx::rpki`] (and re-run the policy when it
    /// changes).
    pub fn uses_rpki(&self) -> bool {
        self.terms.iter().any(|t| t.cond.rpki.is_some())
    }
    /// Whether a term matches on the ASPA state, so that the caller must
    /// fill [`crate::RouteCtx::aspa`] (and re-run the policy when the
    /// ASPAs change).
    pub fn uses_aspa(&self) -> bool {
        self.terms.iter().any(|t| t.cond.aspa.is_some())
    }
    /// Number of terms.
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }
    /// The names of the terms, `None` for unnamed ones.
    pub fn term_names(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        self.terms.iter().map(|t| t.name.as_deref())
    }
}
