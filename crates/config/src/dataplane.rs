//! `[dataplane]`: Tessera's own forwarding plane (crate `fib`), run inside
//! tesserad, or in a separate process fed over a Unix socket.
//!
//! ```toml
//! [dataplane]
//! io = "af_xdp"            # af_xdp | af_xdp_driver | af_packet
//! cores = 1                # worker threads, one queue of every port each
//! kp = 32                  # RX batch (RouteBricks kp)
//! kn = 32                  # TX batch before a kick (RouteBricks kn)
//! kernel = false           # also install resolved routes into Linux
//! kernel_table = 254
//! kernel_metric = 20
//! kernel_persist = false   # leave the kernel routes in place when tesserad stops
//! feed_socket = "/run/tessera/feed.sock"   # separate dataplane process
//! engine = "graph"         # unset: IPv4 fused where equivalent | graph (unfused chain) | fast (fused)
//! frames = 4096            # AF_XDP UMEM frames per socket (power of two)
//! graph = "/etc/tessera/dataplane.click"   # the operator's element graph
//! qdisc = false            # af_packet only: send through the interfaces' qdiscs (tc)
//! xdp_fastpath = false     # af_xdp modes: forward IPv4/IPv6 in the XDP hook (docs/config.md)
//!
//! [[dataplane.interface]]
//! name = "eth1"
//! addresses = ["10.1.0.1/24"]
//! queues = 4               # af_xdp modes: RX queues read (>= cores; "all"); default = cores
//! ```

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDataplane {
    pub io: Option<String>,
    pub cores: Option<u32>,
    pub kp: Option<u32>,
    pub kn: Option<u32>,
    pub kernel: Option<bool>,
    pub kernel_table: Option<u32>,
    pub kernel_metric: Option<u32>,
    pub kernel_persist: Option<bool>,
    pub feed_socket: Option<String>,
    pub engine: Option<String>,
    pub frames: Option<u32>,
    pub graph: Option<String>,
    pub qdisc: Option<bool>,
    pub xdp_fastpath: Option<bool>,
    #[serde(default)]
    pub interface: Vec<RawInterface>,
    pub ipsec: Option<crate::ipsec::RawIpsec>,
    #[serde(default)]
    pub vr: Vec<crate::vr::RawVr>,
    #[serde(default)]
    pub port_group: Vec<crate::port_group::RawPortGroup>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInterface {
    pub name: String,
    #[serde(default)]
    pub addresses: Vec<String>,
    pub queues: Option<RawQueues>,
}

/// `queues = N` or `queues = "all"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawQueues {
    Count(i64),
    Word(String),
}

/// `queues` of a `[[dataplane.interface]]`: how many RX queues the AF_XDP
/// modes read on it, one socket per queue; core `c` serves queues
/// `c, c + cores, ...`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum InterfaceQueues {
    /// Not set: one queue per core (queue `c` on core `c`).
    #[default]
    PerCore,
    /// `queues = N`: queues `0..N`, `cores <= N <= 1024`.
    Count(u32),
    /// `queues = "all"`: every RX queue the driver reports (`ethtool -l`).
    All,
}

/// Packet I/O of the dataplane workers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DataplaneIo {
    /// AF_XDP, generic XDP hook (works on every device).
    AfXdp,
    /// AF_XDP, the driver's XDP hook.
    AfXdpDriver,
    /// AF_PACKET TPACKET_V3 (hash fanout over the cores).
    AfPacket,
}

/// The forwarder each worker core runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DataplaneEngine {
    /// `engine` not set: the built-in graph with IPv4 forwarding fused
    /// where that is equivalent (not with IPsec or `[cluster]`, which
    /// keep the unfused chain).
    Auto,
    /// `"graph"`: the built-in graph's unfused IPv4 chain.
    Graph,
    /// `"fast"`: IPv4 forwarding fused (`Ip4Forward`); refused with IPsec
    /// and `[cluster]`.
    Fast,
}

/// Install resolved routes into the kernel as well (BIRD's `kernel`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelExport {
    /// `kernel_table`: the Linux routing table the routes go into (default 254, `main`).
    pub table: u32,
    /// `kernel_metric`: the metric of those routes (default 20).
    pub metric: u32,
    /// `kernel_persist`: leave the routes in the kernel when tesserad
    /// stops (BIRD's `kernel { persist; }`; default false: withdrawn).
    pub persist: bool,
}

/// One dataplane port and the router's addresses on it (its connected
/// prefixes, against which BGP next hops are resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataplaneInterface {
    /// The Linux interface name.
    pub name: String,
    /// The router's addresses on it as (address, prefix length); each gives a connected prefix.
    pub addresses: Vec<(IpAddr, u8)>,
    /// `queues`: the RX queues read (AF_XDP modes only).
    pub queues: InterfaceQueues,
}

/// `[dataplane]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dataplane {
    /// `io`: packet I/O of the workers.
    pub io: DataplaneIo,
    /// `cores`: worker threads, 1..=64 (default 1).
    pub cores: u16,
    /// `kp`: frames per RX poll, 1..=4096 (default 32).
    pub kp: u16,
    /// `kn`: frames queued before a TX kick, 1..=4096 (default 32).
    pub kn: u16,
    /// `kernel = true`: also install resolved routes into Linux.
    pub kernel: Option<KernelExport>,
    /// When set, tesserad serves its best routes on this socket and does
    /// not forward itself; `tesserad --dataplane` forwards, fed from it.
    pub feed_socket: Option<PathBuf>,
    /// `[[dataplane.interface]]`: the dataplane ports, in file order.
    pub interfaces: Vec<DataplaneInterface>,
    /// `engine`: unset (fused where equivalent), "graph" or "fast".
    pub engine: DataplaneEngine,
    /// `frames`: AF_XDP UMEM frames per socket (power of two, 64..=1M;
    /// default 4096).
    pub frames: u32,
    /// `graph`: an element graph file (docs/elements.md) the workers run
    /// instead of the built-in graph; read at start and at every reload
    /// (a relative path is relative to tesserad's working directory).
    pub graph: Option<PathBuf>,
    /// `[dataplane.ipsec]`: ESP tunnel-mode SAs (see [`crate::Ipsec`]).
    pub ipsec: Option<crate::ipsec::Ipsec>,
    /// `[[dataplane.vr]]`: virtual routers, in file order (see
    /// [`crate::Vr`]); empty without.
    pub vrs: Vec<crate::vr::Vr>,
    /// `qdisc = true` (io = "af_packet" only): frames are sent through
    /// each interface's queueing discipline, so that a `tc` shaper can
    /// make a port slower than the core; default false
    /// (`PACKET_QDISC_BYPASS`, faster).
    pub qdisc: bool,
    /// `[[dataplane.port_group]]`: port groups and their NICBalance (see
    /// [`crate::PortGroup`]), in file order.
    pub port_groups: Vec<crate::port_group::PortGroup>,
    /// `xdp_fastpath = true` (AF_XDP modes, the built-in graph, no IPsec,
    /// NICBalance or virtual routers): IPv4 packets with a resolved next
    /// hop are forwarded in the XDP hook from a kernel copy of the FIB;
    /// the element graph gets the rest (ARP, ICMP, options, TTL 1,
    /// unresolved). Default false.
    pub xdp_fastpath: bool,
}

fn address(c: &Ctx<'_>, path: &str, s: &str) -> R<(IpAddr, u8)> {
    let bad = || {
        c.err(
            path,
            format!("{s:?}: expected ADDRESS/LENGTH (10.1.0.1/24)"),
        )
    };
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    let a: IpAddr = a.parse().map_err(|_| bad())?;
    let l: u8 = l.parse().map_err(|_| bad())?;
    let max = if a.is_ipv4() { 32 } else { 128 };
    if l > max {
        return Err(c.err(path, format!("{s:?}: prefix length above {max}")));
    }
    Ok((a, l))
}

fn batch(c: &Ctx<'_>, path: &str, v: Option<u32>) -> R<u16> {
    match v {
        None => Ok(32),
        Some(n @ 1..=4096) => Ok(n as u16),
        Some(n) => Err(c.err(path, format!("{n}: a batch size is 1..=4096"))),
    }
}

/// `neighbors`: the `[[neighbor]]` names, which a VR's `neighbors` name.
pub(crate) fn validate(c: &Ctx<'_>, d: &RawDataplane, neighbors: &[&str]) -> R<Dataplane> {
    let io = match d.io.as_deref().unwrap_or("af_xdp") {
        "af_xdp" => DataplaneIo::AfXdp,
        "af_xdp_driver" => DataplaneIo::AfXdpDriver,
        "af_packet" => DataplaneIo::AfPacket,
        o => {
            return Err(c.err(
                "dataplane.io",
                format!("{o:?}: expected \"af_xdp\", \"af_xdp_driver\" or \"af_packet\""),
            ))
        }
    };
    let cores = match d.cores {
        None => 1,
        Some(n @ 1..=64) => n as u16,
        Some(n) => return Err(c.err("dataplane.cores", format!("{n}: cores is 1..=64"))),
    };
    let engine = match d.engine.as_deref() {
        None => DataplaneEngine::Auto,
        Some("graph") => DataplaneEngine::Graph,
        Some("fast") => DataplaneEngine::Fast,
        Some(o) => {
            return Err(c.err(
                "dataplane.engine",
                format!("{o:?}: expected \"graph\" or \"fast\""),
            ))
        }
    };
    let frames = match d.frames {
        None => 4096,
        Some(n) if n.is_power_of_two() && (64..=1 << 20).contains(&n) => n,
        Some(n) => {
            return Err(c.err(
                "dataplane.frames",
                format!("{n}: frames is a power of two in 64..=1048576"),
            ))
        }
    };
    let graph = match d.graph.as_deref() {
        Some("") => return Err(c.err("dataplane.graph", "an empty path")),
        Some(_) if d.engine.is_some() => return Err(c.err(
            "dataplane.graph",
            "graph and engine both set: the graph decides (use Ip4Forward in it for the fast path)",
        )),
        s => s.map(PathBuf::from),
    };
    if d.qdisc == Some(true) && io != DataplaneIo::AfPacket {
        return Err(c.err(
            "dataplane.qdisc",
            "qdisc = true needs io = \"af_packet\" (AF_XDP sends past the qdisc)",
        ));
    }
    let kp = batch(c, "dataplane.kp", d.kp)?;
    let kn = batch(c, "dataplane.kn", d.kn)?;
    if d.kernel != Some(true) && (d.kernel_table.is_some() || d.kernel_metric.is_some()) {
        return Err(c.err(
            "dataplane.kernel_table",
            "kernel_table/kernel_metric set without kernel = true",
        ));
    }
    if d.kernel != Some(true) && d.kernel_persist.is_some() {
        return Err(c.err(
            "dataplane.kernel_persist",
            "kernel_persist set without kernel = true",
        ));
    }
    let kernel = (d.kernel == Some(true)).then(|| KernelExport {
        table: d.kernel_table.unwrap_or(254),
        metric: d.kernel_metric.unwrap_or(20),
        persist: d.kernel_persist.unwrap_or(false),
    });
    if let Some(t) = d.kernel_table {
        if t == 0 || t >= 0xffff_fff0 {
            return Err(c.err("dataplane.kernel_table", format!("{t}: not a table id")));
        }
    }
    let feed_socket = match d.feed_socket.as_deref() {
        Some("") => return Err(c.err("dataplane.feed_socket", "an empty path")),
        s => s.map(PathBuf::from),
    };
    if d.interface.is_empty() || d.interface.len() > 16 {
        return Err(c.err(
            "dataplane",
            "a dataplane needs 1..=16 [[dataplane.interface]] tables",
        ));
    }
    let mut interfaces: Vec<DataplaneInterface> = Vec::new();
    for (i, r) in d.interface.iter().enumerate() {
        let path = format!("dataplane.interface[{i}]");
        if r.name.is_empty() || r.name.len() > 15 {
            return Err(c.err(&format!("{path}.name"), "an interface name is 1..=15 bytes"));
        }
        if interfaces.iter().any(|x| x.name == r.name) {
            return Err(c.err(
                &format!("{path}.name"),
                format!("{:?} is listed twice", r.name),
            ));
        }
        let addresses = r
            .addresses
            .iter()
            .enumerate()
            .map(|(k, a)| address(c, &format!("{path}.addresses[{k}]"), a))
            .collect::<R<Vec<_>>>()?;
        let qpath = format!("{path}.queues");
        let queues =
            match &r.queues {
                None => InterfaceQueues::PerCore,
                Some(_) if io == DataplaneIo::AfPacket => return Err(c.err(
                    &qpath,
                    "queues needs io = \"af_xdp\" or \"af_xdp_driver\" (AF_PACKET is not bound \
                     to queues: its fanout group spreads flows over the cores)",
                )),
                Some(RawQueues::Word(w)) if w == "all" => InterfaceQueues::All,
                Some(RawQueues::Word(w)) => {
                    return Err(c.err(&qpath, format!("{w:?}: expected a number or \"all\"")))
                }
                Some(RawQueues::Count(n)) if (1..=1024).contains(n) => {
                    if *n < i64::from(cores) {
                        return Err(c.err(
                            &qpath,
                            format!(
                                "queues = {n} is fewer than cores = {cores}: every core needs a \
                             queue of every interface to send on"
                            ),
                        ));
                    }
                    InterfaceQueues::Count(*n as u32)
                }
                Some(RawQueues::Count(n)) => {
                    return Err(c.err(&qpath, format!("{n}: queues is 1..=1024 or \"all\"")))
                }
            };
        interfaces.push(DataplaneInterface {
            name: r.name.clone(),
            addresses,
            queues,
        });
    }
    let ipsec = match &d.ipsec {
        None => None,
        Some(r) => {
            let own: Vec<IpAddr> = interfaces
                .iter()
                .flat_map(|i| i.addresses.iter().map(|a| a.0))
                .collect();
            // Sequence numbers and replay windows live in one core's
            // graph: several cores would send the same numbers.
            if cores != 1 {
                return Err(c.err(
                    "dataplane.cores",
                    "cores > 1 with [dataplane.ipsec] is not supported yet: an SA's sequence \
                     numbers and replay window belong to one core",
                ));
            }
            if engine == DataplaneEngine::Fast {
                return Err(c.err(
                    "dataplane.engine",
                    "engine = \"fast\" with [dataplane.ipsec] is not supported yet: the ESP \
                     elements sit in the element graph (engine = \"graph\")",
                ));
            }
            Some(crate::ipsec::validate(c, r, &own)?)
        }
    };
    let names: Vec<&str> = interfaces.iter().map(|i| i.name.as_str()).collect();
    let vrs = crate::vr::validate(c, &d.vr, &names, neighbors)?;
    let port_groups = crate::port_group::validate(c, &d.port_group, &names, graph.is_some())?;
    let xdp_fastpath = d.xdp_fastpath == Some(true);
    if xdp_fastpath {
        let why = if io == DataplaneIo::AfPacket {
            Some("needs io = \"af_xdp\" or \"af_xdp_driver\" (the fast path is an XDP program)")
        } else if graph.is_some() {
            Some("not with an operator's graph: forwarded packets would skip its elements")
        } else if ipsec.is_some() {
            Some("not with [dataplane.ipsec]: packets to encrypt would leave in clear")
        } else if port_groups.iter().any(|g| g.nicbalance.is_some()) {
            Some("not with NICBalance port groups: forwarded packets skip NICBalance")
        } else if !vrs.is_empty() {
            Some("not with [[dataplane.vr]]: the fast path has the main FIB only")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(c.err(
                "dataplane.xdp_fastpath",
                format!("xdp_fastpath = true {why}"),
            ));
        }
    }
    Ok(Dataplane {
        xdp_fastpath,
        vrs,
        qdisc: d.qdisc == Some(true),
        port_groups,
        ipsec,
        io,
        cores,
        kp,
        kn,
        kernel,
        feed_socket,
        interfaces,
        engine,
        frames,
        graph,
    })
}

#[cfg(test)]
mod tests {
    const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n";

    #[test]
    fn graph_key() {
        let c = crate::parse(
            &format!("{HEAD}[dataplane]\ngraph = \"/etc/g.click\"\n[[dataplane.interface]]\nname = \"r0\"\n"),
            "t.toml",
        )
        .expect("valid");
        let d = c.dataplane.expect("dataplane");
        assert_eq!(
            d.graph.as_deref(),
            Some(std::path::Path::new("/etc/g.click"))
        );
        // A new graph file is applied by the reload, not at a restart;
        // another [dataplane] change still waits for one.
        let with = |extra: &str| {
            crate::parse(
                &format!("{HEAD}[dataplane]\n{extra}[[dataplane.interface]]\nname = \"r0\"\n"),
                "t.toml",
            )
            .expect("valid")
        };
        let a = with("graph = \"/etc/g.click\"\n");
        let plan = crate::diff(&a, &with("graph = \"/etc/h.click\"\n"));
        assert!(!plan.other.contains(&"dataplane".to_string()), "{plan:?}");
        let plan = crate::diff(&a, &with("graph = \"/etc/g.click\"\ncores = 2\n"));
        assert!(plan.other.contains(&"dataplane".to_string()), "{plan:?}");
        for (extra, want) in [
            ("graph = \"\"\n", "an empty path"),
            (
                "graph = \"g\"\nengine = \"graph\"\n",
                "graph and engine both set",
            ),
        ] {
            let e = crate::parse(
                &format!("{HEAD}[dataplane]\n{extra}[[dataplane.interface]]\nname = \"r0\"\n"),
                "t.toml",
            )
            .expect_err(extra)
            .to_string();
            assert!(e.contains("dataplane.graph") && e.contains(want), "{e}");
        }
    }

    #[test]
    fn xdp_fastpath_key() {
        let parse = |extra: &str, tail: &str| {
            crate::parse(
                &format!(
                    "{HEAD}[dataplane]\n{extra}[[dataplane.interface]]\nname = \"r0\"\n{tail}"
                ),
                "t.toml",
            )
        };
        let d = parse("", "").expect("valid").dataplane.expect("dp");
        assert!(!d.xdp_fastpath, "off by default");
        for io in ["af_xdp", "af_xdp_driver"] {
            let d = parse(&format!("io = \"{io}\"\nxdp_fastpath = true\n"), "")
                .expect("valid")
                .dataplane
                .expect("dp");
            assert!(d.xdp_fastpath, "{io}");
        }
        for (extra, tail, want) in [
            ("io = \"af_packet\"\nxdp_fastpath = true\n", "", "needs io"),
            ("graph = \"g\"\nxdp_fastpath = true\n", "", "operator's graph"),
            (
                "xdp_fastpath = true\n",
                "[[dataplane.port_group]]\nname = \"g\"\ninterfaces = [\"r0\"]\nnicbalance = true\n",
                "NICBalance",
            ),
        ] {
            let e = parse(extra, tail).expect_err(extra).to_string();
            // FILE:LINE of the key itself.
            assert!(
                e.starts_with("t.toml:") && e.contains("xdp_fastpath = true") && e.contains(want),
                "{e}"
            );
            let line = extra.lines().position(|l| l.starts_with("xdp_fastpath")).unwrap() + 6;
            assert!(e.starts_with(&format!("t.toml:{line}:")), "{e}");
        }
    }

    #[test]
    fn queues_key() {
        use super::InterfaceQueues;
        let parse = |head: &str, q: &str| {
            crate::parse(
                &format!("{HEAD}[dataplane]\n{head}[[dataplane.interface]]\nname = \"r0\"\n{q}"),
                "t.toml",
            )
        };
        for (head, q, want) in [
            ("", "", InterfaceQueues::PerCore),
            ("cores = 2\n", "queues = 2\n", InterfaceQueues::Count(2)),
            (
                "io = \"af_xdp_driver\"\ncores = 2\n",
                "queues = 4\n",
                InterfaceQueues::Count(4),
            ),
            ("", "queues = \"all\"\n", InterfaceQueues::All),
        ] {
            let d = parse(head, q).expect(q).dataplane.expect("dp");
            assert_eq!(d.interfaces[0].queues, want, "{head}{q}");
        }
        for (head, q, want) in [
            ("cores = 4\n", "queues = 2\n", "fewer than cores = 4"),
            ("", "queues = 0\n", "1..=1024"),
            ("", "queues = 2000\n", "1..=1024"),
            ("", "queues = \"some\"\n", "a number or \"all\""),
            ("io = \"af_packet\"\n", "queues = 2\n", "needs io"),
        ] {
            let e = parse(head, q).expect_err(q).to_string();
            // FILE:LINE of the key itself.
            let line = head.lines().count() + 8;
            assert!(
                e.starts_with(&format!("t.toml:{line}:")) && e.contains(want),
                "{head}{q}: {e}"
            );
        }
    }

    #[test]
    fn parses_defaults_and_everything() {
        let c = crate::parse(
            &format!("{HEAD}[dataplane]\n[[dataplane.interface]]\nname = \"r0\"\naddresses = [\"10.1.0.1/24\", \"2001:db8::1/64\"]\n"),
            "t.toml",
        )
        .expect("valid");
        let d = c.dataplane.expect("dataplane");
        assert_eq!(
            (d.io, d.cores, d.kp, d.kn),
            (super::DataplaneIo::AfXdp, 1, 32, 32)
        );
        assert_eq!(d.kernel, None);
        assert_eq!((d.engine, d.frames), (super::DataplaneEngine::Auto, 4096));
        assert_eq!(d.interfaces[0].addresses.len(), 2);
        assert_eq!(d.interfaces[0].queues, super::InterfaceQueues::PerCore);
        assert_eq!(
            d.interfaces[0].addresses[0],
            ("10.1.0.1".parse().expect("ip"), 24)
        );
        let c = crate::parse(
            &format!("{HEAD}[dataplane]\nio = \"af_packet\"\ncores = 2\nkp = 64\nkn = 16\nkernel = true\nkernel_table = 100\nkernel_persist = true\nfeed_socket = \"/tmp/f.sock\"\nengine = \"fast\"\nframes = 16384\nqdisc = true\n[[dataplane.interface]]\nname = \"r0\"\n"),
            "t.toml",
        )
        .expect("valid");
        let d = c.dataplane.expect("dataplane");
        assert_eq!(
            (d.io, d.cores, d.kp, d.kn),
            (super::DataplaneIo::AfPacket, 2, 64, 16)
        );
        assert_eq!((d.engine, d.frames), (super::DataplaneEngine::Fast, 16384));
        assert!(d.qdisc);
        assert_eq!(
            d.kernel,
            Some(super::KernelExport {
                table: 100,
                metric: 20,
                persist: true
            })
        );
        assert_eq!(
            d.feed_socket.as_deref(),
            Some(std::path::Path::new("/tmp/f.sock"))
        );
        assert!(crate::parse(HEAD, "t.toml")
            .expect("valid")
            .dataplane
            .is_none());
    }

    #[test]
    fn rejects_bad_values_with_their_field() {
        for (body, field) in [
            (
                "io = \"dpdk\"\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.io",
            ),
            (
                "cores = 0\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.cores",
            ),
            (
                "kp = 5000\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.kp",
            ),
            (
                "engine = \"dpdk\"\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.engine",
            ),
            (
                "frames = 5000\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.frames",
            ),
            (
                "kernel_table = 5\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.kernel_table",
            ),
            (
                "kernel_persist = true\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.kernel_persist",
            ),
            (
                "qdisc = true\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.qdisc",
            ),
            ("", "dataplane"),
            (
                "[[dataplane.interface]]\nname = \"r0\"\naddresses = [\"10.1.0.1\"]\n",
                "dataplane.interface[0].addresses[0]",
            ),
            (
                "[[dataplane.interface]]\nname = \"r0\"\n[[dataplane.interface]]\nname = \"r0\"\n",
                "dataplane.interface[1].name",
            ),
        ] {
            let e = crate::parse(&format!("{HEAD}[dataplane]\n{body}"), "t.toml").expect_err(body);
            assert_eq!(e.field, field, "{body}: {e}");
        }
        let e = crate::parse(&format!("{HEAD}[dataplane]\nspeed = 1\n"), "t.toml")
            .expect_err("unknown key");
        assert!(e.message.contains("speed"), "{e}");
    }
}
