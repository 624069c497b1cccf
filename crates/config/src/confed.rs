//! `router.confederation` (RFC 5065): the confederation identifier and its
//! member ASes; `router.asn` is then our member AS. Which neighbours are
//! members (confederation-external) is decided per neighbour
//! ([`Confederation::is_member`]).

use base::Asn;
use serde::Deserialize;

use crate::raw::AsnValue;
use crate::validate::{asn, Ctx, R};

/// `router.confederation` as written: `{ identifier = N, members = [..] }`
/// or a `[router.confederation]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfederation {
    pub identifier: AsnValue,
    #[serde(default)]
    pub members: Vec<AsnValue>,
}

/// A confederation we are a member of (RFC 5065 §2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confederation {
    /// `identifier`, required: the AS the confederation shows to its
    /// external peers (in their OPEN and at the front of their AS_PATH).
    pub identifier: Asn,
    /// `members`, default `[]`: the member ASes of the confederation. Ours
    /// (`router.asn`) may be listed or not; a neighbour whose `remote_as`
    /// is another one is a confederation-external peer.
    pub members: Vec<Asn>,
}

impl Confederation {
    /// Whether `remote` is another member AS than ours (`own`).
    pub fn is_member(&self, remote: Asn, own: Asn) -> bool {
        remote != own && self.members.contains(&remote)
    }
}

/// Checks `router.confederation` against our AS (`own`), as FRR and BIRD
/// do: the identifier is not our member AS nor a member, no member twice.
pub(crate) fn validate(c: &Ctx<'_>, r: &RawConfederation, own: Asn) -> R<Confederation> {
    const BASE: &str = "router.confederation";
    let identifier = asn(c, &format!("{BASE}.identifier"), &r.identifier)?;
    if identifier == own {
        return Err(c.err(
            &format!("{BASE}.identifier"),
            format!(
                "{identifier} is router.asn: the identifier is the AS the confederation \
                 shows outside, router.asn our member AS inside it (RFC 5065 §2)"
            ),
        ));
    }
    let mut members: Vec<Asn> = Vec::with_capacity(r.members.len());
    for (i, m) in r.members.iter().enumerate() {
        let path = format!("{BASE}.members[{i}]");
        let a = asn(c, &path, m)?;
        if a == identifier {
            return Err(c.err(
                &path,
                format!("{a} is the confederation identifier, not a member AS"),
            ));
        }
        if members.contains(&a) {
            return Err(c.err(&path, format!("{a} is listed twice")));
        }
        members.push(a);
    }
    Ok(Confederation {
        identifier,
        members,
    })
}
