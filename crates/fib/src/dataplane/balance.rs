//! NICBalance (seed 004 ch. 4) over the port groups of `[[dataplane.
//! port_group]]`, as elements of the built-in graph.
//!
//! A port group is a set of ports whose receiving and transmitting
//! compete for one resource (in the seed a PCI-X bus; here the core that
//! polls them). For each port `i` of a group with NICBalance, the built-in
//! graph gets
//!
//! ```text
//! nb<g>_<i> :: NICBalance(TX out<i>, RX in<j> in<k> ..., QUEUES out<i>,
//!                         QTHRESHOLD .., QSTABILITY .., RTHRESHOLD min max,
//!                         INTERVAL .., SUSPEND ..);
//! ```
//!
//! (`g` the group's index in file order, `j, k, ...` every port of the
//! group): the transmitter is port `i`'s `ToDevice`, its queue is that
//! element's transmit ring (what the device did not take yet), and the
//! correlated receivers are the group's `FromDevice`s. The graph's driver
//! (`graph::Runner`) enforces every `NICBalance` element the same way,
//! whether the built-in graph or an operator's graph holds it: one code
//! path. Its counters reach `show dataplane` and `/metrics` as the
//! element's own (see `GraphWorker::element_counters`).

use std::fmt::Write as _;

/// One port group with NICBalance on, resolved to port indices.
#[derive(Clone, Debug, PartialEq)]
pub struct BalanceGroup {
    /// The group's name (for messages).
    pub name: String,
    /// Its ports, as indices into the dataplane's ports.
    pub ports: Vec<usize>,
    /// Its thresholds.
    pub params: graph::BalanceParams,
}

// The ratios are finite (the config validates them): equality is total.
impl Eq for BalanceGroup {}

/// Checks `groups` against a dataplane of `ports` ports.
pub fn check(groups: &[BalanceGroup], ports: usize) -> Result<(), &'static str> {
    let mut seen = vec![false; ports];
    for g in groups {
        if g.ports.is_empty() {
            return Err("a NICBalance port group has no port");
        }
        for &p in &g.ports {
            match seen.get_mut(p) {
                None => return Err("a NICBalance port group names a port that does not exist"),
                Some(true) => return Err("a port is in two NICBalance port groups"),
                Some(s) => *s = true,
            }
        }
        if !g.params.ratios_ok() {
            return Err("NICBalance ratios must satisfy 0 <= min < max");
        }
    }
    Ok(())
}

/// The `NICBalance` elements of `groups` for the built-in graph (whose
/// port `i` has `FromDevice` `in<i>` and `ToDevice` `out<i>`).
pub fn balance_config(groups: &[BalanceGroup]) -> String {
    let mut s = String::new();
    for (g, grp) in groups.iter().enumerate() {
        let rx: Vec<String> = grp.ports.iter().map(|j| format!("in{j}")).collect();
        for i in &grp.ports {
            let _ = writeln!(
                s,
                "nb{g}_{i} :: NICBalance(TX out{i}, RX {}, QUEUES out{i}, {});",
                rx.join(" "),
                grp.params.element_args()
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(ports: Vec<usize>) -> BalanceGroup {
        BalanceGroup {
            name: "g".into(),
            ports,
            params: graph::BalanceParams {
                interval: 16,
                suspend: 8,
                ..Default::default()
            },
        }
    }

    #[test]
    fn one_element_per_transmitter_of_the_group() {
        let t = balance_config(&[group(vec![0, 2])]);
        assert_eq!(
            t,
            "nb0_0 :: NICBalance(TX out0, RX in0 in2, QUEUES out0, QTHRESHOLD 100, QSTABILITY 3, RTHRESHOLD 1.3 1.6, INTERVAL 16, SUSPEND 8);\n\
             nb0_2 :: NICBalance(TX out2, RX in0 in2, QUEUES out2, QTHRESHOLD 100, QSTABILITY 3, RTHRESHOLD 1.3 1.6, INTERVAL 16, SUSPEND 8);\n"
        );
        assert_eq!(balance_config(&[]), "");
    }

    #[test]
    fn checks_ports_and_ratios() {
        assert!(check(&[group(vec![0, 1])], 2).is_ok());
        assert!(check(&[group(vec![2])], 2).is_err());
        assert!(check(&[group(vec![0]), group(vec![0])], 2).is_err());
        assert!(check(&[group(vec![])], 2).is_err());
        let mut g = group(vec![0]);
        g.params.max_ratio = 1.0;
        assert!(check(&[g], 2).is_err());
    }
}
