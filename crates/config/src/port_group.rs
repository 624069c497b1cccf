//! `[[dataplane.port_group]]`: ports that share a resource (a bus, a NIC,
//! here the forwarding core), and NICBalance (seed 004 ch. 4,
//! `../shared/docs/cluster-spec.md` §3) over them.
//!
//! ```toml
//! [[dataplane.port_group]]
//! name = "bus0"
//! interfaces = ["eth1", "eth2"]
//! nicbalance = true        # adaptive RX/TX scheduling over these ports
//! qthreshold = 100         # EWMA queue length that means "congested" (packets)
//! qstability = 3           # EWMA weight 2^-qstability
//! rthreshold = [1.3, 1.6]  # receive/transmit ratios: cut tickets above the
//!                          # first, suspend the receiver above the second
//! interval = 16            # polls between two evaluations (the seed's TICKETS 16)
//! suspend = 1024           # polls a suspended receiver stays off
//! ```
//!
//! With `nicbalance = true`, the built-in graph gets one `NICBalance`
//! element per port of the group: its transmitter (`ToDevice`) is that
//! port, its queue that transmitter's ring, and its correlated receivers
//! every port of the group. The defaults are the seed's (§4.4.3). The
//! tuning keys without `nicbalance = true` are refused (they would do
//! nothing), and so is `nicbalance` with `[dataplane] graph` (an
//! operator's graph places its own `NICBalance(...)` elements). A group
//! change is applied by a reload (the built-in graph is rebuilt on the
//! same FIB).

use serde::Deserialize;

use crate::validate::{is_name, Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPortGroup {
    pub name: String,
    #[serde(default)]
    pub interfaces: Vec<String>,
    pub nicbalance: Option<bool>,
    pub qthreshold: Option<i64>,
    pub qstability: Option<i64>,
    pub rthreshold: Option<Vec<f64>>,
    pub interval: Option<i64>,
    pub suspend: Option<i64>,
}

/// NICBalance's parameters (seed 004 §4.4.3; `graph::balance`).
#[derive(Clone, Debug, PartialEq)]
pub struct NicBalanceParams {
    /// `qthreshold`: congested above this EWMA queue length (default 100).
    pub qthreshold: u32,
    /// `qstability`: EWMA weight `2^-qstability`, 0..=16 (default 3).
    pub qstability: u32,
    /// `rthreshold[0]`: below this receive/transmit ratio nothing changes
    /// (default 1.3).
    pub min_ratio: f64,
    /// `rthreshold[1]`: above it the receiver is suspended (default 1.6).
    pub max_ratio: f64,
    /// `interval`: polls between evaluations, 1..=1048576 (default 16).
    pub interval: u32,
    /// `suspend`: polls a suspended receiver is skipped, 1..=1048576
    /// (default 1024; the seed gives none, see `graph::BalanceSpec`).
    pub suspend: u32,
}

// The ratios are finite (validated), so equality is total.
impl Eq for NicBalanceParams {}

impl Default for NicBalanceParams {
    fn default() -> Self {
        NicBalanceParams {
            qthreshold: 100,
            qstability: 3,
            min_ratio: 1.3,
            max_ratio: 1.6,
            interval: 16,
            suspend: 1024,
        }
    }
}

/// One `[[dataplane.port_group]]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortGroup {
    /// `name`: `[A-Za-z0-9_-]+`, unique.
    pub name: String,
    /// `interfaces`: dataplane interfaces (`[[dataplane.interface]]`),
    /// each in at most one group.
    pub interfaces: Vec<String>,
    /// `nicbalance = true`: the parameters; `None` when off.
    pub nicbalance: Option<NicBalanceParams>,
}

fn ranged(c: &Ctx<'_>, path: &str, v: Option<i64>, lo: i64, hi: i64, def: u32) -> R<u32> {
    match v {
        None => Ok(def),
        Some(n) if (lo..=hi).contains(&n) => Ok(n as u32),
        Some(n) => Err(c.err(path, format!("{n}: expected {lo}..={hi}"))),
    }
}

/// Validates the groups against the dataplane's interface names.
/// `operator_graph`: `[dataplane] graph` is set.
pub(crate) fn validate(
    c: &Ctx<'_>,
    raw: &[RawPortGroup],
    interfaces: &[&str],
    operator_graph: bool,
) -> R<Vec<PortGroup>> {
    let mut out: Vec<PortGroup> = Vec::new();
    for (g, r) in raw.iter().enumerate() {
        let path = format!("dataplane.port_group[{g}]");
        let at = |k: &str| format!("{path}.{k}");
        if !is_name(&r.name) {
            return Err(c.err(&at("name"), "a group name is [A-Za-z0-9_-]+ (1..=64)"));
        }
        if out.iter().any(|x| x.name == r.name) {
            return Err(c.err(&at("name"), format!("{:?} is listed twice", r.name)));
        }
        if r.interfaces.is_empty() {
            return Err(c.err(&at("interfaces"), "a group needs at least one interface"));
        }
        for (k, i) in r.interfaces.iter().enumerate() {
            let p = format!("{path}.interfaces[{k}]");
            if !interfaces.contains(&i.as_str()) {
                return Err(c.err(
                    &p,
                    format!(
                        "{i:?} is not a [[dataplane.interface]] (they are: {})",
                        interfaces.join(", ")
                    ),
                ));
            }
            if r.interfaces[..k].contains(i) {
                return Err(c.err(&p, format!("{i:?} is listed twice")));
            }
            if let Some(o) = out.iter().find(|x| x.interfaces.contains(i)) {
                return Err(c.err(&p, format!("{i:?} is already in group {:?}", o.name)));
            }
        }
        let on = r.nicbalance == Some(true);
        let tuned = [
            ("qthreshold", r.qthreshold.is_some()),
            ("qstability", r.qstability.is_some()),
            ("rthreshold", r.rthreshold.is_some()),
            ("interval", r.interval.is_some()),
            ("suspend", r.suspend.is_some()),
        ];
        if !on {
            if let Some((k, _)) = tuned.iter().find(|(_, set)| *set) {
                return Err(c.err(&at(k), format!("{k} set without nicbalance = true")));
            }
        }
        if on && operator_graph {
            return Err(c.err(
                &at("nicbalance"),
                "nicbalance with [dataplane] graph: the operator's graph decides; put \
                 NICBalance(TX .., RX .., QUEUES ..) elements in it (docs/elements.md)",
            ));
        }
        let nicbalance = if on {
            let d = NicBalanceParams::default();
            let (min_ratio, max_ratio) = match r.rthreshold.as_deref() {
                None => (d.min_ratio, d.max_ratio),
                Some(&[lo, hi]) if lo.is_finite() && hi.is_finite() && lo >= 0.0 && lo < hi => {
                    (lo, hi)
                }
                Some(_) => {
                    return Err(c.err(
                        &at("rthreshold"),
                        "expected [MIN, MAX] with 0 <= MIN < MAX (the seed's [1.3, 1.6])",
                    ))
                }
            };
            Some(NicBalanceParams {
                qthreshold: ranged(c, &at("qthreshold"), r.qthreshold, 1, 1 << 20, d.qthreshold)?,
                qstability: ranged(c, &at("qstability"), r.qstability, 0, 16, d.qstability)?,
                min_ratio,
                max_ratio,
                interval: ranged(c, &at("interval"), r.interval, 1, 1 << 20, d.interval)?,
                suspend: ranged(c, &at("suspend"), r.suspend, 1, 1 << 20, d.suspend)?,
            })
        } else {
            None
        };
        out.push(PortGroup {
            name: r.name.clone(),
            interfaces: r.interfaces.clone(),
            nicbalance,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::NicBalanceParams;

    const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n[dataplane]\n";
    const IFS: &str =
        "[[dataplane.interface]]\nname = \"r0\"\n[[dataplane.interface]]\nname = \"r1\"\n";

    fn parse(extra: &str) -> Result<crate::Config, crate::ConfigError> {
        crate::parse(&format!("{HEAD}{IFS}{extra}"), "t.toml")
    }

    #[test]
    fn defaults_are_the_seeds_and_overrides_apply() {
        let c = parse("[[dataplane.port_group]]\nname = \"bus0\"\ninterfaces = [\"r0\", \"r1\"]\nnicbalance = true\n")
            .expect("valid");
        let g = &c.dataplane.expect("dataplane").port_groups[0];
        assert_eq!(g.interfaces, ["r0", "r1"]);
        assert_eq!(g.nicbalance, Some(NicBalanceParams::default()));
        let c = parse(
            "[[dataplane.port_group]]\nname = \"bus0\"\ninterfaces = [\"r1\"]\nnicbalance = true\n\
             qthreshold = 50\nqstability = 2\nrthreshold = [1.1, 2.0]\ninterval = 4\nsuspend = 2\n\
             [[dataplane.port_group]]\nname = \"quiet\"\ninterfaces = [\"r0\"]\nnicbalance = false\n",
        )
        .expect("valid");
        let d = c.dataplane.expect("dataplane");
        assert_eq!(
            d.port_groups[0].nicbalance,
            Some(NicBalanceParams {
                qthreshold: 50,
                qstability: 2,
                min_ratio: 1.1,
                max_ratio: 2.0,
                interval: 4,
                suspend: 2
            })
        );
        assert_eq!(d.port_groups[1].nicbalance, None);
    }

    #[test]
    fn errors_name_the_field_and_its_position() {
        for (body, field, want) in [
            (
                "name = \"a b\"\ninterfaces = [\"r0\"]\n",
                "name",
                "[A-Za-z0-9_-]+",
            ),
            (
                "name = \"g\"\ninterfaces = []\n",
                "interfaces",
                "at least one",
            ),
            (
                "name = \"g\"\ninterfaces = [\"eth9\"]\n",
                "interfaces[0]",
                "not a [[dataplane.interface]]",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\", \"r0\"]\n",
                "interfaces[1]",
                "listed twice",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nqthreshold = 5\n",
                "qthreshold",
                "without nicbalance = true",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = false\nsuspend = 5\n",
                "suspend",
                "without nicbalance = true",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\nrthreshold = [1.6, 1.3]\n",
                "rthreshold",
                "MIN < MAX",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\nrthreshold = [1.3]\n",
                "rthreshold",
                "MIN < MAX",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\nqstability = 17\n",
                "qstability",
                "0..=16",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\ninterval = 0\n",
                "interval",
                "1..=1048576",
            ),
            (
                "name = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\nqthreshold = -1\n",
                "qthreshold",
                "1..=1048576",
            ),
        ] {
            let e = parse(&format!("[[dataplane.port_group]]\n{body}")).expect_err(body);
            assert_eq!(
                e.field,
                format!("dataplane.port_group[0].{field}"),
                "{body}: {e}"
            );
            assert!(e.message.contains(want), "{body}: {e}");
            // The line of the offending key (the header is line 1 of the
            // group table; the key is below it).
            assert!(e.line > 8, "{body}: {e}");
        }
        let e = parse(
            "[[dataplane.port_group]]\nname = \"a\"\ninterfaces = [\"r0\"]\n\
             [[dataplane.port_group]]\nname = \"b\"\ninterfaces = [\"r0\"]\n",
        )
        .expect_err("r0 twice");
        assert_eq!(e.field, "dataplane.port_group[1].interfaces[0]");
        assert!(e.message.contains("already in group \"a\""), "{e}");
        let e = parse(
            "[[dataplane.port_group]]\nname = \"a\"\ninterfaces = [\"r0\"]\n\
             [[dataplane.port_group]]\nname = \"a\"\ninterfaces = [\"r1\"]\n",
        )
        .expect_err("a twice");
        assert_eq!(e.field, "dataplane.port_group[1].name");
        let e = crate::parse(
            &format!("{HEAD}graph = \"g.click\"\n{IFS}[[dataplane.port_group]]\nname = \"a\"\ninterfaces = [\"r0\"]\nnicbalance = true\n"),
            "t.toml",
        )
        .expect_err("nicbalance with an operator graph");
        assert_eq!(e.field, "dataplane.port_group[0].nicbalance");
        let e = parse("[[dataplane.port_group]]\nname = \"a\"\ninterfaces = [\"r0\"]\nspeed = 1\n")
            .expect_err("unknown key");
        assert!(e.message.contains("speed"), "{e}");
    }

    #[test]
    fn a_group_change_is_applied_by_a_reload() {
        let a = parse("").expect("valid");
        let b = parse(
            "[[dataplane.port_group]]\nname = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\n",
        )
        .expect("valid");
        let plan = crate::diff(&a, &b);
        assert!(!plan.other.contains(&"dataplane".to_string()), "{plan:?}");
    }
}
