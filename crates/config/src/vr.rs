//! `[[dataplane.vr]]`: virtual routers (seed 002, slides 30-38), each
//! with a classifier match, its own FIB and a CPU share under the
//! proportional-share scheduler with the batching throttle
//! (`graph::VrScheduler`).
//!
//! ```toml
//! [[dataplane.vr]]
//! name = "red"
//! vlan = 10                 # or: ingress = "r0", or: prefix = ["198.18.0.0/24"]
//! neighbors = ["bird-red"]  # routes learned from these neighbours; or: table = "main"
//! tickets = 300             # CPU share, relative to the other VRs (1..=1000000)
//! granularity_us = 100      # G: the longest run (one scheduler per core: same in every VR)
//! batch = 8                 # B_i: packets before the VR is eligible (1..=256, default 1)
//! delay_us = 1000           # D_i: eligible anyway after this wait (needed with batch > 1)
//! ```
//!
//! Routing tables: tesserad has one Loc-RIB and no VRFs, so a VR's FIB is
//! fed either by `table = "main"` (tesserad's best routes, the FIB the
//! dataplane has without VRs) or by `neighbors = [...]`: the best of the
//! routes learned from those `[[neighbor]]`s by name. Every other table
//! name is an error.
//!
//! Matches: every VR uses the same kind of match (a VLAN-tagged frame on
//! an ingress port would otherwise fit two VRs); VLANs and ingress ports
//! are unique, and prefixes may not overlap, between VRs or within one.
//! So no frame ever fits two VRs; how each kind treats ARP and ND is
//! `graph::vr_class`'s table (docs/config.md, "Which VR takes a frame").
//!
//! tesserad runs every match kind with either source
//! (`fib::dataplane::vr`, `crates/tesserad/src/vr.rs`); what it refuses
//! (VRs with the fabric, an operator's graph, IPsec, NICBalance or a
//! separate dataplane process) it refuses with a clear "not supported
//! yet" error (`FILE:LINE:COL`), after every entry is validated here, so
//! that no key is silently ignored. The scheduler's isolation is measured in
//! process (`crates/elements/examples/vr_isolation.rs`,
//! docs/BENCHMARKS.md).

use base::Prefix;
use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVr {
    pub name: String,
    pub vlan: Option<u32>,
    pub ingress: Option<String>,
    pub prefix: Option<Vec<String>>,
    pub table: Option<String>,
    pub neighbors: Option<Vec<String>>,
    pub tickets: Option<u32>,
    pub granularity_us: Option<u32>,
    pub batch: Option<u32>,
    pub delay_us: Option<u32>,
}

/// Which packets a VR takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VrMatch {
    /// `vlan`: frames with this 802.1Q VLAN id (1..=4094).
    Vlan(u16),
    /// `ingress`: frames received on this dataplane interface.
    Ingress(String),
    /// `prefix`: packets whose destination is in one of these.
    Prefix(Vec<Prefix>),
}

/// Where a VR's FIB comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VrTable {
    /// `table = "main"`: tesserad's best routes.
    Main,
    /// `neighbors`: the best of the routes learned from these neighbours
    /// (their names).
    Neighbors(Vec<String>),
}

/// One `[[dataplane.vr]]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vr {
    /// `name`: unique, `[A-Za-z0-9_-]`, 1..=32 bytes.
    pub name: String,
    /// The classifier match (exactly one of `vlan`, `ingress`, `prefix`).
    pub matches: VrMatch,
    /// The FIB's source (exactly one of `table`, `neighbors`).
    pub table: VrTable,
    /// `tickets`: CPU share relative to the other VRs, 1..=1000000
    /// (default 100).
    pub tickets: u32,
    /// `granularity_us`: G, the longest run in microseconds, 1..=1000000
    /// (default 100).
    pub granularity_us: u32,
    /// `batch`: B_i, 1..=256 (default 1: no batch threshold); above 1 it
    /// needs `delay_us` > 0.
    pub batch: u16,
    /// `delay_us`: D_i in microseconds, 0..=1000000 (default 0).
    pub delay_us: u32,
}

fn overlap(a: &Prefix, b: &Prefix) -> bool {
    let len = u32::from(a.len().min(b.len()));
    match (a, b) {
        (Prefix::V4(x), Prefix::V4(y)) => {
            let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            x.addr_bits() & m == y.addr_bits() & m
        }
        (Prefix::V6(x), Prefix::V6(y)) => {
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            x.addr_bits() & m == y.addr_bits() & m
        }
        _ => false,
    }
}

fn one(c: &Ctx<'_>, at: &str, r: &RawVr, ifaces: &[&str], neighbors: &[&str]) -> R<Vr> {
    let path = |k: &str| format!("{at}.{k}");
    let ok_name = |s: &str| {
        !s.is_empty()
            && s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    if !ok_name(&r.name) {
        return Err(c.err(
            &path("name"),
            format!("{:?}: a VR name is 1..=32 of [A-Za-z0-9_-]", r.name),
        ));
    }
    let set = [r.vlan.is_some(), r.ingress.is_some(), r.prefix.is_some()]
        .iter()
        .filter(|x| **x)
        .count();
    if set != 1 {
        return Err(c.err(
            at,
            format!(
                "VR {:?} needs exactly one match: vlan, ingress or prefix ({set} given)",
                r.name
            ),
        ));
    }
    let matches = if let Some(v) = r.vlan {
        if !(1..=4094).contains(&v) {
            return Err(c.err(&path("vlan"), format!("{v}: a VLAN id is 1..=4094")));
        }
        VrMatch::Vlan(v as u16)
    } else if let Some(i) = &r.ingress {
        if !ifaces.contains(&i.as_str()) {
            return Err(c.err(
                &path("ingress"),
                format!("{i:?} is not a [[dataplane.interface]]"),
            ));
        }
        VrMatch::Ingress(i.clone())
    } else {
        let list = r.prefix.as_deref().unwrap_or_default();
        if list.is_empty() {
            return Err(c.err(&path("prefix"), "an empty prefix list"));
        }
        let mut v: Vec<Prefix> = Vec::new();
        for (k, s) in list.iter().enumerate() {
            let p: Prefix = s.parse().map_err(|_| {
                c.err(
                    &format!("{at}.prefix[{k}]"),
                    format!("{s:?} is not a prefix ADDRESS/LENGTH"),
                )
            })?;
            if p.masked() != p {
                return Err(c.err(
                    &format!("{at}.prefix[{k}]"),
                    format!("{s:?} has bits set beyond the prefix length"),
                ));
            }
            v.push(p);
        }
        VrMatch::Prefix(v)
    };
    let table = match (&r.table, &r.neighbors) {
        (Some(t), None) if t == "main" => VrTable::Main,
        (Some(t), None) => {
            return Err(c.err(
                &path("table"),
                format!(
                    "unknown table {t:?}: tesserad has one routing table, \"main\" \
                     (for a VR's own routes, list its neighbors instead)"
                ),
            ))
        }
        (None, Some(ns)) => {
            if ns.is_empty() {
                return Err(c.err(&path("neighbors"), "an empty neighbor list"));
            }
            for (k, n) in ns.iter().enumerate() {
                if !neighbors.contains(&n.as_str()) {
                    return Err(c.err(
                        &format!("{at}.neighbors[{k}]"),
                        format!("{n:?} is not the name of a [[neighbor]]"),
                    ));
                }
            }
            VrTable::Neighbors(ns.clone())
        }
        _ => {
            return Err(c.err(
                at,
                format!(
                    "VR {:?} needs exactly one FIB source: table = \"main\" or neighbors = [..]",
                    r.name
                ),
            ))
        }
    };
    let tickets = match r.tickets {
        None => 100,
        Some(t @ 1..=1_000_000) => t,
        Some(t) => {
            return Err(c.err(
                &path("tickets"),
                format!("{t}: tickets is 1..=1000000 (a VR with no share would never run)"),
            ))
        }
    };
    let granularity_us = match r.granularity_us {
        None => 100,
        Some(g @ 1..=1_000_000) => g,
        Some(g) => {
            return Err(c.err(
                &path("granularity_us"),
                format!("{g}: granularity_us is 1..=1000000"),
            ))
        }
    };
    // A graph input holds at most 256 packets (pkt::MAX_BATCH): a larger
    // threshold could never be reached.
    let batch = match r.batch {
        None => 1,
        Some(b @ 1..=256) => b as u16,
        Some(b) => return Err(c.err(&path("batch"), format!("{b}: batch is 1..=256"))),
    };
    let delay_us = match r.delay_us {
        None => 0,
        Some(d @ 0..=1_000_000) => d,
        Some(d) => return Err(c.err(&path("delay_us"), format!("{d}: delay_us is 0..=1000000"))),
    };
    if batch > 1 && delay_us == 0 {
        // With D_i = 0 a VR is eligible as soon as it holds one packet,
        // so the batch threshold would do nothing.
        return Err(c.err(
            &path("batch"),
            format!("batch = {batch} needs delay_us > 0 (D_i): with delay_us = 0 the VR is eligible at once and batch has no effect"),
        ));
    }
    Ok(Vr {
        name: r.name.clone(),
        matches,
        table,
        tickets,
        granularity_us,
        batch,
        delay_us,
    })
}

/// Validates `[[dataplane.vr]]` against the dataplane's interfaces and
/// the neighbours' names.
pub(crate) fn validate(
    c: &Ctx<'_>,
    raw: &[RawVr],
    ifaces: &[&str],
    neighbors: &[&str],
) -> R<Vec<Vr>> {
    if raw.len() > 64 {
        return Err(c.err("dataplane.vr", "at most 64 [[dataplane.vr]] entries"));
    }
    let mut out: Vec<Vr> = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let at = format!("dataplane.vr[{i}]");
        let v = one(c, &at, r, ifaces, neighbors)?;
        if let Some(o) = out.iter().find(|o| o.name == v.name) {
            return Err(c.err(
                &format!("{at}.name"),
                format!("VR {:?} is defined twice", o.name),
            ));
        }
        if let Some(o) = out.first() {
            if std::mem::discriminant(&o.matches) != std::mem::discriminant(&v.matches) {
                return Err(c.err(
                    &at,
                    format!(
                        "VR {:?} matches by another kind than VR {:?}: every VR matches by vlan, \
                         or every VR by ingress, or every VR by prefix (a packet must fit one VR)",
                        v.name, o.name
                    ),
                ));
            }
        }
        if out
            .first()
            .map(|o| o.granularity_us)
            .is_some_and(|g| g != v.granularity_us)
        {
            return Err(c.err(
                &format!("{at}.granularity_us"),
                "granularity_us differs between VRs: G belongs to the scheduler of a core, \
                 which every VR shares",
            ));
        }
        // The error points at the key (the prefix) that clashes.
        for o in &out {
            let clash = match (&o.matches, &v.matches) {
                (VrMatch::Vlan(a), VrMatch::Vlan(b)) => {
                    (a == b).then(|| (format!("{at}.vlan"), format!("VLAN {a}")))
                }
                (VrMatch::Ingress(a), VrMatch::Ingress(b)) => {
                    (a == b).then(|| (format!("{at}.ingress"), format!("ingress {a:?}")))
                }
                (VrMatch::Prefix(a), VrMatch::Prefix(b)) => b
                    .iter()
                    .enumerate()
                    .flat_map(|(k, y)| a.iter().map(move |x| (k, x, y)))
                    .find(|(_, x, y)| overlap(x, y))
                    .map(|(k, x, y)| {
                        (
                            format!("{at}.prefix[{k}]"),
                            format!("prefixes {x} and {y} overlap"),
                        )
                    }),
                _ => None,
            };
            if let Some((field, what)) = clash {
                return Err(c.err(
                    &field,
                    format!("VR {:?} overlaps VR {:?}: {what}", v.name, o.name),
                ));
            }
        }
        // The same prefix twice inside one VR is harmless but a typo.
        if let VrMatch::Prefix(ps) = &v.matches {
            for (k, p) in ps.iter().enumerate() {
                if ps[..k].iter().any(|q| overlap(p, q)) {
                    return Err(c.err(
                        &format!("{at}.prefix[{k}]"),
                        format!("{p} overlaps another prefix of the same VR"),
                    ));
                }
            }
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{VrMatch, VrTable};

    const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n\
        [[neighbor]]\nname = \"red-peer\"\naddress = \"198.18.1.2\"\nremote_as = 65001\n\n\
        [[neighbor]]\nname = \"blue-peer\"\naddress = \"198.18.2.2\"\nremote_as = 65002\n\n\
        [dataplane]\n[[dataplane.interface]]\nname = \"r0\"\n[[dataplane.interface]]\nname = \"r1\"\n";

    fn parse(vrs: &str) -> Result<crate::Config, crate::ConfigError> {
        crate::parse(&format!("{HEAD}{vrs}"), "vr.toml")
    }

    #[test]
    fn parses_every_key_and_the_defaults() {
        let c = parse(
            "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\nneighbors = [\"red-peer\"]\n\
             tickets = 300\ngranularity_us = 30\nbatch = 8\ndelay_us = 1000\n\
             [[dataplane.vr]]\nname = \"blue\"\nvlan = 20\ntable = \"main\"\ngranularity_us = 30\n",
        )
        .expect("valid");
        let v = c.dataplane.expect("dataplane").vrs;
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].matches, VrMatch::Vlan(10));
        assert_eq!(v[0].table, VrTable::Neighbors(vec!["red-peer".into()]));
        assert_eq!(
            (v[0].tickets, v[0].granularity_us, v[0].batch, v[0].delay_us),
            (300, 30, 8, 1000)
        );
        assert_eq!(v[1].table, VrTable::Main);
        assert_eq!((v[1].tickets, v[1].batch, v[1].delay_us), (100, 1, 0));
        let c = parse(
            "[[dataplane.vr]]\nname = \"a\"\nprefix = [\"198.18.0.0/24\", \"2001:db8::/48\"]\ntable = \"main\"\n\
             [[dataplane.vr]]\nname = \"b\"\nprefix = [\"198.18.1.0/24\"]\ntable = \"main\"\n",
        )
        .expect("valid");
        assert!(
            matches!(&c.dataplane.expect("dp").vrs[0].matches, VrMatch::Prefix(p) if p.len() == 2)
        );
        let c = parse("[[dataplane.vr]]\nname = \"a\"\ningress = \"r1\"\ntable = \"main\"\n")
            .expect("valid");
        assert_eq!(
            c.dataplane.expect("dp").vrs[0].matches,
            VrMatch::Ingress("r1".into())
        );
    }

    #[test]
    fn errors_name_the_field_and_position() {
        let vr = "[[dataplane.vr]]\nname = \"a\"\nvlan = 10\ntable = \"main\"\n";
        for (body, field, want) in [
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\ntable = \"red\"\n",
                "dataplane.vr[1].table",
                "unknown table \"red\"",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\nneighbors = [\"nope\"]\n",
                "dataplane.vr[1].neighbors[0]",
                "not the name of a [[neighbor]]",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\ntable = \"main\"\ntickets = 0\n",
                "dataplane.vr[1].tickets",
                "0: tickets is 1..=1000000",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 10\ntable = \"main\"\n",
                "dataplane.vr[1].vlan",
                "overlaps VR \"a\": VLAN 10",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\ningress = \"r0\"\ntable = \"main\"\n",
                "dataplane.vr[1]",
                "another kind",
            ),
            (
                "[[dataplane.vr]]\nname = \"a\"\nvlan = 11\ntable = \"main\"\n",
                "dataplane.vr[1].name",
                "defined twice",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\ntable = \"main\"\ngranularity_us = 30\n",
                "dataplane.vr[1].granularity_us",
                "differs between VRs",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\n",
                "dataplane.vr[1]",
                "exactly one FIB source",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\ningress = \"r0\"\ntable = \"main\"\n",
                "dataplane.vr[1]",
                "exactly one match",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 4095\ntable = \"main\"\n",
                "dataplane.vr[1].vlan",
                "1..=4094",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\ntable = \"main\"\nbatch = 0\n",
                "dataplane.vr[1].batch",
                "1..=256",
            ),
            (
                "[[dataplane.vr]]\nname = \"b\"\nvlan = 11\ntable = \"main\"\nbatch = 8\n",
                "dataplane.vr[1].batch",
                "needs delay_us > 0",
            ),
        ] {
            let e = parse(&format!("{vr}{body}")).expect_err(body);
            assert_eq!(e.field, field, "{body}: {e}");
            assert!(e.to_string().contains(want), "{body}: {e}");
            // FILE:LINE:COL points into the VR's lines, not at the top.
            assert!(e.to_string().starts_with("vr.toml:"), "{e}");
            assert!(e.line > 14, "{body}: {e}");
        }
        for (body, field, want) in [
            (
                "[[dataplane.vr]]\nname = \"a\"\ningress = \"eth9\"\ntable = \"main\"\n",
                "dataplane.vr[0].ingress",
                "not a [[dataplane.interface]]",
            ),
            (
                "[[dataplane.vr]]\nname = \"a\"\nprefix = [\"198.18.0.0/16\"]\ntable = \"main\"\n\
                 [[dataplane.vr]]\nname = \"b\"\nprefix = [\"198.18.4.0/24\"]\ntable = \"main\"\n",
                "dataplane.vr[1].prefix[0]",
                "prefixes 198.18.0.0/16 and 198.18.4.0/24 overlap",
            ),
            (
                "[[dataplane.vr]]\nname = \"a\"\nprefix = [\"198.18.0.1/16\"]\ntable = \"main\"\n",
                "dataplane.vr[0].prefix[0]",
                "bits set beyond",
            ),
            (
                "[[dataplane.vr]]\nname = \"a b\"\nvlan = 1\ntable = \"main\"\n",
                "dataplane.vr[0].name",
                "A-Za-z0-9_-",
            ),
        ] {
            let e = parse(body).expect_err(body);
            assert_eq!(e.field, field, "{body}: {e}");
            assert!(e.to_string().contains(want), "{body}: {e}");
        }
        let e = parse("[[dataplane.vr]]\nname = \"a\"\nvlan = 1\ntable = \"main\"\nshare = 3\n")
            .expect_err("unknown key");
        assert!(e.to_string().contains("share"), "{e}");
    }
}
