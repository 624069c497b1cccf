//! The element-graph engine: each core runs a Click-style graph of crate
//! `elements` over its queue of every port, reading the published
//! [`FibTables`] for IPv4 and IPv6.
//!
//! Per port `i` the graph is
//!
//! ```text
//! FromDevice(<interface i>) -> Classifier(arp, NS, NA, ip, ip6)
//!   arp/NS/NA -> [1] EtherRewrite rw<i>   (answers, learns; RFC 826, RFC 4861)
//!   ip  -> CheckIpHeader  -> IcmpEcho -> own address? Discard -> DecIpTtl -> Ip4Lookup
//!   ip6 -> CheckIp6Header -> IcmpEcho -> own address? Discard -> DecIp6HopLimit -> Ip6Lookup
//! Ip4Lookup [i], Ip6Lookup [i] -> [0] rw<i> -> out<i> :: ToDevice(<interface i>)
//! ```
//!
//! By default ([`Engine::Auto`], unless IPsec or the cluster fabric is
//! configured: see [`Engine::fuses`]) and with [`Engine::Fast`], each
//! port's classifier checks the IPv4 header
//! itself (`ip checked`: one parse) and its IPv4 goes to one fused
//! `Ip4Forward` (TTL and lookup over a batch, reading the same live
//! table as `Ip4Lookup`, and the MAC rewrite for gateways the port's
//! EtherRewrite has resolved, whose neighbour table it shares: those
//! packets go straight to the port's ToDevice) instead of
//! `CheckIpHeader`; packets for the router, local destinations and TTL
//! <= 1 leave it for the branch above, unresolved gateways for the
//! EtherRewrite.
//!
//! Echo replies and ICMP time-exceeded errors (RFC 1812 §5.3.1, RFC 4443
//! §3.3, from the arrival port's address) go back into the lookup and
//! leave like any routed packet. The lookups read the live tables through
//! [`LiveTable`]: one left-right read section per batch covers the LPM
//! lookup and the adjacency (port, gateway) of every packet, so a route
//! and its adjacency always come from one published version. The
//! gateway's MAC comes from the port's EtherRewrite, which resolves it
//! with ARP or Neighbor Solicitation on this core.
//!
//! Neighbours: each core's EtherRewrite keeps its own neighbour table
//! (no locks on the packet path). What a core learns (ARP, and NDP,
//! including a solicited advertisement answering another core's
//! solicitation) goes to the FIB thread on the core's learned-neighbour
//! ring, and a core due to ask again first looks in the published
//! tables ([`NeighShare`]): with a hash fanout a reply may reach a core
//! that did not ask.
//!
//! Buffers: one `pkt::Pool` per core; the devices (crate `io`, each a
//! `pkt::Device`) copy each received frame into a pool buffer and each
//! sent packet into the TX ring, recycling the buffer at once, so nothing
//! is allocated per packet after warm-up. Counters are the graph's per-element plain integers.
//!
//! The same code builds an operator's graph (`[dataplane] graph`,
//! [`GraphWorker::with_graph`]): the built-in text above or the
//! operator's goes through `build_graph` and the same checks
//! ([`check_graph`]); [`GraphWorker::replace`] swaps a core's graph on its
//! devices and its live tables, and each worker publishes its element
//! counters for `show dataplane` ([`WorkerLink`]).

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex};

use elements::{AnyElement, Env, NeighShare, NhEntry, Table};
use graph::{DeviceRole, Element, Graph, Runner};
use io::rss::Producer;
use io::IoError;
use lpm::publish::ReadHandle;
use lpm::{Lpm, NextHop};
use pkt::{Device, Pool};

use super::balance::BalanceGroup;
use super::common::{
    ElementCounters, Engine, FabricConfig, GraphText, IpsecConfig, Learned, LoopConfig,
    WorkerCounters,
};
use super::core_stats::{CorePublisher, CoreStats, PortQueue};
use crate::table::FibTables;

/// Packet buffers per core (RX batches of every port, hold queues, ICMP
/// and ARP frames built in the graph).
const POOL_BUFFERS: usize = 4096;

/// A port as the graph needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphPort {
    pub mac: [u8; 6],
    pub addrs: Vec<(IpAddr, u8)>,
}

/// The published tables as a table of the lookup elements: the LPM
/// result and its adjacency in one read section (see
/// [`Table::lookup_entries`]).
pub struct LiveTable(pub ReadHandle<FibTables>);

fn entry(t: &FibTables, nh: NextHop) -> Option<NhEntry> {
    let a = t.adjacency(nh)?;
    let mut gw = [0u8; 16];
    match a.gw {
        Some(IpAddr::V4(g)) => {
            if let Some(s) = gw.get_mut(..4) {
                s.copy_from_slice(&g.octets());
            }
        }
        Some(IpAddr::V6(g)) => gw = g.octets(),
        // Connected: the lookup puts the destination in `anno.gw`.
        None => {}
    }
    Some(NhEntry {
        port: a.port,
        gw,
        tag: a.tag,
    })
}

fn fill(t: &FibTables, out: &[Option<NextHop>], entries: &mut [Option<NhEntry>]) {
    for (e, r) in entries.iter_mut().zip(out) {
        *e = r.and_then(|nh| entry(t, nh));
    }
}

/// [`fill`] where a multipath route's group is first replaced by the
/// member for the packet's flow hash (`FibTables::pick`).
fn fill_flow(
    t: &FibTables,
    out: &mut [Option<NextHop>],
    entries: &mut [Option<NhEntry>],
    flow: &mut dyn FnMut(usize) -> u32,
) {
    for (i, (e, r)) in entries.iter_mut().zip(out.iter_mut()).enumerate() {
        if let Some(nh) = *r {
            if crate::table::is_group(nh) {
                *r = Some(t.pick(nh, flow(i)));
            }
        }
        *e = r.and_then(|nh| entry(t, nh));
    }
}

/// The table of [`FibTables`] that holds an address type's routes.
trait Family: Copy {
    type Trie: Lpm<Self>;
    fn trie(t: &FibTables) -> &Self::Trie;
}

impl Family for u32 {
    type Trie = lpm::Poptrie4;
    fn trie(t: &FibTables) -> &Self::Trie {
        &t.v4
    }
}

impl Family for u128 {
    type Trie = lpm::Poptrie6;
    fn trie(t: &FibTables) -> &Self::Trie {
        &t.v6
    }
}

impl<A: Family> Table<A> for LiveTable {
    #[inline]
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<NextHop>]) {
        A::trie(&self.0.read()).lookup_batch(addrs, out)
    }
    #[inline]
    fn lookup_entries(
        &mut self,
        addrs: &[A],
        out: &mut [Option<NextHop>],
        entries: &mut [Option<NhEntry>],
    ) -> bool {
        let t = self.0.read();
        A::trie(&t).lookup_batch(addrs, out);
        fill(&t, out, entries);
        true
    }
    #[inline]
    fn lookup_entries_flow(
        &mut self,
        addrs: &[A],
        out: &mut [Option<NextHop>],
        entries: &mut [Option<NhEntry>],
        flow: &mut dyn FnMut(usize) -> u32,
    ) -> bool {
        let t = self.0.read();
        A::trie(&t).lookup_batch(addrs, out);
        fill_flow(&t, out, entries, flow);
        true
    }
}

/// One [`LiveTable`] read by several lookup elements of one core's graph.
struct SharedTable(Rc<RefCell<LiveTable>>);

impl<A: Copy> Table<A> for SharedTable
where
    LiveTable: Table<A>,
{
    #[inline]
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<NextHop>]) {
        self.0.borrow_mut().lookup_batch(addrs, out)
    }
    #[inline]
    fn lookup_entries(
        &mut self,
        addrs: &[A],
        out: &mut [Option<NextHop>],
        entries: &mut [Option<NhEntry>],
    ) -> bool {
        self.0.borrow_mut().lookup_entries(addrs, out, entries)
    }
    // Without this the trait's default would ignore `flow`, and a
    // multipath route's group would reach the rewrite unresolved.
    #[inline]
    fn lookup_entries_flow(
        &mut self,
        addrs: &[A],
        out: &mut [Option<NextHop>],
        entries: &mut [Option<NhEntry>],
        flow: &mut dyn FnMut(usize) -> u32,
    ) -> bool {
        self.0
            .borrow_mut()
            .lookup_entries_flow(addrs, out, entries, flow)
    }
}

/// Gives the EtherRewrite named `rw<i>` of every port `i` the core's
/// neighbour share (both graphs name them so; an operator's EtherRewrite
/// named otherwise resolves on its own core only).
pub(super) fn attach_share(
    g: &mut Graph<AnyElement>,
    shared: Option<&Rc<RefCell<Shared>>>,
    ports: usize,
) {
    let Some(sh) = shared else { return };
    for i in 0..ports {
        let e = g.find(&format!("rw{i}")).and_then(|k| g.element_mut(k));
        if let Some(AnyElement::EtherRewrite(rw)) = e {
            rw.set_share(Box::new(PortShare {
                port: i as u16,
                inner: Rc::clone(sh),
            }));
        }
    }
}

/// One core's link to the FIB thread for neighbours: learned ones go out
/// on the core's SPSC ring, everyone's come back in the published tables.
pub(super) struct Shared {
    pub(super) fib: ReadHandle<FibTables>,
    pub(super) learn: Producer<Learned>,
    /// Learned neighbours lost to a full ring.
    pub(super) dropped: u64,
}

/// [`NeighShare`] for the EtherRewrite of one port.
struct PortShare {
    port: u16,
    inner: Rc<RefCell<Shared>>,
}

impl NeighShare for PortShare {
    fn lookup(&mut self, addr: IpAddr) -> Option<pkt::hdr::ether::Mac> {
        let mut s = self.inner.borrow_mut();
        let m = s.fib.read().neighbour(addr);
        m.map(pkt::hdr::ether::Mac)
    }
    fn learned(&mut self, addr: IpAddr, mac: pkt::hdr::ether::Mac) {
        let mut s = self.inner.borrow_mut();
        let l = Learned {
            port: self.port,
            ip: addr,
            mac: mac.0,
        };
        if s.learn.push(l).is_ok() {
            s.learn.publish();
        } else {
            s.dropped += 1;
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The router's own-address branch of one family: echo to own addresses,
/// then own addresses and `local` (multicast, broadcast: never forwarded,
/// RFC 1812 §5.3.5, RFC 4291 §2.7; nothing here routes multicast) to
/// `mine` (a Discard: no local stack in the dataplane), then the
/// TTL/hop-limit decrement. `own` pairs each address with the Classifier
/// tests matching it as destination.
fn family(
    s: &mut String,
    f: &str,
    own: &[(IpAddr, String)],
    local: &[&str],
    srcs: &[String],
    dec: &str,
    next: Option<&str>,
) {
    // Routed packets go to the lookup, or first through the IPsec policy.
    let rt = next.map_or(format!("rt{f}"), str::to_string);
    let ttl = format!("ttl{f}");
    if srcs.is_empty() {
        let _ = writeln!(s, "{ttl} :: {dec};");
    } else {
        let _ = writeln!(s, "{ttl} :: {dec}(SRC {});", srcs.join(" "));
    }
    let _ = writeln!(s, "{ttl} [0] -> {rt}; {ttl} [1] -> {rt};");
    let mut tests: Vec<&str> = own.iter().map(|(_, t)| t.as_str()).collect();
    tests.extend_from_slice(local);
    let _ = writeln!(s, "local{f} :: Classifier({}, -);", tests.join(", "));
    for k in 0..tests.len() {
        let _ = writeln!(s, "local{f} [{k}] -> mine;");
    }
    let _ = writeln!(s, "local{f} [{}] -> {ttl};", tests.len());
    if own.is_empty() {
        let _ = writeln!(s, "head{f} :: Counter; head{f} -> local{f};");
        return;
    }
    let addrs: Vec<String> = own.iter().map(|(a, _)| format!("ADDR {a}")).collect();
    let _ = writeln!(s, "head{f} :: IcmpEcho({});", addrs.join(", "));
    let _ = writeln!(s, "head{f} [0] -> {rt}; head{f} [1] -> local{f};");
}

/// The graph config of one core for `ports`, whose devices are named
/// `devs` (in port order, so `anno.in_port` is the port index). When
/// the engine fuses ([`Engine::fuses`]: by default), each port's classifier checks the IPv4 header
/// (`Classifier(..., ip checked, ...)`, the header parsed once) and IPv4
/// from every port enters one `Ip4Forward` (table `fib4f`) instead of
/// `CheckIpHeader`; what it does not forward goes on to the own-address
/// branch as before.
pub fn graph_config(ports: &[GraphPort], devs: &[&str], engine: Engine) -> String {
    graph_config_with(ports, devs, engine, None)
}

/// [`graph_config`] with the cluster fabric as port `n` (after the `n`
/// external ports; its device, `devs[n]`, is the fabric socket):
///
/// ```text
/// rt4 [n], rt6 [n] -> FabricEncap(NODE, NODES, MODE, ..., PEER id addr ..., NEIGHBOUR true, NOLOOP n) -> ToDevice(fabric)
/// FromDevice(fabric) -> FabricDecap(NODE, PORTS n)
///     [i < n] frames for this node's port i (by the tag) -> rw<i> -> ToDevice(<interface i>)
///     [n] in transit (this node is the intermediate) -> ToDevice(fabric)
/// ```
///
/// With congestion control (`FabricConfig::cc`), `CcIngress` sits in
/// front of `FabricEncap` (its control input fed by `FabricDecap [n+1]`)
/// and `CcEgress` between `FabricDecap [0]` and port 0 (its control
/// output to the fabric; it shapes port 0 only).
///
/// The ingress does the whole lookup: a route across the fabric resolves
/// (`Fib::add_peer`) to the fabric port with an egress tag (node, port)
/// and the neighbour at the egress, which the lookup puts in `anno.nh`
/// and `anno.gw`; FabricEncap writes the tag in the option and the
/// neighbour after the frame. The egress sends each frame to the port its
/// tag names (`bad_port` when it names none) and `EtherRewrite` resolves
/// the neighbour: no lookup and no TTL decrement there. NOLOOP keeps a
/// frame that came from the fabric from going back into it.
pub fn graph_config_with(
    ports: &[GraphPort],
    devs: &[&str],
    engine: Engine,
    fabric: Option<&FabricConfig>,
) -> String {
    graph_config_ext(ports, devs, engine, fabric, None)
}

fn selector_list(sel: &[(IpAddr, u8)]) -> String {
    sel.iter()
        .map(|(a, l)| format!("{a}/{l}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The IPsec part of the graph (`[dataplane.ipsec]`), after the
/// own-address branches: a chain of one `EspEncap` per outbound SA
/// between the TTL decrement (and the echo replies and ICMP errors) and
/// the lookups, and one `EspDecap` with every inbound SA for the ESP
/// packets addressed to an inbound SA's tunnel end:
///
/// ```text
/// ttl4, ttl6, head4/6 replies -> enc0 [1|2] -> enc1 ... -> [1] rt4, [2] rt6
///                               enc<k> [0] (ESP, outer IPv4) -> rt4
/// CheckIpHeader -> espc4 :: Classifier(23/32 30/<tunnel end>, ..., -)
///     [k] -> dec :: EspDecap(SA ...) [0] -> CheckIpHeader -> head4
///                                    [1] -> CheckIp6Header -> head6
///     [last] -> head4
/// ```
///
/// The decapsulated packet then goes through the router like one that
/// arrived on a port: own address, TTL, policy, lookup.
fn ipsec_graph(s: &mut String, post: &mut String, ipsec: &IpsecConfig) -> Option<String> {
    let out: Vec<_> = ipsec.sas.iter().filter(|a| a.outbound).collect();
    let inb: Vec<_> = ipsec.sas.iter().filter(|a| !a.outbound).collect();
    for (k, a) in out.iter().enumerate() {
        let _ = writeln!(
            s,
            "enc{k} :: EspEncap(SPI {}, KEY {}{}, SRC {}, DST {}, MATCH {});\nenc{k} [0] -> rt4;",
            a.spi,
            hex(&a.key),
            hex(&a.salt),
            a.src,
            a.dst,
            selector_list(&a.selectors)
        );
        if k > 0 {
            let _ = writeln!(s, "enc{} [1] -> enc{k}; enc{} [2] -> enc{k};", k - 1, k - 1);
        }
    }
    if let Some(last) = out.len().checked_sub(1) {
        let _ = writeln!(s, "enc{last} [1] -> rt4; enc{last} [2] -> rt6;");
    }
    if !inb.is_empty() {
        let sas: Vec<String> = inb
            .iter()
            .map(|a| {
                format!(
                    "SA {} {}{} WINDOW {} FROM {}",
                    a.spi,
                    hex(&a.key),
                    hex(&a.salt),
                    a.window,
                    selector_list(&a.selectors)
                )
            })
            .collect();
        let mut ends: Vec<String> = inb
            .iter()
            .map(|a| format!("23/32 30/{}", hex(&a.dst.octets())))
            .collect();
        ends.sort();
        ends.dedup();
        let _ = writeln!(
            s,
            "dec :: EspDecap({});\nespc4 :: Classifier({}, -);",
            sas.join(", "),
            ends.join(", "),
        );
        for k in 0..ends.len() {
            let _ = writeln!(s, "espc4 [{k}] -> dec;");
        }
        // head4/head6 are declared by the own-address branches, later.
        let _ = writeln!(
            post,
            "dec [0] -> CheckIpHeader -> head4; dec [1] -> CheckIp6Header -> head6;\n\
             espc4 [{}] -> head4;",
            ends.len()
        );
    }
    (!out.is_empty()).then(|| "enc0".to_string())
}

/// [`graph_config_with`] and, with `ipsec`, ESP tunnel mode (see
/// [`ipsec_graph`]; the engine must not be [`Engine::Fast`], and
/// [`Engine::Auto`] keeps the unfused chain there).
pub fn graph_config_ext(
    ports: &[GraphPort],
    devs: &[&str],
    engine: Engine,
    fabric: Option<&FabricConfig>,
    ipsec: Option<&IpsecConfig>,
) -> String {
    let n = ports.len();
    let lookups = n + usize::from(fabric.is_some());
    let mut s = String::new();
    let _ = writeln!(s, "rt4 :: Ip4Lookup(TABLE fib4, PORTS {lookups});");
    let _ = writeln!(s, "rt6 :: Ip6Lookup(TABLE fib6, PORTS {lookups});");
    let _ = writeln!(s, "mine :: Discard;");
    let mut own4 = Vec::new();
    let mut own6 = Vec::new();
    for p in ports {
        for (a, _) in &p.addrs {
            match a {
                // Destination at 14 + 16 (IPv4) and 14 + 24 (IPv6).
                IpAddr::V4(x) => own4.push((*a, format!("30/{}", hex(&x.octets())))),
                IpAddr::V6(x) => {
                    let o = x.octets();
                    own6.push((*a, format!("38/{} 46/{}", hex(&o[..8]), hex(&o[8..]))));
                }
            }
        }
    }
    // SRC of the ICMP errors: the arrival port's first address of the
    // family (RFC 1812 §4.3.2.4), else any of the router's.
    let pick = |v6: bool| -> Vec<String> {
        let first = |p: &GraphPort| p.addrs.iter().map(|(a, _)| *a).find(|a| a.is_ipv6() == v6);
        let any = ports.iter().find_map(first);
        match any {
            None => Vec::new(),
            Some(any) => ports
                .iter()
                .map(|p| first(p).unwrap_or(any).to_string())
                .collect(),
        }
    };
    // 224.0.0.0/24 (link-local multicast) and the limited broadcast;
    // every IPv6 multicast destination (ff00::/8).
    let local4 = ["30/e00000", "30/ffffffff"];
    let local6 = ["38/ff"];
    let mut post = String::new();
    let first = ipsec.and_then(|c| ipsec_graph(&mut s, &mut post, c));
    family(
        &mut s,
        "4",
        &own4,
        &local4,
        &pick(false),
        "DecIpTtl",
        first.as_deref(),
    );
    family(
        &mut s,
        "6",
        &own6,
        &local6,
        &pick(true),
        "DecIp6HopLimit",
        first.as_deref(),
    );
    s.push_str(&post);
    // ESP to a tunnel end of ours goes to the decapsulator first.
    let head4 = if ipsec.is_some_and(|c| c.sas.iter().any(|a| !a.outbound)) {
        "espc4"
    } else {
        "head4"
    };
    let fused = engine.fuses(ipsec.is_some(), fabric.is_some());
    let rewrite = |p: &GraphPort| {
        let mut rw = format!("MAC {}, RETRY_MS 200", mac_str(&p.mac));
        for (a, _) in &p.addrs {
            let k = if a.is_ipv4() { "IP" } else { "IP6" };
            let _ = write!(rw, ", {k} {a}");
        }
        rw
    };
    if fused {
        // The EtherRewrites first, then Ip4Forward, which shares their
        // resolved neighbours (REWRITE: a packet to a resolved gateway is
        // rewritten in the same pass and goes straight to the port's
        // ToDevice), then the ports that connect to both (a name is
        // declared before a connection uses it).
        for (i, p) in ports.iter().enumerate() {
            let _ = writeln!(s, "rw{i} :: EtherRewrite({});", rewrite(p));
        }
        let mut args: Vec<String> = own4.iter().map(|(a, _)| format!("ADDR {a}")).collect();
        args.push(format!("TABLE fib4f, PORTS {n}"));
        args.extend((0..n).map(|i| format!("REWRITE rw{i}")));
        let _ = writeln!(s, "fwd4 :: Ip4Forward({});", args.join(", "));
        let _ = writeln!(s, "fwd4 [{n}] -> head4;");
    }
    for (i, (p, dev)) in ports.iter().zip(devs).enumerate() {
        let rw = if fused {
            String::new()
        } else {
            format!(" rw{i} :: EtherRewrite({});", rewrite(p))
        };
        // Fused: the classifier checks the IPv4 header (`ip checked`, one
        // parse), and Ip4Forward trusts it.
        let ip = if fused { "ip checked" } else { "ip" };
        let _ = writeln!(
            s,
            "in{i} :: FromDevice({dev});{rw}\n\
             c{i} :: Classifier(arp, ip6 icmp6 54/87, ip6 icmp6 54/88, {ip}, ip6);\n\
             in{i} -> c{i}; c{i} [0] -> [1] rw{i}; c{i} [1] -> [1] rw{i}; c{i} [2] -> [1] rw{i};\n\
             c{i} [4] -> CheckIp6Header -> head6;\n\
             rt4 [{i}] -> rw{i}; rt6 [{i}] -> rw{i}; rw{i} -> out{i} :: ToDevice({dev});"
        );
        if fused {
            let _ = writeln!(
                s,
                "c{i} [3] -> fwd4; fwd4 [{i}] -> rw{i}; fwd4 [{}] -> out{i};",
                n + 1 + i
            );
        } else {
            let _ = writeln!(s, "c{i} [3] -> CheckIpHeader -> {head4};");
        }
    }
    if let (Some(f), Some(dev)) = (fabric, devs.get(n)) {
        let mode = match f.mode {
            cluster::lb::Mode::Direct => "direct",
            cluster::lb::Mode::Vlb => "vlb",
            cluster::lb::Mode::DirectVlb => "direct-vlb",
        };
        let mut args = format!(
            "NODE {}, NODES {}, MODE {mode}, PACKING {}, MTU {}, IP6 {}, AFFINITY {}, RATE {}, NEIGHBOUR true, NOLOOP {n}",
            f.node,
            f.nodes(),
            f.packing,
            f.mtu,
            f.local.is_ipv6(),
            f.affinity,
            f.rate
        );
        for (id, a) in &f.peers {
            let _ = write!(args, ", PEER {id} {}", a.ip());
        }
        // With congestion control: rt -> CcIngress -> fenc, fdec [0] ->
        // CcEgress -> fcl, CcEgress's control messages to the fabric, and
        // those received (fdec [2]) to CcIngress's control input. Declared
        // here, connected to fenc, fdec and tofab below.
        let (to_enc, from_dec) = match &f.cc {
            None => ("fenc", "fdec [0]"),
            Some(cc) => {
                let mut peers = String::new();
                for (id, a) in &f.peers {
                    let _ = write!(peers, ", PEER {id} {}", a.ip());
                }
                let extra = |x: &str| {
                    if x.is_empty() {
                        String::new()
                    } else {
                        format!(", {x}")
                    }
                };
                let _ = writeln!(
                    s,
                    "cci :: CcIngress(NODE {}, SCHEME {}{peers}{});\n\
                     cce :: CcEgress(NODE {}, SCHEME {}{});",
                    f.node,
                    cc.scheme,
                    extra(&cc.ingress),
                    f.node,
                    cc.scheme,
                    extra(&cc.egress)
                );
                ("cci", "fdec [0] -> cce; cce [0]")
            }
        };
        // FabricDecap has at least one port output: a node without
        // external ports discards what names port 0.
        let dports = n.max(1);
        let _ = writeln!(
            s,
            "fenc :: FabricEncap({args}); tofab :: ToDevice({dev});\n\
             rt4 [{n}] -> {to_enc}; rt6 [{n}] -> {to_enc}; fenc -> tofab;\n\
             fin :: FromDevice({dev}); fdec :: FabricDecap(NODE {}, PORTS {dports}, NODES {});\n\
             fin -> fdec; fdec [{dports}] -> tofab;",
            f.node,
            f.nodes()
        );
        let port0 = if n == 0 { "Discard" } else { "rw0" };
        let _ = writeln!(s, "{from_dec} -> {port0};");
        for i in 1..n {
            let _ = writeln!(s, "fdec [{i}] -> rw{i};");
        }
        if f.cc.is_some() {
            // Connected once fenc, fdec and tofab exist (a name is
            // declared before it is used).
            let _ = writeln!(
                s,
                "cci -> fenc; fdec [{}] -> [1] cci; cce [1] -> tofab;",
                dports + 1
            );
        }
    }
    s
}

/// The live tables of one core, shared by every lookup element of its
/// graph and kept across graph replacements (the FIB is never rebuilt
/// for a new graph).
pub(super) struct Tables {
    pub(super) v4: Rc<RefCell<LiveTable>>,
    pub(super) v6: Rc<RefCell<LiveTable>>,
}

/// Builds a graph from `text` with the core's tables: `TABLE fib4` (and
/// `fib4f`, the fused element's name in the built-in graph) and `TABLE
/// fib6` give every lookup that names them a view of the published FIB.
/// Then the checks every graph passes, built-in or the operator's
/// ([`check_graph`]).
pub(super) fn build_graph(
    g: &GraphText,
    tables: &Tables,
    devs: &[&str],
    ports: usize,
) -> Result<Graph<AnyElement>, String> {
    let mut env = Env::new();
    let used = Rc::new(Cell::new(0u32));
    for name in ["fib4", "fib4f"] {
        let (h, u) = (Rc::clone(&tables.v4), Rc::clone(&used));
        env.table4_maker(
            name,
            Box::new(move || {
                u.set(u.get() + 1);
                Box::new(SharedTable(Rc::clone(&h)))
            }),
        );
    }
    let (h, u) = (Rc::clone(&tables.v6), Rc::clone(&used));
    env.table6_maker(
        "fib6",
        Box::new(move || {
            u.set(u.get() + 1);
            Box::new(SharedTable(Rc::clone(&h)))
        }),
    );
    let graph = Graph::from_str(&g.text, &g.file, &mut env, Pool::new(POOL_BUFFERS))
        .map_err(|e| e.to_string())?;
    check_built(&graph, devs, ports, used.get())?;
    Ok(graph)
}

/// What the daemon needs of a graph beyond its building: every device
/// element names a device of the dataplane, every external port is read
/// by exactly one `FromDevice`, some lookup reads the FIB, and every
/// element is connected ([`Graph::check_connected`]).
fn check_built(
    g: &Graph<AnyElement>,
    devs: &[&str],
    ports: usize,
    fib_readers: u32,
) -> Result<(), String> {
    let at = |i: usize, msg: String| {
        let p = g.pos(i).unwrap_or_default();
        format!("{}:{}:{}: {msg}", g.file(), p.line, p.col)
    };
    let mut readers = vec![0usize; devs.len()];
    for (i, (name, e, _)) in g.iter().enumerate() {
        let (dev, rx) = match e.device() {
            Some(DeviceRole::From(d)) => (d, true),
            Some(DeviceRole::To(d)) => (d, false),
            None => continue,
        };
        let Some(k) = devs.iter().position(|d| *d == dev) else {
            return Err(at(
                i,
                format!(
                    "{name} ({}): no dataplane interface '{dev}' (the interfaces are: {})",
                    e.class(),
                    devs.join(", ")
                ),
            ));
        };
        if rx {
            readers[k] += 1;
            if readers[k] > 1 {
                return Err(at(
                    i,
                    format!("{name}: a second FromDevice({dev}); one per interface"),
                ));
            }
        }
    }
    if let Some(k) = (0..ports.min(devs.len())).find(|&k| readers[k] == 0) {
        return Err(format!(
            "{}:1:1: no FromDevice({}): the graph must receive from every dataplane interface",
            g.file(),
            devs[k]
        ));
    }
    if fib_readers == 0 {
        return Err(format!(
            "{}:1:1: the graph reads no FIB: it needs an Ip4Lookup, Ip6Lookup or Ip4Forward \
             with TABLE fib4 or TABLE fib6",
            g.file()
        ));
    }
    g.check_connected().map_err(|e| e.to_string())
}

/// Checks an operator's graph for the dataplane whose devices are
/// `devs` (the interface names, in port order) without starting
/// anything: the same build and checks as a worker runs, over an empty
/// FIB. The error starts with `FILE:LINE:COL`.
pub fn check_graph(g: &GraphText, devs: &[&str]) -> Result<(), String> {
    let w = lpm::publish::left_right(FibTables::new());
    let tables = Tables {
        v4: Rc::new(RefCell::new(LiveTable(w.reader()))),
        v6: Rc::new(RefCell::new(LiveTable(w.reader()))),
    };
    build_graph(g, &tables, devs, devs.len()).map(drop)
}

/// A request to replace a worker's graph, and where its result goes.
pub struct Swap {
    pub graph: GraphText,
    pub reply: mpsc::Sender<Result<(), String>>,
}

/// A worker's link to the control side: graph replacements in, element
/// counters out (refreshed every [`PUBLISH_ROUNDS`] busy rounds and when
/// the worker goes idle).
pub struct WorkerLink {
    pub swaps: mpsc::Receiver<Swap>,
    pub counters: Arc<Mutex<Vec<ElementCounters>>>,
    /// This core's packets in and out and drops by reason, stored with
    /// relaxed atomics per batch (see [`super::core_stats`]).
    pub core: Arc<CoreStats>,
}

/// Busy poll rounds between two counter snapshots.
pub const PUBLISH_ROUNDS: u64 = 1024;

/// Busy poll rounds between two looks at the core's other commands
/// ([`GraphWorker::run_until`]; a channel read each).
const UNTIL_ROUNDS: u64 = 64;

/// One core's graph over its queue of every port.
pub struct GraphWorker<D: Device<Error = IoError>> {
    runner: Runner<AnyElement, D>,
    shared: Option<Rc<RefCell<Shared>>>,
    tables: Tables,
    devs: Vec<String>,
    ports: usize,
    link: Option<WorkerLink>,
    /// Publishes into `link.core`.
    core: Option<CorePublisher>,
    /// Added to the driver's packets in and out in the per-core counters:
    /// what the core moved while its devices ran virtual routers (see
    /// [`GraphWorker::take_devices`]), so that they only grow.
    core_base: (u64, u64),
}

impl<D: Device<Error = IoError>> GraphWorker<D> {
    /// Builds this core's graph. `v4` and `v6` read the same published
    /// tables (one handle per lookup element); `devs` are this core's
    /// devices in port order (with distinct names). With `share` (a third
    /// handle and this core's ring to the FIB thread), neighbours this
    /// core learns go to the FIB thread, and a neighbour due for a
    /// request is first looked up in the published tables: an ARP reply
    /// or advertisement that reached another core resolves it here too.
    pub fn new(
        ports: &[GraphPort],
        devs: Vec<D>,
        v4: ReadHandle<FibTables>,
        v6: ReadHandle<FibTables>,
        share: Option<(ReadHandle<FibTables>, Producer<Learned>)>,
        cfg: LoopConfig,
    ) -> Result<Self, IoError> {
        Self::with_fabric(ports, devs, v4, v6, share, cfg, None)
    }

    /// [`GraphWorker::new`] with the cluster fabric: `devs` has one more
    /// device after the ports, the fabric socket (see
    /// [`graph_config_with`]).
    pub fn with_fabric(
        ports: &[GraphPort],
        devs: Vec<D>,
        v4: ReadHandle<FibTables>,
        v6: ReadHandle<FibTables>,
        share: Option<(ReadHandle<FibTables>, Producer<Learned>)>,
        cfg: LoopConfig,
        fabric: Option<&FabricConfig>,
    ) -> Result<Self, IoError> {
        Self::with_graph(ports, devs, v4, v6, share, cfg, fabric, None, None, &[])
            .map_err(|e| e.map_or(IoError::Config("the dataplane graph does not build"), |e| e))
    }

    /// [`GraphWorker::with_fabric`] running the operator's graph `custom`
    /// (not with the fabric: not supported yet) instead of the built-in
    /// one, and with `ipsec` ESP tunnel mode in the built-in graph (see
    /// [`graph_config_ext`]; the graph engine only, without the fabric). Errors: `Err(None)` for a graph that does not build (the text
    /// of that error comes from [`check_graph`]), `Err(Some(e))` for the
    /// rest.
    #[allow(clippy::too_many_arguments)]
    pub fn with_graph(
        ports: &[GraphPort],
        devs: Vec<D>,
        v4: ReadHandle<FibTables>,
        v6: ReadHandle<FibTables>,
        share: Option<(ReadHandle<FibTables>, Producer<Learned>)>,
        cfg: LoopConfig,
        fabric: Option<&FabricConfig>,
        custom: Option<&GraphText>,
        ipsec: Option<&IpsecConfig>,
        balance: &[BalanceGroup],
    ) -> Result<Self, Option<IoError>> {
        if custom.is_some() && !balance.is_empty() {
            return Err(Some(IoError::Config(super::BALANCE_WITH_GRAPH)));
        }
        super::balance::check(balance, ports.len()).map_err(|e| Some(IoError::Config(e)))?;
        if ipsec.is_some() && (cfg.engine == Engine::Fast || fabric.is_some() || custom.is_some()) {
            return Err(Some(IoError::Config(super::IPSEC_NOT_SUPPORTED)));
        }
        let batch = cfg.batch.validate()?;
        if devs.len() != ports.len() + usize::from(fabric.is_some()) {
            return Err(Some(IoError::Config("one dataplane device per port")));
        }
        if fabric.is_some() && cfg.engine == Engine::Fast {
            return Err(Some(IoError::Config(
                "the cluster fabric with engine = \"fast\" is not supported yet",
            )));
        }
        if fabric.is_some() && custom.is_some() {
            return Err(Some(IoError::Config(
                "an operator's graph with the cluster fabric is not supported yet",
            )));
        }
        let tables = Tables {
            v4: Rc::new(RefCell::new(LiveTable(v4))),
            v6: Rc::new(RefCell::new(LiveTable(v6))),
        };
        let names: Vec<String> = devs.iter().map(|d| d.name().to_string()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let text = match custom {
            Some(g) => g.clone(),
            None => {
                let mut text = graph_config_ext(ports, &refs, cfg.engine, fabric, ipsec);
                text.push_str(&super::balance::balance_config(balance));
                GraphText {
                    file: "dataplane".into(),
                    text,
                }
            }
        };
        let mut g = build_graph(&text, &tables, &refs, ports.len()).map_err(|_| None)?;
        let shared = share.map(|(fib, learn)| {
            Rc::new(RefCell::new(Shared {
                fib,
                learn,
                dropped: 0,
            }))
        });
        attach_share(&mut g, shared.as_ref(), ports.len());
        let runner = Runner::new(g, devs, batch.kp.min(pkt::MAX_BATCH))
            .map_err(|_| Some(IoError::Config("a dataplane graph device is missing")))?;
        Ok(GraphWorker {
            runner,
            shared,
            tables,
            devs: names,
            ports: ports.len(),
            link: None,
            core: None,
            core_base: (0, 0),
        })
    }

    /// Connects this worker to the control side (graph replacements and
    /// counter snapshots), and publishes a first snapshot.
    pub fn set_link(&mut self, link: WorkerLink) {
        let mut p = CorePublisher::new(Arc::clone(&link.core));
        p.index(&self.runner.graph);
        self.core = Some(p);
        self.link = Some(link);
        self.publish();
    }

    /// Device totals for the per-core counters.
    fn core_batch(&mut self, idle: bool) {
        let Some(p) = self.core.as_mut() else { return };
        let st = self.runner.stats();
        let (rx, tx) = (st.rx + self.core_base.0, st.tx + self.core_base.1);
        if idle {
            p.flush(&self.runner.graph, rx, tx);
        } else {
            p.batch(&self.runner.graph, rx, tx);
        }
    }

    /// Takes this core's devices out for the virtual routers
    /// ([`super::vr`]): the graph, its neighbours and the FIB views stay,
    /// idle, until [`GraphWorker::put_devices`]. Its element counters
    /// are withdrawn from `show dataplane` meanwhile (no graph of the
    /// main table runs).
    pub(super) fn take_devices(&mut self) -> Vec<D> {
        self.publish();
        self.core_batch(true);
        if let Some(l) = &self.link {
            if let Ok(mut c) = l.counters.lock() {
                c.clear();
            }
            l.core.set_queues(Vec::new());
        }
        self.runner.take_devices()
    }

    /// Gives back the devices [`GraphWorker::take_devices`] took; the
    /// per-core counters go on from what the core published meanwhile.
    pub(super) fn put_devices(&mut self, devs: Vec<D>) {
        self.runner.put_devices(devs);
        let st = self.runner.stats();
        if let (Some(l), Some(p)) = (&self.link, self.core.as_mut()) {
            let now = l.core.snapshot();
            self.core_base = (now.rx.saturating_sub(st.rx), now.tx.saturating_sub(st.tx));
            // The core's drop names were the VRs' demultiplexer's.
            p.index(&self.runner.graph);
        }
        self.publish();
        self.core_batch(true);
    }

    /// Graph replacements waiting for this worker (answered by the
    /// virtual routers' loop while the devices are theirs).
    pub(super) fn swaps(&self) -> Option<&mpsc::Receiver<Swap>> {
        self.link.as_ref().map(|l| &l.swaps)
    }

    /// Replaces the running graph by the operator's `g`, on the same
    /// devices and the same live FIB; on an error the old graph goes on.
    /// Element counters start again from zero with the new graph.
    pub fn replace(&mut self, g: &GraphText) -> Result<(), String> {
        let refs: Vec<&str> = self.devs.iter().map(String::as_str).collect();
        let mut graph = build_graph(g, &self.tables, &refs, self.ports)?;
        attach_share(&mut graph, self.shared.as_ref(), self.ports);
        let old = self
            .runner
            .replace_graph(graph)
            .map_err(|e| format!("{}: {e}", g.file))?;
        // The per-core drops go on from the old graph's totals.
        if let Some(p) = self.core.as_mut() {
            p.retire(&old);
            p.index(&self.runner.graph);
        }
        Ok(())
    }

    /// Every element's counters now (own drop reasons always, generic
    /// ones when they happened). The driver's own state joins them: a
    /// `NICBalance` element gets its correlation's `evaluations`,
    /// `congested`, `ticket_cuts`, `suspensions` and `qema` (EWMA queue
    /// length); a `FromDevice` its `tickets`, `polls_withheld` (polls
    /// NICBalance took from it) and `left_on_wire` (frames the kernel
    /// dropped because its receive ring was full, when the device tells).
    pub fn element_counters(&self) -> Vec<ElementCounters> {
        let mut v = self.graph_counters();
        for (k, st) in self.runner.balances() {
            if let Some(e) = v.get_mut(k) {
                e.counters.extend([
                    ("evaluations".to_string(), st.evaluations),
                    ("congested".to_string(), st.congested),
                    ("ticket_cuts".to_string(), st.lowered),
                    ("suspensions".to_string(), st.suspended),
                    ("qema".to_string(), st.qema),
                ]);
            }
        }
        for r in self.runner.rx_state() {
            let Some(e) = v.get_mut(r.elem) else { continue };
            e.counters.extend([
                ("tickets".to_string(), u64::from(r.tickets)),
                ("polls_withheld".to_string(), r.skipped),
            ]);
            let drops = self
                .runner
                .devices()
                .get(r.dev)
                .and_then(|d| d.rx_ring_drops());
            if let Some(d) = drops {
                e.counters.push(("left_on_wire".to_string(), d));
            }
        }
        v
    }

    fn graph_counters(&self) -> Vec<ElementCounters> {
        let g = &self.runner.graph;
        g.iter()
            .enumerate()
            .map(|(i, (name, e, st))| {
                let drops = g
                    .drops_of(i)
                    .enumerate()
                    .filter(|(k, (_, n))| *k >= graph::DropReason::GENERIC || *n > 0)
                    .map(|(_, (r, n))| (r.to_string(), n))
                    .collect();
                let mut counters = Vec::new();
                e.counters(&mut |k, v| counters.push((k.to_string(), v)));
                let mut sas = Vec::new();
                match e {
                    AnyElement::EspEncap(x) => x.sa_counters(&mut sas),
                    AnyElement::EspDecap(x) => x.sa_counters(&mut sas),
                    _ => {}
                }
                ElementCounters {
                    name: name.to_string(),
                    class: e.class().to_string(),
                    rx: st.rx,
                    tx: st.tx,
                    drops,
                    counters,
                    sas,
                }
            })
            .collect()
    }

    fn publish(&self) {
        if let Some(l) = &self.link {
            let snap = self.element_counters();
            if let Ok(mut c) = l.counters.lock() {
                *c = snap;
            }
            l.core.set_queues(self.queue_counters());
        }
    }

    /// Each (port, queue) this core reads and its counters (the external
    /// ports' devices; a device not bound to queues adds none).
    pub fn queue_counters(&self) -> Vec<PortQueue> {
        let mut out = Vec::new();
        let mut qs = Vec::new();
        for (port, d) in self.runner.devices().iter().take(self.ports).enumerate() {
            qs.clear();
            d.queue_stats(&mut qs);
            out.extend(qs.iter().map(|&q| PortQueue { port, q }));
        }
        out
    }

    /// Takes a waiting graph replacement, if any, and answers it.
    fn take_swap(&mut self) {
        let Some(sw) = self.link.as_ref().and_then(|l| l.swaps.try_recv().ok()) else {
            return;
        };
        let r = self.replace(&sw.graph);
        let _ = sw.reply.send(r);
        self.publish();
    }

    /// Polls until `stop` is set (read once per round); sleeps in
    /// `poll(2)` after `idle_spins` empty rounds. An I/O error seen by a
    /// device ends the loop with that error.
    pub fn run(&mut self, cfg: LoopConfig, stop: &AtomicBool) -> Result<(), IoError> {
        self.run_until(cfg, stop, || false).map(drop)
    }

    /// [`GraphWorker::run`], also ending (with `Ok(true)`) when `until`
    /// says so: asked every [`UNTIL_ROUNDS`] busy rounds and every idle
    /// one (a command for the core, off the per-packet path).
    pub(super) fn run_until(
        &mut self,
        cfg: LoopConfig,
        stop: &AtomicBool,
        mut until: impl FnMut() -> bool,
    ) -> Result<bool, IoError> {
        let fds: Vec<_> = self
            .runner
            .devices()
            .iter()
            .filter_map(|d| d.poll_fd())
            .collect();
        let mut idle = 0u32;
        let mut rounds = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if self.link.is_some() {
                self.take_swap();
                rounds += 1;
                if rounds % PUBLISH_ROUNDS == 0 {
                    self.publish();
                }
            }
            if self.runner.poll() > 0 {
                idle = 0;
                self.core_batch(false);
                if rounds % UNTIL_ROUNDS == 0 && until() {
                    return Ok(true);
                }
                continue;
            }
            if until() {
                return Ok(true);
            }
            idle = idle.saturating_add(1);
            if idle == cfg.idle_spins.max(1) {
                self.publish();
                self.core_batch(true);
            }
            if idle >= cfg.idle_spins {
                if fds.is_empty() {
                    std::thread::sleep(Duration::from_millis(cfg.sleep_ms.max(0) as u64));
                } else {
                    io::sys::poll_many(&fds, cfg.sleep_ms)?;
                }
            }
        }
        self.publish();
        self.core_batch(true);
        match self.runner.devices().iter().find_map(|d| d.last_error()) {
            Some(e) => Err(e),
            None => Ok(false),
        }
    }

    /// Makes the fabric elements follow `mask` for membership (bit `i`:
    /// node `i` live; see `elements::FabricEncap::follow_live`). No-op
    /// without the fabric.
    pub fn follow_live(&mut self, mask: &std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let g = &mut self.runner.graph;
        for name in ["fenc", "fdec"] {
            match g.find(name).and_then(|k| g.element_mut(k)) {
                Some(AnyElement::FabricEncap(e)) => e.follow_live(mask.clone()),
                Some(AnyElement::FabricDecap(e)) => e.follow_live(mask.clone()),
                _ => {}
            }
        }
    }

    /// One poll (receive, graph, ticks, transmit); frames received.
    /// With a link, the per-core counters are stored as in [`Self::run`].
    pub fn poll(&mut self) -> usize {
        let n = self.runner.poll();
        if n > 0 {
            self.core_batch(false);
        }
        n
    }

    /// This core's devices, in port order.
    pub fn devices_mut(&mut self) -> &mut [D] {
        self.runner.devices_mut()
    }

    /// The graph itself (per-element counters).
    pub fn graph(&self) -> &Graph<AnyElement> {
        &self.runner.graph
    }

    /// This core's counters in the dataplane's terms: drops summed by
    /// reason name and element counters by counter name, over every
    /// element, whatever it is called.
    pub fn counters(&self) -> WorkerCounters {
        let g = &self.runner.graph;
        let drop = |r: &str| g.dropped(r);
        let mut c = WorkerCounters {
            rx: self.runner.stats().rx,
            sections: self.runner.stats().polls,
            no_route: drop("no_route"),
            unresolved: drop("unresolved"),
            ttl_expired: drop("ttl_expired"),
            bad_header: [
                "bad_ether",
                "bad_ip_header",
                "bad_ip_checksum",
                "bad_ip_source",
                "bad_ip6_header",
                "bad_ip6_address",
            ]
            .iter()
            .map(|r| drop(r))
            .sum(),
            not_ip: drop("no_match"),
            local: drop("discarded"),
            tx_full: drop("tx_full"),
            learn_dropped: self.shared.as_ref().map_or(0, |s| s.borrow().dropped),
            ..WorkerCounters::default()
        };
        let mut sent = 0;
        for dev in self.runner.devices() {
            let s = dev.stats();
            sent += s.tx;
            c.tx_full += s.tx_dropped;
        }
        for (_, e, st) in g.iter() {
            e.counters(&mut |k, v| match k {
                "replies" => c.arp_replies += v,
                "requests" => c.arp_requests += v,
                "control_in" => c.arp_in += v,
                "icmp_errors" => c.icmp_errors += v,
                _ => {}
            });
            match e.class() {
                "CcIngress" => e.counters(&mut |k, v| match k {
                    "offered" => c.cc.offered += v,
                    "injected" => c.cc.injected += v,
                    "signals" => c.cc.signals += v,
                    _ => {}
                }),
                "CcEgress" => {
                    c.cc.egress_dropped = g.dropped_at("cce", "queue_full").unwrap_or(0);
                    e.counters(&mut |k, v| match k {
                        "enqueued" => c.cc.egress_in += v,
                        "sent" => c.cc.egress_sent += v,
                        "control_sent" => c.cc.control_sent += v,
                        "samples" => c.cc.samples = v,
                        "queue_mean_milli" => c.cc.queue_mean_milli = v,
                        "queue_sd_milli" => c.cc.queue_sd_milli = v,
                        k => {
                            let i = k.strip_prefix("from").and_then(|n| n.parse::<usize>().ok());
                            if let Some(x) = i.and_then(|i| c.cc.from.get_mut(i)) {
                                *x += v;
                            }
                        }
                    });
                }
                _ => {}
            }
            // Every IPv6 packet passes one header check.
            if e.class() == "CheckIp6Header" {
                c.ipv6 += st.rx;
            }
        }
        let at = |e: &str, r: &str| g.dropped_at(e, r).unwrap_or(0);
        for (name, e, _) in g.iter() {
            let ic = &mut c.ipsec;
            match e.class() {
                "EspEncap" => {
                    e.counters(&mut |k, v| {
                        if k == "encrypted" {
                            ic.encrypted += v;
                        }
                    });
                    for (d, r) in ic.encap_drops.iter_mut().zip(elements::esp::ENCAP_DROPS) {
                        *d += at(name, r);
                    }
                }
                "EspDecap" => {
                    e.counters(&mut |k, v| {
                        if k == "decrypted" {
                            ic.decrypted += v;
                        }
                    });
                    for (d, r) in ic.decap_drops.iter_mut().zip(elements::esp::DECAP_DROPS) {
                        *d += at(name, r);
                    }
                }
                _ => {}
            }
        }
        let fc = &mut c.fabric;
        fc.bad_port = at("fdec", "bad_port");
        fc.bad_tag = at("fenc", "bad_tag");
        fc.unreachable = at("fenc", "unreachable");
        fc.bad_datagram = ["bad_geneve", "foreign_option", "bad_option", "not_for_us"]
            .iter()
            .map(|r| at("fdec", r))
            .sum();
        for (name, e, _) in g.iter() {
            match name {
                "fenc" => e.counters(&mut |k, v| {
                    if k == "packets" {
                        fc.packets += v;
                    }
                }),
                "fdec" => e.counters(&mut |k, v| match k {
                    "delivered" => fc.delivered += v,
                    "forwarded" => fc.transit += v,
                    _ => {}
                }),
                _ => {}
            }
        }
        // Frames sent other than ARP/ND replies and requests (echo
        // replies and ICMP errors count as forwarded).
        c.forwarded = sent.saturating_sub(c.arp_replies + c.arp_requests);
        c
    }
}
