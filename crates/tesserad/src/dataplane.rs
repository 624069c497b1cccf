//! Wiring of `[dataplane]`: the forwarding plane of crate `fib` run inside
//! tesserad (fed by the best-route hook), tesserad serving its best routes
//! on `feed_socket`, or `tesserad --dataplane` forwarding, fed from that
//! socket.

use std::os::unix::net::UnixListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Weak};
use std::time::Duration;

use fib::dataplane::{self, DataplaneConfig, GraphText, IoMode, LoopConfig, PortConfig};
use fib::kernel::KernelConfig;
use fib::Change;

/// Batches in flight between the RIB and the FIB thread.
const FEED_DEPTH: usize = 64;

/// One line on standard error saying what runs (tests read it).
fn announce(c: &DataplaneConfig) {
    if let Some(f) = &c.fabric {
        eprintln!(
            "dataplane: cluster fabric on {}, node {} of {}, mode {:?}, packing {}",
            f.local,
            f.node,
            f.nodes(),
            f.mode,
            f.packing
        );
    }
    if let Some(i) = &c.ipsec {
        let out = i.sas.iter().filter(|a| a.outbound).count();
        eprintln!(
            "dataplane: ipsec ESP tunnel mode, {out} outbound and {} inbound SAs",
            i.sas.len() - out
        );
    }
    eprintln!(
        "dataplane: started, engine {}, frames {}, io {:?}, cores {}",
        c.loop_cfg.engine.name(),
        c.loop_cfg.xdp_frames,
        c.mode,
        c.cores
    );
    if c.ports
        .iter()
        .any(|p| p.queues != dataplane::Queues::PerCore)
    {
        let q: Vec<String> = c
            .ports
            .iter()
            .map(|p| match p.queues {
                dataplane::Queues::PerCore => format!("{}={} (per core)", p.name, c.cores),
                dataplane::Queues::Count(n) => format!("{}={n}", p.name),
                dataplane::Queues::All => format!("{}=all", p.name),
            })
            .collect();
        eprintln!("dataplane: RX queues {}", q.join(" "));
    }
}

/// `restart`: this start is a graceful restart (`-R`): the kernel routes
/// a previous run left are adopted, not flushed.
/// `[cluster]` as the dataplane's fabric port.
fn fabric_config(k: &config::Cluster) -> dataplane::FabricConfig {
    dataplane::FabricConfig {
        node: k.node_id,
        local: k.fabric_address,
        peers: k
            .peers
            .iter()
            .map(|p| (p.node_id, p.fabric_address))
            .collect(),
        peer_ports: k
            .peers
            .iter()
            .map(|p| (p.node_id, p.ports.clone()))
            .collect(),
        mode: match k.mode {
            config::ClusterMode::Direct => cluster::lb::Mode::Direct,
            config::ClusterMode::Vlb => cluster::lb::Mode::Vlb,
            config::ClusterMode::DirectVlb => cluster::lb::Mode::DirectVlb,
        },
        packing: k.packing,
        affinity: k.affinity,
        mtu: k.fabric_mtu,
        // Mbit/s to bytes/s.
        rate: u64::from(k.port_rate_mbps) * 125_000,
        cc: k.cc.as_ref().map(fabric_cc),
    }
}

/// `congestion_control` and `egress_shape_pps` as the elements' arguments.
fn fabric_cc(c: &config::ClusterCc) -> dataplane::FabricCc {
    use config::CcScheme;
    let mut egress = format!("SHAPE {}, LIMIT {}", c.shape_pps, c.queue_limit);
    let mut ingress = String::new();
    let iv = c.interval_us;
    match c.scheme {
        CcScheme::None => {}
        CcScheme::BecnAimdWeights => {
            egress += &format!(", INTERVAL_US {iv}, THRESHOLD {}", c.threshold);
            ingress = format!("INTERVAL_US {iv}, INCR {}", c.weight_incr);
        }
        CcScheme::AimdRate => {
            egress += &format!(", INTERVAL_US {iv}, THRESHOLD {}", c.threshold);
            ingress = format!("INTERVAL_US {iv}, W {}, M {}", c.aimd_w, c.aimd_m);
        }
        CcScheme::Price => {
            egress += &format!(", INTERVAL_US {iv}, Q_O {}, R {}", c.price_q_o, c.price_r);
            ingress = format!("INTERVAL_US {iv}, K {}", c.price_k);
        }
    }
    dataplane::FabricCc {
        scheme: c.scheme.name().to_string(),
        egress,
        ingress,
    }
}

fn dp_config(d: &config::Dataplane, k: Option<&config::Cluster>, restart: bool) -> DataplaneConfig {
    DataplaneConfig {
        fabric: k.map(fabric_config),
        ipsec: d.ipsec.as_ref().map(|i| dataplane::IpsecConfig {
            sas: i
                .sas
                .iter()
                .map(|a| dataplane::IpsecSa {
                    spi: a.spi,
                    outbound: a.direction == config::IpsecDirection::Out,
                    key: a.key,
                    salt: a.salt,
                    src: a.tunnel_src,
                    dst: a.tunnel_dst,
                    selectors: a.selectors.clone(),
                    window: a.replay_window,
                })
                .collect(),
        }),
        ports: d
            .interfaces
            .iter()
            .map(|i| PortConfig {
                name: i.name.clone(),
                addrs: i.addresses.clone(),
                queues: match i.queues {
                    config::InterfaceQueues::PerCore => dataplane::Queues::PerCore,
                    config::InterfaceQueues::Count(n) => dataplane::Queues::Count(n),
                    config::InterfaceQueues::All => dataplane::Queues::All,
                },
            })
            .collect(),
        mode: match d.io {
            config::DataplaneIo::AfXdp => IoMode::AfXdp,
            config::DataplaneIo::AfXdpDriver => IoMode::AfXdpDriver,
            config::DataplaneIo::AfPacket => IoMode::AfPacket,
        },
        cores: usize::from(d.cores),
        loop_cfg: LoopConfig {
            batch: io::BatchSizes {
                kp: usize::from(d.kp),
                kn: usize::from(d.kn),
            },
            engine: match d.engine {
                config::DataplaneEngine::Auto => dataplane::Engine::Auto,
                config::DataplaneEngine::Graph => dataplane::Engine::Graph,
                config::DataplaneEngine::Fast => dataplane::Engine::Fast,
            },
            xdp_frames: d.frames,
            qdisc: d.qdisc,
            xdp_fastpath: d.xdp_fastpath,
            ..LoopConfig::default()
        },
        kernel: d.kernel.map(|k| KernelConfig {
            table: k.table,
            metric: k.metric,
            persist: k.persist,
            adopt: restart,
        }),
        graph: None,
        balance: balance_groups(d),
        vrs: Vec::new(),
    }
}

/// `[[dataplane.port_group]]` with `nicbalance = true`, as port indices
/// (the config checked that every name is a dataplane interface).
fn balance_groups(d: &config::Dataplane) -> Vec<dataplane::BalanceGroup> {
    d.port_groups
        .iter()
        .filter_map(|g| {
            let p = g.nicbalance.as_ref()?;
            Some(dataplane::BalanceGroup {
                name: g.name.clone(),
                ports: g
                    .interfaces
                    .iter()
                    .filter_map(|n| d.interfaces.iter().position(|i| &i.name == n))
                    .collect(),
                params: dataplane::BalanceParams {
                    qthreshold: p.qthreshold,
                    qstability: p.qstability,
                    min_ratio: p.min_ratio,
                    max_ratio: p.max_ratio,
                    interval: p.interval,
                    suspend: p.suspend,
                },
            })
        })
        .collect()
}

/// Reads `[dataplane] graph`, if set.
pub fn read_graph(d: &config::Dataplane) -> Result<Option<GraphText>, String> {
    let Some(path) = &d.graph else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("dataplane.graph: cannot read {}: {e}", path.display()))?;
    Ok(Some(GraphText {
        file: path.display().to_string(),
        text,
    }))
}

/// `tesserad --check`: the operator's graph too, against the configured
/// interfaces (without opening them).
pub fn check(d: &config::Dataplane) -> Result<(), String> {
    if let Some(g) = read_graph(d)? {
        let devs: Vec<&str> = d.interfaces.iter().map(|i| i.name.as_str()).collect();
        dataplane::check_graph(&g, &devs)?;
    }
    Ok(())
}

/// `tesserad --print-graph`: the built-in graph for this configuration
/// (the interfaces' MACs read from the system), where an operator's
/// graph starts from.
pub fn print_graph(d: &config::Dataplane) -> Result<String, String> {
    dataplane::builtin_graph(&dp_config(d, None, false)).map_err(|e| format!("dataplane: {e}"))
}

/// The daemon's handle on the in-process dataplane: `show dataplane`,
/// `/metrics`, and the graph part of a reload. Holds the dataplane
/// weakly, so that it stops (and reports) when tesserad does.
pub struct Hook {
    dp: Weak<dataplane::Dataplane>,
    d: config::Dataplane,
    /// `[cluster]`, whose fabric is a port of this dataplane.
    k: Option<config::Cluster>,
    /// The virtual routers' feeds, when the dataplane runs VRs.
    vrs: Option<crate::vr::Vrs>,
}

impl Hook {
    pub fn new(
        dp: &Arc<dataplane::Dataplane>,
        d: &config::Dataplane,
        k: Option<&config::Cluster>,
    ) -> Hook {
        Hook {
            dp: Arc::downgrade(dp),
            d: d.clone(),
            k: k.cloned(),
            vrs: None,
        }
    }

    /// With the virtual routers' feeds ([`start`] returns them).
    pub fn with_vrs(mut self, vrs: Option<crate::vr::Vrs>) -> Hook {
        self.vrs = vrs;
        self
    }
}

/// The cluster's nodes as this one sees them: liveness from the live set
/// (driven by BFD), each link's load from `FabricEncap`'s `toN` and
/// `bytes_toN` (summed over the cores).
fn cluster_info(
    k: &config::Cluster,
    dp: &dataplane::Dataplane,
    elements: &[dataplane::ElementCounters],
) -> mgmt::proto::ClusterInfo {
    let counter = |name: &str| -> u64 {
        elements
            .iter()
            .filter(|e| e.class == "FabricEncap")
            .flat_map(|e| e.counters.iter())
            .filter(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .sum()
    };
    mgmt::proto::ClusterInfo {
        node: k.node_id,
        fabric_address: k.fabric_address.to_string(),
        mode: format!("{:?}", k.mode),
        peers: k
            .peers
            .iter()
            .map(|p| mgmt::proto::ClusterPeerInfo {
                node: p.node_id,
                fabric_address: p.fabric_address.to_string(),
                live: dp.node_live(p.node_id).unwrap_or(false),
                datagrams: counter(&format!("to{}", p.node_id)),
                bytes: counter(&format!("bytes_to{}", p.node_id)),
            })
            .collect(),
    }
}

/// The XDP fast path's counters and map writes for `show dataplane`.
fn xdp_info(
    c: io::xdp::fast::FastCounters,
    m: io::xdp::fast::ApplyStats,
) -> mgmt::proto::XdpFastInfo {
    use io::xdp::fast::FastReason;
    mgmt::proto::XdpFastInfo {
        forwarded: c.forwarded(),
        forwarded_ipv6: c.get(FastReason::Forwarded6),
        to_graph: FastReason::ALL
            .iter()
            .filter(|r| !r.is_forwarded())
            .map(|r| (r.name().to_string(), c.get(*r)))
            .collect(),
        map_set: m.set,
        map_removed: m.removed,
        map_failed: m.failed,
        map_calls: m.calls,
    }
}

/// How long a reload waits for each core to take the new graph.
const SWAP_WAIT: Duration = Duration::from_secs(5);

impl bgp_speaker::daemon::DataplaneHook for Hook {
    fn show(&self) -> mgmt::proto::DataplaneInfo {
        let Some(dp) = self.dp.upgrade() else {
            return mgmt::proto::DataplaneInfo {
                graph: "stopped".into(),
                cores: 0,
                elements: Vec::new(),
                ipsec: Vec::new(),
                per_core: Vec::new(),
                cluster: None,
                xdp_fastpath: None,
                vrs: Box::default(),
            };
        };
        let elements = dp.elements();
        let cluster = self
            .k
            .as_ref()
            .map(|k| Box::new(cluster_info(k, &dp, &elements)));
        let mut ipsec: Vec<mgmt::proto::IpsecSaInfo> = elements
            .iter()
            .flat_map(|e| {
                e.sas.iter().map(|a| mgmt::proto::IpsecSaInfo {
                    spi: a.spi,
                    dir: if a.outbound { "out" } else { "in" }.into(),
                    element: e.name.clone(),
                    packets: a.packets,
                    bytes: a.bytes,
                    drops: a.drops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                })
            })
            .collect();
        // Outbound first (stable: configuration order within each).
        ipsec.sort_by_key(|a| a.dir != "out");
        mgmt::proto::DataplaneInfo {
            graph: dp.graph().map_or_else(|| "built-in".into(), |g| g.file),
            cores: u32::from(self.d.cores),
            cluster,
            vrs: Box::new(mgmt::proto::VrList(
                dp.vr_stats()
                    .into_iter()
                    .map(|v| mgmt::proto::VrInfo {
                        name: v.name,
                        tickets: v.tickets,
                        rx: v.rx,
                        tx: v.tx,
                        drops: v.drops.into_iter().collect(),
                        cpu_ns: v.charged_ns,
                        runs: v.runs,
                        routes: v.routes,
                        installed: v.installed,
                    })
                    .collect(),
            )),
            elements: elements
                .into_iter()
                .map(|e| mgmt::proto::ElementInfo {
                    name: e.name,
                    class: e.class,
                    rx: e.rx,
                    tx: e.tx,
                    drops: e.drops.into_iter().collect(),
                    counters: e.counters.into_iter().collect(),
                })
                .collect(),
            ipsec,
            per_core: dp
                .core_stats()
                .into_iter()
                .enumerate()
                .map(|(i, c)| mgmt::proto::CoreInfo {
                    core: i as u32,
                    rx: c.rx,
                    tx: c.tx,
                    drops: c
                        .drops
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                    queues: c
                        .queues
                        .iter()
                        .map(|q| mgmt::proto::QueueInfo {
                            port: self
                                .d
                                .interfaces
                                .get(q.port)
                                .map_or_else(|| format!("port{}", q.port), |i| i.name.clone()),
                            queue: q.q.queue,
                            rx: q.q.stats.rx,
                            tx: q.q.stats.tx,
                            ring_drops: q.q.ring_drops,
                        })
                        .collect(),
                })
                .collect(),
            xdp_fastpath: dp
                .fast_counters()
                .map(|c| Box::new(xdp_info(c, dp.fib_report().fast))),
        }
    }

    fn reload(&self, new: &config::Config, check: bool) -> Result<Vec<String>, String> {
        let Some(dp) = self.dp.upgrade() else {
            return Ok(Vec::new());
        };
        // Other [dataplane] changes need a restart (the reload says so);
        // the graph is checked against the running interfaces.
        let Some(nd) = &new.dataplane else {
            return Ok(Vec::new());
        };
        crate::vr::check(new)?;
        // Virtual routers: the cores run VR graphs instead of the main
        // one (the graph settings are refused with VRs). Removing the
        // last VR gives the cores back to the main graph before the graph
        // part; the first VRs take them after it (so that the main graph
        // set aside is the new configuration's). While VRs run and stay,
        // the graph part has nothing to do.
        let mut msgs = Vec::new();
        let vrs_now = !dp.vrs().is_empty();
        match &self.vrs {
            Some(v) if nd.vrs.is_empty() => {
                msgs.extend(v.reload(&dp, &self.d.interfaces, &nd.vrs, check, SWAP_WAIT)?);
            }
            Some(v) if vrs_now => {
                return v.reload(&dp, &self.d.interfaces, &nd.vrs, check, SWAP_WAIT);
            }
            Some(_) => {}
            None if !nd.vrs.is_empty() => {
                return Err(format!(
                    "adding [[dataplane.vr]] needs a restart of tesserad: {}",
                    dataplane::VR_NOT_SUPPORTED
                ));
            }
            None => {}
        }
        msgs.extend(self.reload_graph(&dp, nd, check)?);
        if let (Some(v), false) = (&self.vrs, nd.vrs.is_empty()) {
            msgs.extend(v.reload(&dp, &self.d.interfaces, &nd.vrs, check, SWAP_WAIT)?);
        }
        Ok(msgs)
    }
}

impl Hook {
    /// The graph part of a reload: an operator's graph, or the built-in
    /// one for the new port groups, swapped in on every core.
    fn reload_graph(
        &self,
        dp: &dataplane::Dataplane,
        nd: &config::Dataplane,
        check: bool,
    ) -> Result<Vec<String>, String> {
        let devs: Vec<&str> = self.d.interfaces.iter().map(|i| i.name.as_str()).collect();
        // The built-in graph for the new port groups (NICBalance) on the
        // running interfaces and settings.
        let builtin = |d: &config::Dataplane| -> Result<GraphText, String> {
            let with = config::Dataplane {
                port_groups: d.port_groups.clone(),
                ..self.d.clone()
            };
            Ok(GraphText {
                file: "built-in".into(),
                text: print_graph(&with)?,
            })
        };
        let want = match read_graph(nd)? {
            Some(g) => g,
            None => {
                let want = builtin(nd)?;
                // What runs now: a built-in graph swapped in by a reload,
                // or the one the workers started with.
                let now = match dp.graph() {
                    Some(g) => g,
                    None => builtin(&self.d)?,
                };
                if now == want {
                    return Ok(Vec::new());
                }
                want
            }
        };
        if check {
            dataplane::check_graph(&want, &devs)?;
            return Ok(vec![format!("dataplane graph {}: valid", want.file)]);
        }
        if dp.graph().as_ref() == Some(&want) {
            return Ok(Vec::new());
        }
        dp.replace_graph(&want, SWAP_WAIT)?;
        Ok(vec![format!(
            "dataplane graph {}: running on {} cores (FIB kept)",
            want.file, self.d.cores
        )])
    }
}

/// One line of final counters on standard error (tests read it).
pub fn print_report(r: &dataplane::Report) {
    let t = &r.total;
    eprintln!(
        "dataplane: rx={} forwarded={} no_route={} unresolved={} ttl_expired={} local={} bad_header={} \
         not_ip={} ipv6={} icmp_errors={} hairpin={} tx_full={} arp_in={} arp_replies={} arp_requests={} \
         fib_changes={} fib_routes={} fib_installed={} fib_unresolved={} publishes={} deltas={} learned={} \
         kernel_ok={} kernel_err={} kernel_adopted={}+{} kernel_swept={} errors={:?}",
        t.rx,
        t.forwarded,
        t.no_route,
        t.unresolved,
        t.ttl_expired,
        t.local,
        t.bad_header,
        t.not_ip,
        t.ipv6,
        t.icmp_errors,
        t.hairpin,
        t.tx_full,
        t.arp_in,
        t.arp_replies,
        t.arp_requests,
        r.fib.stats.changes,
        r.fib.stats.routes,
        r.fib.stats.installed,
        r.fib.stats.unresolved,
        r.fib.publishes,
        r.fib.deltas,
        r.fib.learned,
        r.fib.kernel_ok,
        r.fib.kernel_err,
        r.fib.kernel_adopted.0,
        r.fib.kernel_adopted.1,
        r.fib.kernel_swept,
        r.errors
    );
    let f = &t.fabric;
    if f.packets + f.delivered + f.transit + f.bad_port + f.bad_tag + f.unreachable + f.bad_datagram
        > 0
    {
        // Datagrams sent by each core's fabric socket, core 0 first.
        let cores: Vec<String> = r
            .per_core
            .iter()
            .map(|c| c.fabric.packets.to_string())
            .collect();
        eprintln!(
            "cluster-fabric: packets={} delivered={} transit={} bad_port={} bad_tag={} \
             unreachable={} bad_datagram={} core_packets={}",
            f.packets,
            f.delivered,
            f.transit,
            f.bad_port,
            f.bad_tag,
            f.unreachable,
            f.bad_datagram,
            cores.join("/")
        );
    }
    let i = &t.ipsec;
    if i.encrypted
        + i.decrypted
        + i.encap_drops.iter().sum::<u64>()
        + i.decap_drops.iter().sum::<u64>()
        > 0
    {
        let named = |names: &[&str], v: &[u64]| -> String {
            names
                .iter()
                .zip(v)
                .map(|(n, x)| format!(" {n}={x}"))
                .collect()
        };
        eprintln!(
            "ipsec: encrypted={} decrypted={}{}{}",
            i.encrypted,
            i.decrypted,
            named(dataplane::IpsecCounters::ENCAP_NAMES, &i.encap_drops),
            named(dataplane::IpsecCounters::DECAP_NAMES, &i.decap_drops)
        );
    }
    let c = &t.cc;
    if c.offered + c.egress_in + c.samples > 0 {
        eprintln!(
            "cluster-cc: offered={} injected={} signals={} egress_in={} egress_sent={} \
             egress_dropped={} control_sent={} samples={} queue_mean={:.3} queue_sd={:.3} from={:?}",
            c.offered,
            c.injected,
            c.signals,
            c.egress_in,
            c.egress_sent,
            c.egress_dropped,
            c.control_sent,
            c.samples,
            c.queue_mean_milli as f64 / 1000.0,
            c.queue_sd_milli as f64 / 1000.0,
            c.from
        );
    }
}

/// What `[dataplane]` starts next to the daemon.
pub enum Running {
    /// Forwarding in this process (shared with the cluster's liveness).
    InProcess(std::sync::Arc<dataplane::Dataplane>),
    /// Serving the feed socket to a separate dataplane process.
    Feed,
}

/// Starts what `[dataplane]` asks for; returns the best-route hook to give
/// the daemon.
/// The RIB's best-route changes go straight to the FIB thread (one route
/// type, no conversion).
/// `restart` (`tesserad -R`): kernel routes of a previous run are adopted.
/// `k`: `[cluster]`, whose fabric becomes one more port of the dataplane,
/// with a socket per core (config validation guarantees the graph
/// engine, no kernel export, no feed socket, and one core with
/// congestion control).
/// What [`start`] started: what runs, the sender the best-route hook
/// feeds, and the virtual routers' feeds (with VRs).
pub type Started = (Running, SyncSender<Vec<Change>>, Option<crate::vr::Vrs>);

/// Where VRs can run, now or after a reload (`dataplane::vrs_possible`;
/// `[[dataplane.vr]]` checked by `crate::vr::check`), the hook
/// feeds the VR fan-out ([`crate::vr::Fan`]), returned with it.
pub fn start(
    d: &config::Dataplane,
    k: Option<&config::Cluster>,
    restart: bool,
) -> Result<Started, String> {
    let (tx, rx) = mpsc::sync_channel::<Vec<Change>>(FEED_DEPTH);
    if let Some(path) = &d.feed_socket {
        let l = bind(path)?;
        std::thread::Builder::new()
            .name("dp-feed".into())
            .spawn(move || fib::feed::serve(l, rx))
            .map_err(|e| e.to_string())?;
        return Ok((Running::Feed, tx, None));
    }
    let mut cfg = dp_config(d, k, restart);
    cfg.graph = read_graph(d)?;
    // Virtual routers can run (now, or after a reload adds them) without
    // the cluster fabric, IPsec and the XDP fast path: the best routes
    // then go through the VR fan-out.
    let (dp, tx, vrs) = if !dataplane::vrs_possible(&cfg) {
        let dp = dataplane::start(&cfg, rx).map_err(|e| format!("dataplane: {e}"))?;
        (dp, tx, None)
    } else {
        cfg.vrs = crate::vr::defs(&d.vrs, &d.interfaces)?;
        let mut feeds = crate::vr::VrFeeds::new(&d.vrs);
        let receivers = std::mem::take(&mut feeds.receivers);
        let dp = dataplane::start_with_vrs(&cfg, rx, receivers)
            .map_err(|e| format!("dataplane: {e}"))?;
        let routes = crate::vr::VrFeeds::routes_of(&dp);
        let (fan, hook, views) = feeds.fan(tx, FEED_DEPTH, routes)?;
        if !d.vrs.is_empty() {
            eprintln!(
                "dataplane: {} virtual routers: {}",
                d.vrs.len(),
                d.vrs
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        (dp, hook, Some(crate::vr::Vrs::new(fan, views, &d.vrs)))
    };
    announce(&cfg);
    if restart && cfg.kernel.is_some() {
        let (v4, v6) = dp.fib_report().kernel_adopted;
        eprintln!("dataplane: graceful restart, kept {v4} IPv4 and {v6} IPv6 kernel routes");
    }
    Ok((Running::InProcess(std::sync::Arc::new(dp)), tx, vrs))
}

/// After a graceful restart: the families (IPv4, IPv6) whose forwarding
/// state was kept, for the Forwarding State bit. Only the kernel's
/// forwarding survives a restart (tesserad's own starts empty), and only
/// with `io = "af_packet"` does the kernel still see, and forward, the
/// packets (AF_XDP takes them away from it): a family counts when routes
/// of it were adopted from the kernel.
pub fn forwarding_kept(d: &config::Dataplane, r: &Running) -> (bool, bool) {
    match r {
        Running::InProcess(dp) if d.io == config::DataplaneIo::AfPacket => {
            let (v4, v6) = dp.fib_report().kernel_adopted;
            (v4 > 0, v6 > 0)
        }
        _ => (false, false),
    }
}

fn bind(path: &Path) -> Result<UnixListener, String> {
    let _ = std::fs::remove_file(path);
    UnixListener::bind(path).map_err(|e| format!("dataplane.feed_socket {}: {e}", path.display()))
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// `tesserad --dataplane`: forwards, fed from `feed_socket`, until SIGTERM
/// or SIGINT; reconnects when tesserad goes away.
pub fn run_separate(d: &config::Dataplane) -> Result<(), String> {
    let Some(path) = d.feed_socket.clone() else {
        return Err("--dataplane needs [dataplane] feed_socket".into());
    };
    // SAFETY: the handler only stores to an atomic (async-signal-safe).
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let (tx, rx) = mpsc::sync_channel::<Vec<Change>>(FEED_DEPTH);
    let mut cfg = dp_config(d, None, false);
    cfg.graph = read_graph(d)?;
    let dp = dataplane::start(&cfg, rx).map_err(|e| format!("dataplane: {e}"))?;
    announce(&cfg);
    std::thread::Builder::new()
        .name("dp-feed".into())
        .spawn(move || fib::feed::follow(&path, tx))
        .map_err(|e| e.to_string())?;
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // No control socket here: the XDP fast path's counters go to the log.
    if let Some(c) = dp.fast_counters() {
        let x = xdp_info(c, dp.fib_report().fast);
        eprintln!(
            "dataplane: xdp_fastpath forwarded={} forwarded_ipv6={} to_graph={:?} map_set={} map_failed={}",
            x.forwarded, x.forwarded_ipv6, x.to_graph, x.map_set, x.map_failed
        );
    }
    print_report(&dp.stop());
    Ok(())
}
