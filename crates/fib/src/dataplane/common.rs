//! What the dataplane's per-core workers share with their callers: ports,
//! learned neighbours, counters, the engine choice and the loop settings.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use io::BatchSizes;

/// A port's name, MAC and IPv4 addresses with prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    pub mac: [u8; 6],
    pub v4: Vec<(Ipv4Addr, u8)>,
}

/// A neighbour a core learned (ARP or NDP), for the FIB thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Learned {
    pub port: u16,
    pub ip: IpAddr,
    pub mac: [u8; 6],
}

/// Per-worker counters; every drop has its reason.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerCounters {
    pub rx: u64,
    pub forwarded: u64,
    pub not_ip: u64,
    pub bad_header: u64,
    pub ttl_expired: u64,
    pub no_route: u64,
    /// The neighbour's MAC is not known yet (an ARP request was sent).
    pub unresolved: u64,
    /// Addressed to the router itself (no local stack here).
    pub local: u64,
    /// The route leads back out of the arrival port.
    pub hairpin: u64,
    pub tx_full: u64,
    pub ipv6: u64,
    pub arp_in: u64,
    pub arp_replies: u64,
    pub arp_requests: u64,
    /// Learned neighbours lost because the ring to the FIB thread was full.
    pub learn_dropped: u64,
    /// Read sections entered (one per non-empty batch; graph engine:
    /// polls).
    pub sections: u64,
    /// ICMP time-exceeded errors sent (graph engine).
    pub icmp_errors: u64,
    /// The cluster's congestion-control elements (`CcIngress`,
    /// `CcEgress`), when configured.
    pub cc: CcCounters,
    /// The cluster fabric's elements (`FabricEncap`, `FabricDecap`).
    pub fabric: FabricCounters,
    /// IPsec ESP (`EspEncap`, `EspDecap`), when `[dataplane.ipsec]` is set.
    pub ipsec: IpsecCounters,
}

/// Counters of the ESP elements, summed over the cores (drops by reason,
/// as the elements name them).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct IpsecCounters {
    /// Packets sealed into ESP.
    pub encrypted: u64,
    /// Packets opened from ESP and forwarded on.
    pub decrypted: u64,
    /// EspEncap drops: `not_ip`, `too_big`, `seq_exhausted`, `no_room`.
    pub encap_drops: [u64; 4],
    /// EspDecap drops: `too_short`, `malformed`, `no_sa`, `replay`,
    /// `auth_failed`, `policy`, `dummy`.
    pub decap_drops: [u64; 7],
}

impl IpsecCounters {
    /// The names of `encap_drops`, in order.
    pub const ENCAP_NAMES: &'static [&'static str] = elements::esp::ENCAP_DROPS;
    /// The names of `decap_drops`, in order.
    pub const DECAP_NAMES: &'static [&'static str] = elements::esp::DECAP_DROPS;
}

/// Counters of the fabric elements, summed over the cores.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricCounters {
    /// Fabric datagrams sent (`FabricEncap`).
    pub packets: u64,
    /// Frames delivered to this node's ports by their tag (`FabricDecap`).
    pub delivered: u64,
    /// Datagrams forwarded as the VLB intermediate.
    pub transit: u64,
    /// Frames whose tag names no port of this node (`bad_port`).
    pub bad_port: u64,
    /// Frames for the fabric without an egress tag (`bad_tag`).
    pub bad_tag: u64,
    /// Frames for a dead or unknown egress (`unreachable`).
    pub unreachable: u64,
    /// Datagrams that failed to decode (`bad_geneve`, `foreign_option`,
    /// `bad_option`) or were for another node (`not_for_us`).
    pub bad_datagram: u64,
}

/// Counters of `CcIngress` and `CcEgress` (the cluster runs on one core,
/// so the queue statistics are that core's).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CcCounters {
    /// Frames offered to the fabric (CcIngress).
    pub offered: u64,
    /// Frames admitted into the fabric.
    pub injected: u64,
    /// Control messages received.
    pub signals: u64,
    /// Frames from the fabric into the egress queue (CcEgress), dropped
    /// ones included.
    pub egress_in: u64,
    /// Frames the egress queue released (at most C pps).
    pub egress_sent: u64,
    /// Frames dropped at the full egress queue.
    pub egress_dropped: u64,
    /// Control messages sent.
    pub control_sent: u64,
    /// Queue samples (one per interval with traffic).
    pub samples: u64,
    /// Mean sampled queue, packets × 1000.
    pub queue_mean_milli: u64,
    /// Its standard deviation, packets × 1000.
    pub queue_sd_milli: u64,
    /// Frames into the egress queue per source node 0..8.
    pub from: [u64; 8],
}

impl WorkerCounters {
    pub fn add(&mut self, o: &WorkerCounters) {
        let f = |a: &mut u64, b: u64| *a += b;
        f(&mut self.rx, o.rx);
        f(&mut self.forwarded, o.forwarded);
        f(&mut self.not_ip, o.not_ip);
        f(&mut self.bad_header, o.bad_header);
        f(&mut self.ttl_expired, o.ttl_expired);
        f(&mut self.no_route, o.no_route);
        f(&mut self.unresolved, o.unresolved);
        f(&mut self.local, o.local);
        f(&mut self.hairpin, o.hairpin);
        f(&mut self.tx_full, o.tx_full);
        f(&mut self.ipv6, o.ipv6);
        f(&mut self.arp_in, o.arp_in);
        f(&mut self.arp_replies, o.arp_replies);
        f(&mut self.arp_requests, o.arp_requests);
        f(&mut self.learn_dropped, o.learn_dropped);
        f(&mut self.sections, o.sections);
        f(&mut self.icmp_errors, o.icmp_errors);
        let (c, d) = (&mut self.cc, &o.cc);
        f(&mut c.offered, d.offered);
        f(&mut c.injected, d.injected);
        f(&mut c.signals, d.signals);
        f(&mut c.egress_in, d.egress_in);
        f(&mut c.egress_sent, d.egress_sent);
        f(&mut c.egress_dropped, d.egress_dropped);
        f(&mut c.control_sent, d.control_sent);
        if d.samples > c.samples {
            // One core runs the cluster: keep its queue statistics.
            c.samples = d.samples;
            c.queue_mean_milli = d.queue_mean_milli;
            c.queue_sd_milli = d.queue_sd_milli;
        }
        for (a, b) in c.from.iter_mut().zip(d.from) {
            *a += b;
        }
        let (c, d) = (&mut self.fabric, &o.fabric);
        f(&mut c.packets, d.packets);
        f(&mut c.delivered, d.delivered);
        f(&mut c.transit, d.transit);
        f(&mut c.bad_port, d.bad_port);
        f(&mut c.bad_tag, d.bad_tag);
        f(&mut c.unreachable, d.unreachable);
        f(&mut c.bad_datagram, d.bad_datagram);
        let (c, d) = (&mut self.ipsec, &o.ipsec);
        f(&mut c.encrypted, d.encrypted);
        f(&mut c.decrypted, d.decrypted);
        for (a, b) in c.encap_drops.iter_mut().zip(d.encap_drops) {
            *a += b;
        }
        for (a, b) in c.decap_drops.iter_mut().zip(d.decap_drops) {
            *a += b;
        }
    }
}

/// An element graph written by the operator (`[dataplane] graph`): its
/// text, and the name its errors start with (the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphText {
    pub file: String,
    pub text: String,
}

/// One element's counters: packets in and out, drops by reason, and the
/// element's own counters (summed over the cores by
/// `Dataplane::elements`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElementCounters {
    pub name: String,
    pub class: String,
    pub rx: u64,
    pub tx: u64,
    /// The element's own drop reasons (zeros included) and the graph's
    /// generic ones that happened.
    pub drops: Vec<(String, u64)>,
    pub counters: Vec<(String, u64)>,
    /// EspEncap/EspDecap: each SA's counters (empty for other elements).
    pub sas: Vec<elements::esp::SaCounters>,
}

impl ElementCounters {
    /// Adds `o` (the same element on another core).
    pub fn add(&mut self, o: &ElementCounters) {
        self.rx += o.rx;
        self.tx += o.tx;
        for (k, v) in &o.drops {
            match self.drops.iter_mut().find(|(x, _)| x == k) {
                Some((_, n)) => *n += v,
                None => self.drops.push((k.clone(), *v)),
            }
        }
        for (k, v) in &o.counters {
            match self.counters.iter_mut().find(|(x, _)| x == k) {
                Some((_, n)) => *n += v,
                None => self.counters.push((k.clone(), *v)),
            }
        }
        for a in &o.sas {
            match self
                .sas
                .iter_mut()
                .find(|x| x.spi == a.spi && x.outbound == a.outbound)
            {
                Some(x) => x.add(a),
                None => self.sas.push(a.clone()),
            }
        }
    }
}

/// Which form of the built-in graph the per-core workers run. All three
/// run the element graph of crate `elements` (IPv4 and IPv6, ICMP echo
/// and time-exceeded, ARP and NDP; see [`super::graph_engine`]) and
/// forward, answer and drop the same packets (the differential tests
/// `elements/tests/forward.rs` and `fib/tests/graph_engine.rs`); they
/// differ in how IPv4 forwarding is put together.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// The default (`engine` not set): the fused IPv4 path of
    /// [`Engine::Fast`] wherever it is equivalent, the chain of
    /// [`Engine::Graph`] where it is not (see [`Engine::fuses`]).
    #[default]
    Auto,
    /// The unfused chain (`engine = "graph"`): `Classifier(ip) ->
    /// CheckIpHeader -> IcmpEcho -> own/local -> DecIpTtl -> Ip4Lookup`.
    Graph,
    /// IPv4 forwarding fused (`engine = "fast"`): the classifier checks the
    /// header (`ip checked`) and `elements::Ip4Forward` does TTL and
    /// lookup over a batch (ADR 0003); the rest as [`Engine::Graph`].
    /// Refused with IPsec and the cluster fabric (not supported yet).
    Fast,
}

impl Engine {
    /// Whether the built-in graph fuses IPv4 forwarding. [`Engine::Auto`]
    /// fuses unless IPsec is configured (the outbound `EspEncap` chain
    /// sits between the TTL decrement and the lookup, and the inbound ESP
    /// classifier after the header check: `Ip4Forward` does both in one
    /// step, so there is no place for them) or the cluster fabric is (the
    /// fused path with the fabric port is not built or tested yet).
    pub fn fuses(self, ipsec: bool, fabric: bool) -> bool {
        match self {
            Engine::Auto => !ipsec && !fabric,
            Engine::Graph => false,
            Engine::Fast => true,
        }
    }

    /// The name `show dataplane` and the start-up line give.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Auto => "auto",
            Engine::Graph => "graph",
            Engine::Fast => "fast",
        }
    }
}

/// How the worker's poll loop behaves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    pub batch: BatchSizes,
    /// Empty rounds before sleeping in `poll(2)`.
    pub idle_spins: u32,
    /// Sleep bound when idle (also how often `stop` is seen).
    pub sleep_ms: i32,
    pub engine: Engine,
    /// AF_XDP UMEM frames per socket (power of two; half RX, half TX).
    pub xdp_frames: u32,
    /// AF_PACKET sends through the interfaces' queueing disciplines
    /// (`tc`: a shaper makes a port slower than the core) instead of
    /// bypassing them (`PACKET_QDISC_BYPASS`, the default).
    pub qdisc: bool,
    /// The XDP fast path (`[dataplane] xdp_fastpath`, AF_XDP modes only):
    /// IPv4 and IPv6 with a resolved next hop (ECMP included) are
    /// forwarded in the XDP hook from a
    /// kernel mirror of the FIB ([`crate::xdp_mirror`]); the graph gets
    /// the rest.
    pub xdp_fastpath: bool,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            batch: BatchSizes::default(),
            idle_spins: 64,
            sleep_ms: 5,
            engine: Engine::Auto,
            xdp_frames: 4096,
            qdisc: false,
            xdp_fastpath: false,
        }
    }
}

/// The cluster fabric of this dataplane (`[cluster]`, crate `cluster`):
/// the fabric socket's address, the other nodes, and what the
/// `FabricEncap` / `FabricDecap` elements need. The fabric is the port
/// after the last external one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FabricConfig {
    /// This node's id.
    pub node: u16,
    /// This node's fabric socket.
    pub local: SocketAddr,
    /// The other nodes: id and fabric address.
    pub peers: Vec<(u16, SocketAddr)>,
    /// Each other node's external ports: id and the connected prefix of
    /// each port, in its port order (`[[cluster.peer]] ports`): the
    /// ingress resolves routes to (egress node, egress port) with them
    /// (`Fib::add_peer`).
    pub peer_ports: Vec<(u16, Vec<base::Prefix>)>,
    pub mode: cluster::lb::Mode,
    /// Packing degree, 1..=29 (1: off).
    pub packing: u8,
    pub affinity: bool,
    /// IP MTU of the fabric.
    pub mtu: u16,
    /// R, the external line rate in bytes per second (Direct VLB's R/N).
    pub rate: u64,
    /// Internal congestion control and the egress shaper (issue 15):
    /// `CcEgress` after `FabricDecap`, `CcIngress` before `FabricEncap`.
    pub cc: Option<FabricCc>,
}

/// Arguments of the congestion-control elements, beyond the `NODE`,
/// `SCHEME` and `PEER`s the graph builder adds (see
/// `elements::CcEgress` and `elements::CcIngress`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FabricCc {
    /// `SCHEME`: none, becn-aimd-weights, price or aimd-rate.
    pub scheme: String,
    /// More `CcEgress` arguments (`SHAPE 20000, LIMIT 1000, ...`).
    pub egress: String,
    /// More `CcIngress` arguments (`W 1300, M 0.5, ...`).
    pub ingress: String,
}

impl FabricConfig {
    /// Node ids are `0..nodes()`.
    pub fn nodes(&self) -> u16 {
        self.peers
            .iter()
            .map(|(id, _)| *id)
            .chain(std::iter::once(self.node))
            .max()
            .unwrap_or(0)
            + 1
    }
}

/// IPsec ESP tunnel mode in the built-in graph (`[dataplane.ipsec]`): the
/// SAs, each an `elements::EspEncap` (outbound) or an SA of the one
/// `elements::EspDecap` (inbound). See [`super::graph_engine::graph_config_ext`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct IpsecConfig {
    pub sas: Vec<IpsecSa>,
}

/// One manually keyed SA (AES-GCM-128, RFC 4106).
#[derive(Clone, PartialEq, Eq)]
pub struct IpsecSa {
    pub spi: u32,
    /// true: we encrypt (outbound); false: we decrypt (inbound).
    pub outbound: bool,
    pub key: [u8; 16],
    pub salt: [u8; 4],
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// Outbound: the inner destinations it encrypts (the policy);
    /// inbound: the inner sources it may carry.
    pub selectors: Vec<(IpAddr, u8)>,
    /// Inbound: the anti-replay window in bits.
    pub window: u32,
}

impl std::fmt::Debug for IpsecConfig {
    /// SPIs and directions only: never the keys.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.sas
                    .iter()
                    .map(|s| (s.spi, if s.outbound { "out" } else { "in" })),
            )
            .finish()
    }
}
