//! The elements of Tessera's forwarding graph and the factory that builds
//! them from a config.
//!
//! What this crate owns: [`AnyElement`], an enum of every element kind,
//! which implements [`graph::Element`] with one `match` per batch (static
//! dispatch); [`Env`], the [`graph::Factory`] that turns `Class(args)`
//! into elements and hands program-provided FIB tables to the lookups.
//!
//! Elements (each documented with ports, config, counters and an example):
//! [`FromDevice`], [`ToDevice`], [`Classifier`], [`CheckIpHeader`],
//! [`CheckIp6Header`], [`Ip4Lookup`], [`Ip6Lookup`], [`DecIpTtl`],
//! [`DecIp6HopLimit`], [`IcmpError`], [`IcmpEcho`], [`EtherRewrite`]
//! (neighbour table with ARP and NDP), [`Queue`], [`Counter`],
//! [`Discard`], [`Tee`], [`PortFilter`], [`Scheduler`] (RoundRobinSched,
//! StrideSched, PsSched), [`NicBalance`], and the cluster fabric's
//! [`FabricEncap`] and [`FabricDecap`], and IPsec ESP tunnel mode's
//! [`EspEncap`] and [`EspDecap`] (crate `ipsec`).
//!
//! All elements work on whole Ethernet frames; `anno.l3` (set by the
//! header checks) says where the IP header starts. Drops are counted by the
//! graph per element and [`graph::DropReason`]: the graph's generic
//! reasons, or the element's own, which each module declares by name
//! (`*_DROPS`, reported through `Element::drop_names`).
//!
//! Limits: no IPv4 fragmentation or options processing (packets with
//! options are forwarded as is), no IPv6 extension-header walk, no
//! neighbour unreachability detection beyond request retries; queues and
//! schedulers release on the driver's tick (push-only graph, no Click pull
//! ports). Virtual routers and the NICBalance algorithm itself live in
//! crate `graph` (`VrScheduler`, `Runner`).
//!
//! A whole router: see `tests/router.rs` and `benches/router.rs`.

#![warn(missing_docs)]

pub mod args;
pub mod basic;
pub mod cc;
pub mod check;
pub mod classify;
pub mod esp;
pub mod fabric;
pub mod forward;
pub mod icmp;
pub mod lookup;
pub mod neigh;
pub mod sched;

use std::collections::HashMap;

use graph::{Arg, BuildError, DeviceRole, Element, Factory, Output, PortKind, Ports};
use pkt::Batch;

pub use basic::{Counter, Discard, FromDevice, PortFilter, Queue, Tee, ToDevice};
pub use cc::{source_tag, CcEgress, CcIngress, CcScheme};
pub use check::{CheckIp6Header, CheckIpHeader};
pub use classify::Classifier;
pub use esp::{EspDecap, EspEncap};
pub use fabric::{fabric_tag, FabricDecap, FabricEncap};
pub use forward::Ip4Forward;
pub use icmp::{
    icmp4_error, icmp6_error, DecIp6HopLimit, DecIpTtl, IcmpEcho, IcmpError, IcmpSrc, SrcAddrs,
};
pub use lookup::{Ip4Lookup, Ip6Lookup, NextHopTable, NhEntry, ProvidedTable, Table};
pub use neigh::{EtherRewrite, NeighShare, Resolved4};
pub use sched::{NicBalance, Sched, Scheduler};

/// Every element kind.
#[derive(Debug)]
pub enum AnyElement {
    /// See [`FromDevice`].
    FromDevice(FromDevice),
    /// See [`ToDevice`].
    ToDevice(ToDevice),
    /// See [`Classifier`].
    Classifier(Classifier),
    /// See [`CheckIpHeader`].
    CheckIpHeader(CheckIpHeader),
    /// See [`CheckIp6Header`].
    CheckIp6Header(CheckIp6Header),
    /// See [`Ip4Lookup`].
    Ip4Lookup(Ip4Lookup),
    /// See [`Ip6Lookup`].
    Ip6Lookup(Ip6Lookup),
    /// See [`Ip4Forward`].
    Ip4Forward(Ip4Forward),
    /// See [`DecIpTtl`].
    DecIpTtl(DecIpTtl),
    /// See [`DecIp6HopLimit`].
    DecIp6HopLimit(DecIp6HopLimit),
    /// See [`IcmpError`].
    IcmpError(IcmpError),
    /// See [`IcmpEcho`].
    IcmpEcho(IcmpEcho),
    /// See [`EtherRewrite`].
    EtherRewrite(EtherRewrite),
    /// See [`Queue`].
    Queue(Queue),
    /// See [`Counter`].
    Counter(Counter),
    /// See [`Discard`].
    Discard(Discard),
    /// See [`Tee`].
    Tee(Tee),
    /// See [`PortFilter`].
    PortFilter(PortFilter),
    /// See [`Scheduler`] (RoundRobinSched, StrideSched, PsSched).
    Sched(Scheduler),
    /// See [`NicBalance`].
    NicBalance(NicBalance),
    /// See [`FabricEncap`].
    FabricEncap(Box<FabricEncap>),
    /// See [`FabricDecap`].
    FabricDecap(FabricDecap),
    /// See [`CcEgress`].
    CcEgress(Box<CcEgress>),
    /// See [`CcIngress`].
    CcIngress(Box<CcIngress>),
    /// See [`EspEncap`].
    EspEncap(Box<EspEncap>),
    /// See [`EspDecap`].
    EspDecap(EspDecap),
}

const fn ports(inputs: u16, outputs: u16) -> Ports {
    Ports { inputs, outputs }
}

impl Element for AnyElement {
    fn class(&self) -> &'static str {
        match self {
            AnyElement::FromDevice(_) => "FromDevice",
            AnyElement::ToDevice(_) => "ToDevice",
            AnyElement::Classifier(_) => "Classifier",
            AnyElement::CheckIpHeader(_) => "CheckIpHeader",
            AnyElement::CheckIp6Header(_) => "CheckIp6Header",
            AnyElement::Ip4Lookup(_) => "Ip4Lookup",
            AnyElement::Ip6Lookup(_) => "Ip6Lookup",
            AnyElement::Ip4Forward(_) => "Ip4Forward",
            AnyElement::DecIpTtl(_) => "DecIpTtl",
            AnyElement::DecIp6HopLimit(_) => "DecIp6HopLimit",
            AnyElement::IcmpError(_) => "IcmpError",
            AnyElement::IcmpEcho(_) => "IcmpEcho",
            AnyElement::EtherRewrite(_) => "EtherRewrite",
            AnyElement::Queue(_) => "Queue",
            AnyElement::Counter(_) => "Counter",
            AnyElement::Discard(_) => "Discard",
            AnyElement::Tee(_) => "Tee",
            AnyElement::PortFilter(_) => "PortFilter",
            AnyElement::Sched(s) => match s.kind() {
                Sched::RoundRobin => "RoundRobinSched",
                Sched::Stride => "StrideSched",
                Sched::Share => "PsSched",
            },
            AnyElement::NicBalance(_) => "NICBalance",
            AnyElement::FabricEncap(_) => "FabricEncap",
            AnyElement::FabricDecap(_) => "FabricDecap",
            AnyElement::CcEgress(_) => "CcEgress",
            AnyElement::CcIngress(_) => "CcIngress",
            AnyElement::EspEncap(_) => "EspEncap",
            AnyElement::EspDecap(_) => "EspDecap",
        }
    }

    fn ports(&self) -> Ports {
        match self {
            AnyElement::FromDevice(e) => e.ports(),
            AnyElement::ToDevice(e) => e.ports(),
            AnyElement::Classifier(e) => ports(1, e.outputs()),
            AnyElement::Ip4Lookup(e) => ports(1, e.outputs),
            AnyElement::Ip6Lookup(e) => ports(1, e.outputs),
            AnyElement::Ip4Forward(e) => ports(1, e.outputs()),
            AnyElement::DecIpTtl(_) | AnyElement::DecIp6HopLimit(_) | AnyElement::IcmpEcho(_) => {
                ports(1, 2)
            }
            AnyElement::EtherRewrite(_) => ports(2, 1),
            AnyElement::Discard(_) => ports(1, 0),
            AnyElement::Sched(s) => ports(s.inputs(), 1),
            AnyElement::NicBalance(_) => ports(0, 0),
            AnyElement::Tee(e) => ports(1, e.n),
            AnyElement::FabricDecap(e) => ports(1, e.outputs()),
            AnyElement::CcEgress(_) => ports(1, 2),
            AnyElement::CcIngress(_) => ports(2, 1),
            AnyElement::EspEncap(_) => ports(1, 3),
            AnyElement::EspDecap(_) => ports(1, 2),
            AnyElement::CheckIpHeader(_)
            | AnyElement::CheckIp6Header(_)
            | AnyElement::IcmpError(_)
            | AnyElement::Queue(_)
            | AnyElement::Counter(_)
            | AnyElement::PortFilter(_)
            | AnyElement::FabricEncap(_) => ports(1, 1),
        }
    }

    fn port_kind(&self, output: bool, port: u16) -> PortKind {
        use PortKind::{Any, Frame, Ip4, Ip6};
        match self {
            AnyElement::FromDevice(_) | AnyElement::ToDevice(_) => Frame,
            AnyElement::CheckIpHeader(_)
            | AnyElement::Ip4Lookup(_)
            | AnyElement::Ip4Forward(_)
            | AnyElement::DecIpTtl(_) => Ip4,
            AnyElement::CheckIp6Header(_)
            | AnyElement::Ip6Lookup(_)
            | AnyElement::DecIp6HopLimit(_) => Ip6,
            // Input 1 takes ARP and ND frames.
            AnyElement::EtherRewrite(_) if !output && port == 1 => Frame,
            _ => Any,
        }
    }

    fn optional_output(&self, port: u16) -> bool {
        match self {
            // Documented: unconnected, what would go there is dropped
            // and counted (not_for_us, icmp_suppressed, becn).
            AnyElement::IcmpEcho(_) | AnyElement::DecIpTtl(_) | AnyElement::DecIp6HopLimit(_) => {
                port == 1
            }
            AnyElement::FabricDecap(e) => port == e.outputs().saturating_sub(1),
            _ => false,
        }
    }

    #[inline]
    fn process(&mut self, input: u16, batch: &mut Batch, out: &mut Output<'_>) {
        match self {
            AnyElement::FromDevice(e) => e.process(batch, out),
            AnyElement::ToDevice(e) => e.process(batch, out),
            AnyElement::Classifier(e) => e.process(batch, out),
            AnyElement::CheckIpHeader(e) => e.process(batch, out),
            AnyElement::CheckIp6Header(e) => e.process(batch, out),
            AnyElement::Ip4Lookup(e) => e.process4(batch, out),
            AnyElement::Ip6Lookup(e) => e.process6(batch, out),
            AnyElement::Ip4Forward(e) => e.process(batch, out),
            AnyElement::DecIpTtl(e) => e.process(batch, out),
            AnyElement::DecIp6HopLimit(e) => e.process(batch, out),
            AnyElement::IcmpError(e) => e.process(batch, out),
            AnyElement::IcmpEcho(e) => e.process(batch, out),
            AnyElement::EtherRewrite(e) => e.process(input, batch, out),
            AnyElement::Queue(e) => e.process(batch, out),
            AnyElement::Counter(e) => e.process(batch, out),
            AnyElement::Discard(e) => e.process(batch, out),
            AnyElement::Tee(e) => e.process(batch, out),
            AnyElement::PortFilter(e) => e.process(batch, out),
            AnyElement::Sched(e) => e.process(input, batch, out),
            AnyElement::FabricEncap(e) => e.process(batch, out),
            AnyElement::FabricDecap(e) => e.process(batch, out),
            AnyElement::CcEgress(e) => e.process(batch, out),
            AnyElement::CcIngress(e) => e.process(input, batch, out),
            AnyElement::EspEncap(e) => e.process(batch, out),
            AnyElement::EspDecap(e) => e.process(batch, out),
            AnyElement::NicBalance(_) => {
                for p in batch.drain() {
                    out.drop(p, graph::DropReason::UNCONNECTED);
                }
            }
        }
    }

    fn wants_tick(&self) -> bool {
        matches!(
            self,
            AnyElement::Queue(_)
                | AnyElement::EtherRewrite(_)
                | AnyElement::Sched(_)
                | AnyElement::FabricEncap(_)
                | AnyElement::CcEgress(_)
        )
    }

    fn tick(&mut self, out: &mut Output<'_>) {
        match self {
            AnyElement::Queue(q) => q.tick(out),
            AnyElement::EtherRewrite(e) => e.tick(out),
            AnyElement::Sched(e) => e.tick(out),
            AnyElement::FabricEncap(e) => e.tick(out),
            AnyElement::CcEgress(e) => e.tick(out),
            _ => {}
        }
    }

    fn device(&self) -> Option<DeviceRole<'_>> {
        match self {
            AnyElement::FromDevice(e) => Some(DeviceRole::From(&e.dev)),
            AnyElement::ToDevice(e) => Some(e.role()),
            _ => None,
        }
    }

    fn tx_batch(&mut self) -> Option<&mut Batch> {
        match self {
            AnyElement::ToDevice(e) => Some(&mut e.tx),
            _ => None,
        }
    }

    fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        match self {
            AnyElement::Counter(c) => {
                f("packets", c.packets);
                f("bytes", c.bytes);
            }
            AnyElement::Queue(q) => {
                f("length", q.len() as u64);
                f("highwater", q.highwater as u64);
            }
            AnyElement::EtherRewrite(e) => e.counters(f),
            AnyElement::DecIpTtl(e) => f("icmp_errors", e.errors),
            AnyElement::DecIp6HopLimit(e) => f("icmp_errors", e.errors),
            AnyElement::Sched(e) => e.counters(f),
            AnyElement::FabricEncap(e) => e.counters(f),
            AnyElement::FabricDecap(e) => e.counters(f),
            AnyElement::CcEgress(e) => e.counters(f),
            AnyElement::CcIngress(e) => e.counters(f),
            AnyElement::EspEncap(e) => e.counters(f),
            AnyElement::EspDecap(e) => e.counters(f),
            _ => {}
        }
    }

    fn drop_names(&self) -> &'static [&'static str] {
        match self {
            AnyElement::Classifier(_) => classify::CLASSIFIER_DROPS,
            AnyElement::CheckIpHeader(_) => check::CHECK4_DROPS,
            AnyElement::CheckIp6Header(_) => check::CHECK6_DROPS,
            AnyElement::Ip4Lookup(_) | AnyElement::Ip6Lookup(_) => lookup::LOOKUP_DROPS,
            AnyElement::Ip4Forward(_) => forward::FORWARD_DROPS,
            AnyElement::DecIpTtl(_)
            | AnyElement::DecIp6HopLimit(_)
            | AnyElement::IcmpError(_)
            | AnyElement::IcmpEcho(_) => icmp::ICMP_DROPS,
            AnyElement::EtherRewrite(_) => neigh::REWRITE_DROPS,
            AnyElement::Queue(_) => basic::QUEUE_DROPS,
            AnyElement::Discard(_) => basic::DISCARD_DROPS,
            AnyElement::PortFilter(_) => basic::FILTER_DROPS,
            AnyElement::Sched(_) => sched::SCHED_DROPS,
            AnyElement::FabricEncap(_) => fabric::ENCAP_DROP_NAMES,
            AnyElement::FabricDecap(_) => fabric::DECAP_DROP_NAMES,
            AnyElement::CcEgress(_) => cc::EGRESS_DROP_NAMES,
            AnyElement::CcIngress(_) => cc::INGRESS_DROP_NAMES,
            AnyElement::EspEncap(_) => esp::ENCAP_DROPS,
            AnyElement::EspDecap(_) => esp::DECAP_DROPS,
            AnyElement::FromDevice(_)
            | AnyElement::ToDevice(_)
            | AnyElement::Counter(_)
            | AnyElement::Tee(_)
            | AnyElement::NicBalance(_) => &[],
        }
    }

    fn queue_len(&self) -> Option<usize> {
        match self {
            AnyElement::Queue(q) => Some(q.len()),
            AnyElement::Sched(s) => Some(s.len()),
            AnyElement::FabricEncap(e) => Some(e.pack_waiting()),
            AnyElement::CcEgress(e) => Some(e.len()),
            AnyElement::ToDevice(t) => Some(t.tx.len()),
            _ => None,
        }
    }

    fn balance(&self) -> Option<&graph::BalanceSpec> {
        match self {
            AnyElement::NicBalance(b) => Some(&b.spec),
            _ => None,
        }
    }
}

/// The element factory, holding tables the program provides to
/// `Ip4Lookup(TABLE name)` / `Ip6Lookup(TABLE name)`. Build one per core
/// (each graph takes its tables out of it).
#[derive(Default)]
pub struct Env {
    tables4: HashMap<String, ProvidedTable<u32>>,
    tables6: HashMap<String, ProvidedTable<u128>>,
    makers4: HashMap<String, TableMaker<u32>>,
    makers6: HashMap<String, TableMaker<u128>>,
    /// The EtherRewrites built so far, by element name (for
    /// `Ip4Forward(REWRITE name)`).
    rewrites: HashMap<String, std::rc::Rc<Resolved4>>,
}

/// Makes a table for every lookup that names it (see
/// [`Env::table4_maker`]).
pub type TableMaker<A> = Box<dyn FnMut() -> Box<dyn Table<A>>>;

impl Env {
    /// An empty environment.
    pub fn new() -> Self {
        Self::default()
    }
    /// Provides an IPv4 table under `name`.
    pub fn add_table4(&mut self, name: &str, table: Box<dyn Table<u32>>, nexthops: NextHopTable) {
        self.tables4
            .insert(name.to_string(), ProvidedTable { table, nexthops });
    }
    /// Provides IPv4 tables under `name` to any number of lookups: each
    /// one that names it gets a table from `make` (and an empty next-hop
    /// table), e.g. its own handle on a published FIB. A table given by
    /// [`Env::add_table4`] under the same name goes first.
    pub fn table4_maker(&mut self, name: &str, make: TableMaker<u32>) {
        self.makers4.insert(name.to_string(), make);
    }
    /// [`Env::table4_maker`] for IPv6.
    pub fn table6_maker(&mut self, name: &str, make: TableMaker<u128>) {
        self.makers6.insert(name.to_string(), make);
    }
    pub(crate) fn take4(&mut self, name: &str) -> Option<ProvidedTable<u32>> {
        self.tables4.remove(name).or_else(|| {
            self.makers4.get_mut(name).map(|m| ProvidedTable {
                table: m(),
                nexthops: NextHopTable::new(),
            })
        })
    }
    pub(crate) fn take6(&mut self, name: &str) -> Option<ProvidedTable<u128>> {
        self.tables6.remove(name).or_else(|| {
            self.makers6.get_mut(name).map(|m| ProvidedTable {
                table: m(),
                nexthops: NextHopTable::new(),
            })
        })
    }
    /// The resolved neighbours of the EtherRewrite named `name`, declared
    /// earlier in the graph being built.
    pub(crate) fn rewrite(&self, name: &str) -> Option<std::rc::Rc<Resolved4>> {
        self.rewrites.get(name).cloned()
    }
    /// Provides an IPv6 table under `name`.
    pub fn add_table6(&mut self, name: &str, table: Box<dyn Table<u128>>, nexthops: NextHopTable) {
        self.tables6
            .insert(name.to_string(), ProvidedTable { table, nexthops });
    }
}

fn no_args(args: &[Arg]) -> Result<(), BuildError> {
    match args.first() {
        Some(_) => Err(BuildError::arg(0, "this element takes no arguments")),
        None => Ok(()),
    }
}

impl Factory for Env {
    type Elem = AnyElement;
    fn build(&mut self, name: &str, class: &str, args: &[Arg]) -> Result<AnyElement, BuildError> {
        Ok(match class {
            "FromDevice" => AnyElement::FromDevice(FromDevice::new(args)?),
            "ToDevice" => AnyElement::ToDevice(ToDevice::new(args)?),
            "Classifier" => AnyElement::Classifier(Classifier::new(args)?),
            "CheckIpHeader" => AnyElement::CheckIpHeader(CheckIpHeader::new(args)?),
            "CheckIp6Header" => {
                no_args(args)?;
                AnyElement::CheckIp6Header(CheckIp6Header)
            }
            "Ip4Lookup" => AnyElement::Ip4Lookup(Ip4Lookup::new4(args, self)?),
            "Ip6Lookup" => AnyElement::Ip6Lookup(Ip6Lookup::new6(args, self)?),
            "Ip4Forward" => AnyElement::Ip4Forward(Ip4Forward::new(args, self)?),
            "DecIpTtl" => AnyElement::DecIpTtl(DecIpTtl::new(args)?),
            "DecIp6HopLimit" => AnyElement::DecIp6HopLimit(DecIp6HopLimit::new(args)?),
            "IcmpError" => AnyElement::IcmpError(IcmpError::new(args)?),
            "IcmpEcho" => AnyElement::IcmpEcho(IcmpEcho::new(args)?),
            "EtherRewrite" => {
                let e = EtherRewrite::new(args)?;
                self.rewrites.insert(name.to_string(), e.resolved());
                AnyElement::EtherRewrite(e)
            }
            "Queue" => AnyElement::Queue(Queue::new(args)?),
            "Counter" => {
                no_args(args)?;
                AnyElement::Counter(Counter::default())
            }
            "Discard" => {
                no_args(args)?;
                AnyElement::Discard(Discard)
            }
            "Tee" => AnyElement::Tee(Tee::new(args)?),
            "PortFilter" => AnyElement::PortFilter(PortFilter::new(args)?),
            "RoundRobinSched" => AnyElement::Sched(Scheduler::new(Sched::RoundRobin, args)?),
            "StrideSched" => AnyElement::Sched(Scheduler::new(Sched::Stride, args)?),
            "PsSched" => AnyElement::Sched(Scheduler::new(Sched::Share, args)?),
            "NICBalance" => AnyElement::NicBalance(NicBalance::new(args)?),
            "FabricEncap" => AnyElement::FabricEncap(Box::new(FabricEncap::new(args)?)),
            "FabricDecap" => AnyElement::FabricDecap(FabricDecap::new(args)?),
            "CcEgress" => AnyElement::CcEgress(Box::new(CcEgress::new(args)?)),
            "CcIngress" => AnyElement::CcIngress(Box::new(CcIngress::new(args)?)),
            "EspEncap" => AnyElement::EspEncap(Box::new(EspEncap::new(args)?)),
            "EspDecap" => AnyElement::EspDecap(EspDecap::new(args)?),
            other => return Err(BuildError::elem(format!("unknown element class '{other}'"))),
        })
    }
}
