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
//! # Internal congestion control (issue 15, docs/cc.md), all optional:
//! congestion_control = "price"      # none | becn-aimd-weights | price | aimd-rate
//! egress_shape_pps = 20000          # emulated egress port capacity C (TX shaper), pps
//! cc_queue_limit = 1000             # egress queue, packets
//! cc_interval_us = 1000             # control interval
//! cc_threshold = 100                # Q: BECN above this queue (becn-aimd-weights, aimd-rate)
//! cc_weight_incr = 20               # weight increment per interval (becn-aimd-weights)
//! cc_aimd_w_pps = 1308              # W: additive increase per interval (aimd-rate)
//! cc_aimd_m = 0.5                   # M: multiplicative decrease (aimd-rate)
//! cc_price_k = 2616                 # K of Eq 6.7 (price)
//! cc_price_r = 3.4e8                # R of Eq 7.9 (price)
//! cc_price_q_o = 100                # q_o of Eq 7.9 (price)
//! bfd_min_tx = 10                   # ms, BFD to every peer (liveness)
//! bfd_multiplier = 3
//!
//! [[cluster.peer]]
//! node_id = 1
//! fabric_address = "198.18.100.2"
//! ports = ["198.18.2.0/29"]          # its external ports' prefixes, in its interface order
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
    pub congestion_control: Option<String>,
    pub egress_shape_pps: Option<i64>,
    pub cc_queue_limit: Option<i64>,
    pub cc_interval_us: Option<i64>,
    pub cc_threshold: Option<i64>,
    pub cc_weight_incr: Option<i64>,
    pub cc_aimd_w_pps: Option<Num>,
    pub cc_aimd_m: Option<Num>,
    pub cc_price_k: Option<Num>,
    pub cc_price_r: Option<Num>,
    pub cc_price_q_o: Option<Num>,
    #[serde(default)]
    pub peer: Vec<RawPeer>,
    pub bfd_min_tx: Option<i64>,
    pub bfd_multiplier: Option<i64>,
}

/// A TOML number, integer or float.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn get(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPeer {
    pub node_id: Option<i64>,
    pub fabric_address: Option<String>,
    pub ports: Option<Vec<String>>,
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
    /// `ports`: the connected prefix of each of its external ports, in
    /// its `[dataplane] interfaces` order (port `i` is `ports[i]`). The
    /// ingress resolves a route through this peer to the port whose
    /// prefix holds the route's neighbour there and writes that port in
    /// the fabric option's tag; the peer forwards by the tag, without a
    /// lookup of its own.
    pub ports: Vec<base::Prefix>,
}

/// `[cluster]`, validated.
#[derive(Clone, Debug, PartialEq)]
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
    /// Internal congestion control and the egress shaper; `None` when
    /// neither is configured.
    pub cc: Option<ClusterCc>,
}

/// The congestion-control scheme (docs/cc.md).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CcScheme {
    /// No control (the egress queue and shaper only).
    None,
    /// Scheme A: BECN to the last source, AIMD scheduling weights.
    BecnAimdWeights,
    /// Scheme B′: the queue-based price of Eq 7.9, Eq 6.7 at the ingress.
    Price,
    /// Scheme C: BECN to all sources, AIMD rates.
    AimdRate,
}

impl CcScheme {
    /// The name in the configuration (and the elements' `SCHEME`).
    pub fn name(self) -> &'static str {
        match self {
            CcScheme::None => "none",
            CcScheme::BecnAimdWeights => "becn-aimd-weights",
            CcScheme::Price => "price",
            CcScheme::AimdRate => "aimd-rate",
        }
    }
}

/// `congestion_control` and its parameters, validated. Defaults are the
/// thesis's constants scaled to C (`egress_shape_pps`, else 764,500
/// pps): W and K in proportion to C, R to C² (so the loop gain of Eq 6.7
/// and the stability bound R > C²/(nW) keep their ratio).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterCc {
    /// `congestion_control` (default none).
    pub scheme: CcScheme,
    /// `egress_shape_pps`: C, the egress TX shaper (0: none).
    pub shape_pps: u64,
    /// `cc_queue_limit` (default 1000).
    pub queue_limit: u32,
    /// `cc_interval_us` (default 1000).
    pub interval_us: u32,
    /// `cc_threshold`: Q (default 100).
    pub threshold: u32,
    /// `cc_weight_incr` (default 20).
    pub weight_incr: u32,
    /// `cc_aimd_w_pps`: W.
    pub aimd_w: f64,
    /// `cc_aimd_m`: M (default 0.5).
    pub aimd_m: f64,
    /// `cc_price_k`: K.
    pub price_k: f64,
    /// `cc_price_r`: R.
    pub price_r: f64,
    /// `cc_price_q_o`: q_o (default 100).
    pub price_q_o: f64,
}

// The thesis's constants (crate cc's params), at its C.
const THESIS_C: f64 = 764_500.0;
const THESIS_W: f64 = 50_000.0;
const THESIS_K: f64 = 100_000.0;
const THESIS_R: f64 = 5e11;

fn validate_cc(c: &Ctx<'_>, r: &RawCluster) -> R<Option<ClusterCc>> {
    let scheme = match r.congestion_control.as_deref() {
        None | Some("none") => CcScheme::None,
        Some("becn-aimd-weights") => CcScheme::BecnAimdWeights,
        Some("price") => CcScheme::Price,
        Some("aimd-rate") => CcScheme::AimdRate,
        Some(o) => {
            return Err(c.err(
                "cluster.congestion_control",
                format!(
                    "{o:?}: expected \"none\", \"becn-aimd-weights\", \"price\" or \"aimd-rate\""
                ),
            ))
        }
    };
    let int = |key: &str, v: Option<i64>, lo: i64, hi: i64, only: &[CcScheme], def: u64| {
        let path = format!("cluster.{key}");
        match v {
            None => Ok(def),
            Some(_) if !only.contains(&scheme) => Err(c.err(
                &path,
                format!(
                    "{key} is only used with congestion_control = {}",
                    only.iter()
                        .map(|s| format!("{:?}", s.name()))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            )),
            Some(n) if (lo..=hi).contains(&n) => Ok(n as u64),
            Some(n) => Err(c.err(&path, format!("{n}: {key} is {lo}..={hi}"))),
        }
    };
    let real = |key: &str, v: Option<Num>, lo: f64, hi: f64, only: CcScheme, def: f64| {
        let path = format!("cluster.{key}");
        match v.map(Num::get) {
            None => Ok(def),
            Some(_) if scheme != only => Err(c.err(
                &path,
                format!(
                    "{key} is only used with congestion_control = {:?}",
                    only.name()
                ),
            )),
            Some(x) if x.is_finite() && x > lo && x <= hi => Ok(x),
            Some(x) => Err(c.err(&path, format!("{x}: {key} is above {lo}, at most {hi}"))),
        }
    };
    let all = [
        CcScheme::BecnAimdWeights,
        CcScheme::Price,
        CcScheme::AimdRate,
    ];
    let shape = match r.egress_shape_pps {
        None => 0,
        Some(n) if (1..=100_000_000).contains(&n) => n as u64,
        Some(n) => {
            return Err(c.err(
                "cluster.egress_shape_pps",
                format!("{n}: the egress shaper is 1..=100000000 pps"),
            ))
        }
    };
    // The queue the controllers watch is CcEgress's, which only builds up
    // behind the shaper: the external port's own queue is not monitored.
    if shape == 0 && scheme != CcScheme::None {
        return Err(c.err(
            "cluster.congestion_control",
            "not supported yet without egress_shape_pps: the egress queue the controllers \
             watch is the shaper's (the external port's own queue is not monitored)",
        ));
    }
    if shape == 0 && r.cc_queue_limit.is_some() {
        return Err(c.err(
            "cluster.cc_queue_limit",
            "cc_queue_limit bounds the queue of egress_shape_pps, which is not set",
        ));
    }
    let cap = if shape > 0 { shape as f64 } else { THESIS_C };
    let f = cap / THESIS_C;
    let queue_limit = int(
        "cc_queue_limit",
        r.cc_queue_limit,
        1,
        1 << 20,
        &[
            CcScheme::None,
            CcScheme::BecnAimdWeights,
            CcScheme::Price,
            CcScheme::AimdRate,
        ],
        1000,
    )?;
    let cc = ClusterCc {
        scheme,
        shape_pps: shape,
        queue_limit: queue_limit as u32,
        interval_us: int(
            "cc_interval_us",
            r.cc_interval_us,
            10,
            1_000_000,
            &all,
            1000,
        )? as u32,
        threshold: int(
            "cc_threshold",
            r.cc_threshold,
            1,
            1 << 20,
            &[CcScheme::BecnAimdWeights, CcScheme::AimdRate],
            100,
        )? as u32,
        weight_incr: int(
            "cc_weight_incr",
            r.cc_weight_incr,
            1,
            1000,
            &[CcScheme::BecnAimdWeights],
            20,
        )? as u32,
        aimd_w: real(
            "cc_aimd_w_pps",
            r.cc_aimd_w_pps,
            0.0,
            1e9,
            CcScheme::AimdRate,
            THESIS_W * f,
        )?,
        aimd_m: real(
            "cc_aimd_m",
            r.cc_aimd_m,
            0.0,
            0.999,
            CcScheme::AimdRate,
            0.5,
        )?,
        price_k: real(
            "cc_price_k",
            r.cc_price_k,
            0.0,
            1e12,
            CcScheme::Price,
            THESIS_K * f,
        )?,
        price_r: real(
            "cc_price_r",
            r.cc_price_r,
            0.0,
            1e20,
            CcScheme::Price,
            THESIS_R * f * f,
        )?,
        price_q_o: real(
            "cc_price_q_o",
            r.cc_price_q_o,
            0.0,
            1e6,
            CcScheme::Price,
            100.0,
        )?,
    };
    let configured = scheme != CcScheme::None || shape > 0 || r.cc_queue_limit.is_some();
    Ok(configured.then_some(cc))
}

/// What the fabric needs of `[dataplane]` (`had_dataplane`: the section
/// was written, whether or not it validated).
pub(crate) fn check_dataplane(
    c: &Ctx<'_>,
    k: &Cluster,
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
    if d.graph.is_some() {
        return Err(c.err(
            "dataplane.graph",
            "not supported yet with [cluster]: the fabric's elements are the built-in graph's",
        ));
    }

    if d.cores != 1 && k.cc.is_some() {
        return Err(c.err(
            "dataplane.cores",
            "not supported yet with [cluster] congestion control: its egress shaper and \
             controllers run on one dataplane core",
        ));
    }
    if d.engine == crate::DataplaneEngine::Fast {
        return Err(c.err(
            "dataplane.engine",
            "not supported yet with [cluster]: the fabric keeps the unfused chain (leave engine \
             unset, or \"graph\")",
        ));
    }
    if d.ipsec.is_some() {
        return Err(c.err(
            "dataplane.ipsec",
            "not supported yet with [cluster]: IPsec runs in a single-node dataplane",
        ));
    }
    if d.kernel.is_some() {
        return Err(c.err(
            "dataplane.kernel",
            "not supported with [cluster]: routes across the fabric leave through GENEVE in \
             tesserad's dataplane and have no kernel next hop (as plain IP to a peer's fabric \
             address nothing forwards them); exporting only the external ports' routes would \
             leave the kernel a partial table",
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
        let Some(raw_ports) = &p.ports else {
            return Err(c.err(
                &format!("{path}.ports"),
                "needed: the connected prefix of each of the peer's external ports, in its \
                 interface order (empty for a node without external ports); the ingress \
                 writes the egress port in the fabric tag",
            ));
        };
        if raw_ports.len() > 255 {
            return Err(c.err(&format!("{path}.ports"), "at most 255 ports (an 8-bit tag)"));
        }
        let mut ports = Vec::new();
        for (j, s) in raw_ports.iter().enumerate() {
            let f = format!("{path}.ports[{j}]");
            let pfx: base::Prefix = s
                .parse()
                .map_err(|_| c.err(&f, format!("{s:?} is not a prefix (ADDR/LEN)")))?;
            ports.push(pfx.masked());
        }
        peers.push(ClusterPeer {
            node_id: pid,
            fabric_address: pa,
            ports,
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
    let cc = validate_cc(c, r)?;
    Ok(Cluster {
        cc,
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
    const PEER: &str = "[[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.2\"\nports = [\"198.18.2.1/29\", \"2001:db8:2::/64\"]\n";

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
                fabric_address: "198.18.100.2:6081".parse().expect("sa"),
                ports: vec![
                    "198.18.2.0/29".parse().expect("pfx"),
                    "2001:db8:2::/64".parse().expect("pfx")
                ],
            }]
        );
        let c = crate::parse(
            &format!("{HEAD}node_id = 5\nfabric_address = \"127.0.0.1:16081\"\nmode = \"direct-vlb\"\npacking = 1\naffinity = false\nfabric_mtu = 9000\nport_rate_mbps = 10000\nbfd_min_tx = 100\nbfd_multiplier = 5\n[[cluster.peer]]\nnode_id = 1\nfabric_address = \"127.0.0.1:16082\"\nports = []\n"),
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
            (
                "[[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.2\"\n",
                "cluster.peer[0].ports",
            ),
            (
                "[[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.2\"\nports = [\"198.18.2.1\"]\n",
                "cluster.peer[0].ports[0]",
            ),
        ] {
            let e = crate::parse(&format!("{HEAD}{base}{peers}"), "t.toml").expect_err(peers);
            assert_eq!(e.field, field, "{peers}: {e}");
        }
        let e =
            crate::parse(&format!("{HEAD}{base}speed = 1\n{PEER}"), "t.toml").expect_err("unknown");
        assert!(e.message.contains("speed"), "{e}");
    }

    #[test]
    fn congestion_control_parses_scales_and_refuses_keys_that_would_not_act() {
        let base = "node_id = 0\nfabric_address = \"198.18.100.1\"\n";
        let k = |extra: &str| {
            crate::parse(&format!("{HEAD}{base}{extra}{PEER}"), "t.toml")
                .expect("valid")
                .cluster
                .expect("cluster")
        };
        assert_eq!(k("").cc, None);
        let cc = k("congestion_control = \"price\"\negress_shape_pps = 20000\n")
            .cc
            .expect("cc");
        assert_eq!(
            (cc.scheme, cc.shape_pps, cc.queue_limit),
            (CcScheme::Price, 20000, 1000)
        );
        // K scales with C, R with C².
        let f = 20000.0 / THESIS_C;
        assert!((cc.price_k - THESIS_K * f).abs() < 1e-6);
        assert!((cc.price_r - THESIS_R * f * f).abs() < 1.0);
        let cc = k(
            "congestion_control = \"aimd-rate\"\ncc_aimd_w_pps = 1300\ncc_aimd_m = 0.25\n\
                    cc_threshold = 50\ncc_interval_us = 500\negress_shape_pps = 1000\n",
        )
        .cc
        .expect("cc");
        assert_eq!(
            (
                cc.aimd_w,
                cc.aimd_m,
                cc.threshold,
                cc.interval_us,
                cc.shape_pps
            ),
            (1300.0, 0.25, 50, 500, 1000)
        );
        let cc = k("egress_shape_pps = 5000\n").cc.expect("a shaper alone");
        assert_eq!(cc.scheme, CcScheme::None);
        for (body, field) in [
            (
                "congestion_control = \"red\"\n",
                "cluster.congestion_control",
            ),
            ("egress_shape_pps = 0\n", "cluster.egress_shape_pps"),
            ("congestion_control = \"price\"\n", "cluster.congestion_control"),
            ("cc_queue_limit = 10\n", "cluster.cc_queue_limit"),
            // Parameters of another scheme (or of none) would do nothing.
            ("cc_aimd_m = 0.5\n", "cluster.cc_aimd_m"),
            (
                "congestion_control = \"price\"\negress_shape_pps = 1\ncc_threshold = 10\n",
                "cluster.cc_threshold",
            ),
            (
                "congestion_control = \"aimd-rate\"\negress_shape_pps = 1\ncc_price_k = 10\n",
                "cluster.cc_price_k",
            ),
            (
                "congestion_control = \"aimd-rate\"\negress_shape_pps = 1\ncc_aimd_m = 1.5\n",
                "cluster.cc_aimd_m",
            ),
            (
                "congestion_control = \"becn-aimd-weights\"\negress_shape_pps = 1\ncc_interval_us = 0\n",
                "cluster.cc_interval_us",
            ),
        ] {
            let e = crate::parse(&format!("{HEAD}{base}{body}{PEER}"), "t.toml").expect_err(body);
            assert_eq!(e.field, field, "{body}: {e}");
            assert!(e.to_string().starts_with("t.toml:1"), "{e}");
        }
    }
}

#[cfg(test)]
mod dataplane_tests {
    const R: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n";
    const K: &str = "[cluster]\nnode_id = 0\nfabric_address = \"198.18.100.1\"\n\
        [[cluster.peer]]\nnode_id = 1\nfabric_address = \"198.18.100.2\"\nports = []\n";

    #[test]
    fn the_fabric_needs_a_graph_dataplane_without_kernel_export() {
        let e = crate::parse(&format!("{R}{K}"), "t.toml").expect_err("no dataplane");
        assert_eq!(e.field, "cluster", "{e}");
        assert!(e.message.contains("needs a [dataplane]"), "{e}");
        let cc = "congestion_control = \"price\"\negress_shape_pps = 1000\n";
        for (extra, cluster, field, msg) in [
            ("cores = 2\n", cc, "dataplane.cores", "not supported yet"),
            (
                "engine = \"fast\"\n",
                "",
                "dataplane.engine",
                "not supported yet",
            ),
            (
                "kernel = true\n",
                "",
                "dataplane.kernel",
                "not supported with [cluster]: routes across",
            ),
            (
                "feed_socket = \"/tmp/f.sock\"\n",
                "",
                "dataplane.feed_socket",
                "not supported yet",
            ),
        ] {
            let k = K.replacen("[[cluster.peer]]", &format!("{cluster}[[cluster.peer]]"), 1);
            let text =
                format!("{R}[dataplane]\n{extra}[[dataplane.interface]]\nname = \"r0\"\n{k}");
            let e = crate::parse(&text, "t.toml").expect_err(extra);
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.starts_with(msg), "{e}");
        }
        for extra in ["", "cores = 2\n"] {
            let ok = format!("{R}[dataplane]\n{extra}[[dataplane.interface]]\nname = \"r0\"\n{K}");
            assert!(crate::parse(&ok, "t.toml")
                .expect("valid")
                .cluster
                .is_some());
        }
    }
}
