//! The simulated cluster: what a run is configured with.

use cc::{EgressScheme, IngressScheme};

/// One node of the cluster: an ingress side (its sources' queues, pulled
/// into the fabric) and an egress side (the HCA receive ring, the CPU,
/// the output queue and the external port).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeCfg {
    /// External port capacity, packets/s.
    pub port_pps: f64,
    /// Egress output queue capacity, packets (Click queue; overflow is an
    /// egress drop).
    pub out_queue: u32,
    /// Posted receive buffers of the fabric interface, packets (overflow is
    /// an invisible HCA drop). Used only with a CPU model.
    pub ring: u32,
    /// The egress CPU, or `None` for a port-only egress (the ns-3 model of
    /// ch. 6-7: every fabric arrival reaches the output queue).
    pub cpu: Option<Cpu>,
    /// Ingress pull rounds per second; each round may inject one packet of
    /// each queue (scheme A's weights are fractions of these rounds; the
    /// other schemes and no control send up to this rate per queue).
    pub round_pps: f64,
    /// Ingress queue capacity per source, packets.
    pub ingress_queue: u32,
    /// NIC transmit descriptor ring behind the output queue, packets
    /// (port-only egress; 0: none). The queue monitor does not see it.
    pub tx_ring: u32,
}

impl NodeCfg {
    /// A port-only node (ch. 6-7) with capacity `port_pps`, a 1000-packet
    /// output queue and ingress queue, and 2 Mpps of ingress rounds.
    pub fn port(port_pps: f64) -> NodeCfg {
        NodeCfg {
            port_pps,
            out_queue: 1000,
            ring: 1024,
            cpu: None,
            round_pps: 2e6,
            ingress_queue: 1000,
            tx_ring: 0,
        }
    }
}

/// The egress CPU of ch. 5: Click rounds in which the fabric-RX element
/// handles up to `rx_quota` packets and the external-TX element up to
/// `tx_quota` (§4.0's invariant: RX gets the larger quota), each packet
/// costing CPU time. Receiving packets that are then dropped at the
/// output queue still costs `rx_cost_ns`: that is the collapse.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cpu {
    /// CPU time to receive and unpack one packet, ns.
    pub rx_cost_ns: f64,
    /// CPU time to transmit one packet, ns.
    pub tx_cost_ns: f64,
    /// RX quota per round, packets.
    pub rx_quota: u32,
    /// TX quota per round, packets.
    pub tx_quota: u32,
}

/// How a source's packets are spread in time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Exactly `rate_pps` (fractional packets carried over).
    Constant,
    /// Poisson arrivals of mean `rate_pps`.
    Poisson,
    /// On/off: Poisson at `rate_pps` while on; on and off periods are
    /// exponential with these means, ns.
    OnOff {
        /// Mean on period, ns.
        on_ns: u64,
        /// Mean off period, ns.
        off_ns: u64,
    },
}

/// A traffic source: an external port of node `node` sending 64 B packets
/// to the subnet behind node `dest`. Each source has its own ingress queue
/// and its own ingress controller (one per (ingress, egress queue) pair).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SourceCfg {
    /// Ingress node.
    pub node: usize,
    /// Egress node.
    pub dest: usize,
    /// Offered rate, packets/s (while on).
    pub rate_pps: f64,
    /// Time pattern.
    pub pattern: Pattern,
    /// Time at which the source starts, ns.
    pub start_ns: u64,
}

/// Which congestion control runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    /// None: the ingress sends as fast as its rounds allow.
    None,
    /// One egress scheme per output queue, one ingress scheme per source.
    Scheme {
        /// Egress half.
        egress: EgressScheme,
        /// Ingress half.
        ingress: IngressScheme,
    },
}

/// A whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// RNG seed (Poisson arrivals, on/off periods, arrival order).
    pub seed: u64,
    /// Service tick, ns: the granularity at which sources emit, the fabric
    /// carries and the egress serves (10 µs by default).
    pub tick_ns: u64,
    /// Simulated time, ns.
    pub duration_ns: u64,
    /// Statistics start here (rates and queue statistics of the summary).
    pub warmup_ns: u64,
    /// Control interval, ns.
    pub interval_ns: u64,
    /// One-way fabric delay, ns (data and signals).
    pub fabric_delay_ns: u64,
    /// Extra delay of signals (BECNs, prices) beyond the fabric delay, ns:
    /// the time from the egress's decision to the ingress acting on it
    /// (0: at once). One control interval turns the loop into exactly the
    /// Jacobi iteration of Eq 6.7 (docs/cc.md).
    pub signal_lag_ns: u64,
    /// Time-series sample period, ns (0: no time series).
    pub sample_ns: u64,
    /// Token-bucket depth of rate-controlled ingress queues, packets.
    pub bucket_burst: f64,
    /// The nodes.
    pub nodes: Vec<NodeCfg>,
    /// The sources.
    pub sources: Vec<SourceCfg>,
    /// The control.
    pub control: Control,
}

impl Config {
    /// Defaults: 10 µs tick, 1 ms interval, 2 µs fabric, 1 ms samples,
    /// 32-packet buckets, seed 1, no nodes yet.
    pub fn new(duration_ns: u64, control: Control) -> Config {
        Config {
            seed: 1,
            tick_ns: 10_000,
            duration_ns,
            warmup_ns: duration_ns / 4,
            interval_ns: cc::params::INTERVAL_NS,
            fabric_delay_ns: 2_000,
            signal_lag_ns: 0,
            sample_ns: 1_000_000,
            bucket_burst: 32.0,
            nodes: Vec::new(),
            sources: Vec::new(),
            control,
        }
    }

    /// Check the configuration; the simulator runs only valid ones.
    pub fn validate(&self) -> Result<(), String> {
        if self.tick_ns == 0 || self.interval_ns == 0 {
            return Err("tick and interval must be positive".into());
        }
        if !self.interval_ns.is_multiple_of(self.tick_ns) {
            return Err("the control interval must be a multiple of the tick".into());
        }
        if !self.sample_ns.is_multiple_of(self.tick_ns) {
            return Err("the sample period must be a multiple of the tick".into());
        }
        if self.nodes.is_empty() || self.nodes.len() > u32::MAX as usize {
            return Err("need at least one node".into());
        }
        // Packets per tick are counted in u32 runs: keep every rate below
        // 1e9 packets per tick.
        let tick_s = self.tick_ns as f64 * 1e-9;
        let ok = |v: f64| v.is_finite() && v >= 0.0 && v * tick_s < 1e9;
        for (i, n) in self.nodes.iter().enumerate() {
            if !ok(n.port_pps) || !ok(n.round_pps) {
                return Err(format!(
                    "node {i}: rates must be finite, >= 0 and < 1e9 per tick"
                ));
            }
            if let Some(c) = n.cpu {
                if !ok(c.rx_cost_ns) || !ok(c.tx_cost_ns) || c.rx_quota == 0 || c.tx_quota == 0 {
                    return Err(format!("node {i}: bad CPU model"));
                }
            }
        }
        for (i, s) in self.sources.iter().enumerate() {
            if s.node >= self.nodes.len() || s.dest >= self.nodes.len() {
                return Err(format!("source {i}: node out of range"));
            }
            if !ok(s.rate_pps) {
                return Err(format!(
                    "source {i}: rate must be finite, >= 0 and < 1e9 per tick"
                ));
            }
        }
        Ok(())
    }
}
