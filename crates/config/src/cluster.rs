//! `[cluster]`: this router is one node of a cluster router (crate
//! `cluster`; `docs/cluster-fabric.md`). The fabric is a port of
//! Tessera's own dataplane, so the section needs a `[dataplane]`, for now
//! with one core, the graph engine, no kernel export and no separate
//! dataplane process (each refused as "not supported yet").
//!
//! ```toml
//! [cluster]
//! node_id = 0
//! fabric_address = "198.18.100.1"   # UDP 6081 unless ADDRESS:PORT
//! mode = "direct-vlb"               # direct | vlb | direct-vlb
//! packing = 16                      # frames per fabric packet, 1 = off (1..=29)
//! affinity = true                   # flow affinity (100 ms bursts)
//! fabric_mtu = 1500
//! port_rate_mbps = 1000             # R of Direct VLB (only with mode = "direct-vlb")
//! bfd_min_tx = 10                   # ms, BFD to every peer (liveness)
//! bfd_multiplier = 3
//!
//! [[cluster.peer]]
//! node_id = 1
//! fabric_address = "198.18.100.2"
//! ```

use std::net::{IpAddr, SocketAddr};

use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    pub node_id: Option<i64>,
    pub fabric_address: Option<String>,
    pub mode: Option<String>,
    pub packing: Option<i64>,
    pub affinity: Option<bool>,
    pub fabric_mtu: Option<i64>,
    pub port_rate_mbps: Option<i64>,
    #[serde(default)]
    pub peer: Vec<RawPeer>,
    pub bfd_min_tx: Option<i64>,
    pub bfd_multiplier: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPeer {
    pub node_id: Option<i64>,
    pub fabric_address: Option<String>,
}

/// The GENEVE UDP port (RFC 8926 §7.1), the default fabric port.
pub const FABRIC_PORT: u16 = 6081;
/// Node ids are `0..MAX_NODES`.
pub const MAX_NODES: u16 = 64;
/// The most frames one fabric packet carries (the cluster option's table).
pub const MAX_PACKING: u8 = 29;

/// Load-balancing mode over the fabric (RouteBricks, seed 003).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClusterMode {
    /// One fabric hop to the egress.
    Direct,
    /// Valiant load balancing: a random intermediate, then the egress.
    Vlb,
    /// Direct up to R/N per pair, the excess through random intermediates.
    DirectVlb,
}

/// Another node of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterPeer {
    /// Its node id.
    pub node_id: u16,
    /// Where its fabric socket is.
    pub fabric_address: SocketAddr,
}

/// `[cluster]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// `node_id`: 0..=63, unique in the cluster.
    pub node_id: u16,
    /// `fabric_address`: this node's fabric socket (port 6081 unless given).
    pub fabric_address: SocketAddr,
    /// `mode` (default `direct`).
    pub mode: ClusterMode,
    /// `packing`: the packing degree, 1..=29 (default 16; 1 = off).
    pub packing: u8,
    /// `affinity` (default true).
    pub affinity: bool,
    /// `fabric_mtu`: IP MTU of the fabric links, 576..=9216 (default 1500).
    pub fabric_mtu: u16,
    /// `port_rate_mbps`: R, Mbit/s, for `direct-vlb` only (default 1000).
    pub port_rate_mbps: u32,
    /// `[[cluster.peer]]`, in file order.
    pub peers: Vec<ClusterPeer>,
    /// `bfd_min_tx`, ms, 1..=60000 (default 10): Desired Min TX and
    /// Required Min RX of the BFD session tesserad runs to every peer's
    /// fabric address (liveness, `Dataplane::set_node_live`).
    pub bfd_min_tx_ms: u32,
    /// `bfd_multiplier`, 1..=255 (default 3): its Detect Mult.
    pub bfd_multiplier: u8,
}

/// What the fabric needs of `[dataplane]` (`had_dataplane`: the section
/// was written, whether or not it validated).
pub(crate) fn check_dataplane(
    c: &Ctx<'_>,
    _k: &Cluster,
    d: Option<&crate::Dataplane>,
    had_dataplane: bool,
) -> R<()> {
    let Some(d) = d else {
        if had_dataplane {
            // Its own error is reported already.
            return Ok(());
        }
        return Err(c.err(
            "cluster",
            "[cluster] needs a [dataplane]: the fabric is a port of Tessera's dataplane",
        ));
    };
    if d.feed_socket.is_some() {
        return Err(c.err(
            "dataplane.feed_socket",
            "not supported yet with [cluster]: the fabric runs in tesserad's own dataplane",
        ));
    }
    if d.cores != 1 {
        return Err(c.err(
            "dataplane.cores",
            "not supported yet with [cluster]: the fabric runs on one dataplane core",
        ));
    }
    if d.engine != crate::DataplaneEngine::Graph {
        return Err(c.err(
            "dataplane.engine",
            "not supported yet with [cluster]: the fabric needs engine = \"graph\"",
        ));
    }
    if d.kernel.is_some() {
        return Err(c.err(
            "dataplane.kernel",
            "not supported yet with [cluster]: kernel export of routes through the fabric",
        ));
    }
    Ok(())
}

fn fabric_address(c: &Ctx<'_>, path: &str, v: Option<&str>) -> R<SocketAddr> {
    let v = v.ok_or_else(|| c.err(path, "missing: the node's fabric address"))?;
    let a = if let Ok(ip) = v.parse::<IpAddr>() {
        SocketAddr::new(ip, FABRIC_PORT)
    } else {
        v.parse::<SocketAddr>().map_err(|_| {
            c.err(
                path,
                format!("{v:?}: expected ADDRESS or ADDRESS:PORT ([ADDRESS]:PORT for IPv6)"),
            )
        })?
    };
    if a.ip().is_unspecified() || a.ip().is_multicast() || a.port() == 0 {
        return Err(c.err(path, format!("{v:?}: not a unicast address and port")));
    }
    Ok(a)
}

fn node_id(c: &Ctx<'_>, path: &str, v: Option<i64>) -> R<u16> {
    match v {
        None => Err(c.err(path, "missing: a node id")),
        Some(n) if (0..i64::from(MAX_NODES)).contains(&n) => Ok(n as u16),
        Some(n) => Err(c.err(path, format!("{n}: a node id is 0..={}", MAX_NODES - 1))),
    }
}

pub(crate) fn validate(c: &Ctx<'_>, r: &RawCluster) -> R<Cluster> {
    let id = node_id(c, "cluster.node_id", r.node_id)?;
    let addr = fabric_address(c, "cluster.fabric_address", r.fabric_address.as_deref())?;
    let mode = match r.mode.as_deref().unwrap_or("direct") {
        "direct" => ClusterMode::Direct,
        "vlb" => ClusterMode::Vlb,
        "direct-vlb" => ClusterMode::DirectVlb,
        o => {
            return Err(c.err(
                "cluster.mode",
                format!("{o:?}: expected \"direct\", \"vlb\" or \"direct-vlb\""),
            ))
        }
    };
    let packing = match r.packing {
        None => 16,
        Some(n) if (1..=i64::from(MAX_PACKING)).contains(&n) => n as u8,
        Some(n) => {
            return Err(c.err(
                "cluster.packing",
                format!("{n}: the packing degree is 1..={MAX_PACKING} (1 = off)"),
            ))
        }
    };
    let fabric_mtu = match r.fabric_mtu {
        None => 1500,
        Some(n) if (576..=9216).contains(&n) => n as u16,
        Some(n) => {
            return Err(c.err(
                "cluster.fabric_mtu",
                format!("{n}: the fabric MTU is 576..=9216"),
            ))
        }
    };
    let port_rate_mbps = match (r.port_rate_mbps, mode) {
        (None, _) => 1000,
        (Some(n), ClusterMode::DirectVlb) if (1..=1_000_000).contains(&n) => n as u32,
        (Some(n), ClusterMode::DirectVlb) => {
            return Err(c.err(
                "cluster.port_rate_mbps",
                format!("{n}: the port rate is 1..=1000000 Mbit/s"),
            ))
        }
        (Some(_), _) => {
            return Err(c.err(
                "cluster.port_rate_mbps",
                "port_rate_mbps is only used by mode = \"direct-vlb\"",
            ))
        }
    };
    if r.peer.is_empty() {
        return Err(c.err("cluster", "a cluster needs at least one [[cluster.peer]]"));
    }
    let mut peers: Vec<ClusterPeer> = Vec::new();
    for (i, p) in r.peer.iter().enumerate() {
        let path = format!("cluster.peer[{i}]");
        let pid = node_id(c, &format!("{path}.node_id"), p.node_id)?;
        let pa = fabric_address(
            c,
            &format!("{path}.fabric_address"),
            p.fabric_address.as_deref(),
        )?;
        if pid == id || peers.iter().any(|x| x.node_id == pid) {
            return Err(c.err(
                &format!("{path}.node_id"),
                format!("node id {pid} is used twice in the cluster"),
            ));
        }
        if pa == addr || peers.iter().any(|x| x.fabric_address == pa) {
            return Err(c.err(
                &format!("{path}.fabric_address"),
                format!("{pa} is used twice in the cluster"),
            ));
        }
        if pa.is_ipv4() != addr.is_ipv4() {
            return Err(c.err(
                &format!("{path}.fabric_address"),
                "the fabric is one address family: this node's fabric_address is of the other",
            ));
        }
        peers.push(ClusterPeer {
            node_id: pid,
            fabric_address: pa,
        });
    }
    let bfd_min_tx_ms = match r.bfd_min_tx {
        None => 10,
        Some(n) if (1..=60_000).contains(&n) => n as u32,
        Some(n) => {
            return Err(c.err(
                "cluster.bfd_min_tx",
                format!("{n}: the BFD interval is 1..=60000 ms"),
            ))
        }
    };
    let bfd_multiplier = match r.bfd_multiplier {
        None => 3,
        Some(n) if (1..=255).contains(&n) => n as u8,
        Some(n) => {
            return Err(c.err(
                "cluster.bfd_multiplier",
                format!("{n}: the BFD multiplier is 1..=255"),
            ))
        }
    };
    Ok(Cluster {
        bfd_min_tx_ms,
        bfd_multiplier,
        node_id: id,
        fabric_address: addr,
        mode,
        packing,
        affinity: r.affinity.unwrap_or(true),
        fabric_mtu,
        port_rate_mbps,
        peers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n\
        [dataplane]\nio = \"af_packet\"\n[[dataplane.interface]]\nname = \"r0\"\n\n[cluster]\n";
    const PEER: &str = "[[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.2\"\n";

    #[test]
    fn parses_defaults_and_everything() {
        let c = crate::parse(
            &format!("{HEAD}node_id = 0\nfabric_address = \"198.18.100.1\"\n{PEER}"),
            "t.toml",
        )
        .expect("valid");
        let k = c.cluster.expect("cluster");
        assert_eq!(k.node_id, 0);
        assert_eq!(k.fabric_address, "198.18.100.1:6081".parse().expect("sa"));
        assert_eq!(
            (
                k.mode,
                k.packing,
                k.affinity,
                k.fabric_mtu,
                k.port_rate_mbps
            ),
            (ClusterMode::Direct, 16, true, 1500, 1000)
        );
        assert_eq!((k.bfd_min_tx_ms, k.bfd_multiplier), (10, 3));
        assert_eq!(
            k.peers,
            vec![ClusterPeer {
                node_id: 1,
                fabric_address: "198.18.100.2:6081".parse().expect("sa")
            }]
        );
        let c = crate::parse(
            &format!("{HEAD}node_id = 5\nfabric_address = \"127.0.0.1:16081\"\nmode = \"direct-vlb\"\npacking = 1\naffinity = false\nfabric_mtu = 9000\nport_rate_mbps = 10000\nbfd_min_tx = 100\nbfd_multiplier = 5\n[[cluster.peer]]\nnode_id = 1\nfabric_address = \"127.0.0.1:16082\"\n"),
            "t.toml",
        )
        .expect("valid");
        let k = c.cluster.expect("cluster");
        assert_eq!(
            (
                k.node_id,
                k.mode,
                k.packing,
                k.affinity,
                k.fabric_mtu,
                k.port_rate_mbps
            ),
            (5, ClusterMode::DirectVlb, 1, false, 9000, 10000)
        );
        assert_eq!((k.bfd_min_tx_ms, k.bfd_multiplier), (100, 5));
        assert!(
            crate::parse(HEAD.trim_end_matches("\n[cluster]\n"), "t.toml")
                .expect("valid")
                .cluster
                .is_none()
        );
    }

    #[test]
    fn rejects_bad_values_with_their_field_and_line() {
        let base = "node_id = 0\nfabric_address = \"198.18.100.1\"\n";
        for (body, field, line) in [
            ("fabric_address = \"198.18.100.1\"\n", "cluster.node_id", 10),
            (
                "node_id = 64\nfabric_address = \"198.18.100.1\"\n",
                "cluster.node_id",
                11,
            ),
            ("node_id = 0\n", "cluster.fabric_address", 10),
            (
                "node_id = 0\nfabric_address = \"nowhere\"\n",
                "cluster.fabric_address",
                12,
            ),
            (&format!("{base}mode = \"ecmp\"\n"), "cluster.mode", 13),
            (&format!("{base}packing = 0\n"), "cluster.packing", 13),
            (&format!("{base}bfd_min_tx = 0\n"), "cluster.bfd_min_tx", 13),
            (
                &format!("{base}bfd_multiplier = 256\n"),
                "cluster.bfd_multiplier",
                13,
            ),
            (&format!("{base}packing = 30\n"), "cluster.packing", 13),
            (
                &format!("{base}fabric_mtu = 100\n"),
                "cluster.fabric_mtu",
                13,
            ),
            (
                &format!("{base}port_rate_mbps = 10\n"),
                "cluster.port_rate_mbps",
                13,
            ),
        ] {
            let e = crate::parse(&format!("{HEAD}{body}{PEER}"), "t.toml").expect_err(body);
            assert_eq!((e.field.as_str(), e.line), (field, line), "{body}: {e}");
            assert!(e.to_string().starts_with(&format!("t.toml:{line}:")), "{e}");
        }
        for (peers, field) in [
            ("", "cluster"),
            (
                "[[cluster.peer]]\nnode_id = 0\nfabric_address = \"198.18.100.2\"\n",
                "cluster.peer[0].node_id",
            ),
            (&format!("{PEER}{PEER}"), "cluster.peer[1].node_id"),
            (
                "[[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.1\"\n",
                "cluster.peer[0].fabric_address",
            ),
            (
                "[[cluster.peer]]\nnode_id = 1\nfabric_address = \"2001:db8::1\"\n",
                "cluster.peer[0].fabric_address",
            ),
            (
                "[[cluster.peer]]\nnode_id = 1\n",
                "cluster.peer[0].fabric_address",
            ),
        ] {
            let e = crate::parse(&format!("{HEAD}{base}{peers}"), "t.toml").expect_err(peers);
            assert_eq!(e.field, field, "{peers}: {e}");
        }
        let e =
            crate::parse(&format!("{HEAD}{base}speed = 1\n{PEER}"), "t.toml").expect_err("unknown");
        assert!(e.message.contains("speed"), "{e}");
    }
}

#[cfg(test)]
mod dataplane_tests {
    const R: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n";
    const K: &str = "[cluster]\nnode_id = 0\nfabric_address = \"198.18.100.1\"\n\
        [[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.2\"\n";

    #[test]
    fn the_fabric_needs_a_one_core_graph_dataplane() {
        let e = crate::parse(&format!("{R}{K}"), "t.toml").expect_err("no dataplane");
        assert_eq!(e.field, "cluster", "{e}");
        assert!(e.message.contains("needs a [dataplane]"), "{e}");
        for (extra, field) in [
            ("cores = 2\n", "dataplane.cores"),
            ("engine = \"fast\"\n", "dataplane.engine"),
            ("kernel = true\n", "dataplane.kernel"),
            ("feed_socket = \"/tmp/f.sock\"\n", "dataplane.feed_socket"),
        ] {
            let text =
                format!("{R}[dataplane]\n{extra}[[dataplane.interface]]\nname = \"r0\"\n{K}");
            let e = crate::parse(&text, "t.toml").expect_err(extra);
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.starts_with("not supported yet"), "{e}");
        }
        let ok = format!("{R}[dataplane]\n[[dataplane.interface]]\nname = \"r0\"\n{K}");
        assert!(crate::parse(&ok, "t.toml")
            .expect("valid")
            .cluster
            .is_some());
    }
}
