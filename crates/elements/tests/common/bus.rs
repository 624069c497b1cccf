//! An in-memory NIC whose reception and transmission share one budget per
//! poll, modelling the correlation of seed 004 §4.3 (a port's, or a bus's,
//! transmit capability falls as its reception rate rises). Offered load is
//! infinite (the frames cycle); what the NIC does not receive is lost on
//! the wire and counted as `missed`.
#![allow(dead_code)]

use pkt::{Batch, DevStats, Device, Pool};

/// The NIC.
#[derive(Debug)]
pub struct BusNic {
    name: String,
    frames: Vec<Vec<u8>>,
    next: usize,
    /// Packet slots per poll shared by RX and TX.
    pub budget: usize,
    rx_used: usize,
    /// Offered per poll (the line rate).
    pub offered: usize,
    stats: DevStats,
}

impl BusNic {
    /// A NIC named `name` offered `offered` frames per poll.
    pub fn new(name: &str, frames: Vec<Vec<u8>>, offered: usize, budget: usize) -> Self {
        BusNic {
            name: name.to_string(),
            frames,
            next: 0,
            budget,
            rx_used: 0,
            offered,
            stats: DevStats::default(),
        }
    }
}

impl Device for BusNic {
    type Error = core::convert::Infallible;
    fn name(&self) -> &str {
        &self.name
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let want = max.min(batch.room()).min(self.offered).min(self.budget);
        let mut n = 0;
        while n < want && !self.frames.is_empty() {
            let f = &self.frames[self.next % self.frames.len()];
            let Some(p) = pool.alloc_from(f) else { break };
            if batch.push(p).is_err() {
                break;
            }
            self.next += 1;
            n += 1;
        }
        self.rx_used = n;
        self.stats.rx += n as u64;
        n
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        let room = self.budget.saturating_sub(self.rx_used);
        let n = batch.len().min(room);
        batch.drain_front(n);
        self.stats.tx += n as u64;
        n
    }
    fn flush(&mut self) {
        // End of a poll: the next poll's receptions start from zero.
        self.rx_used = 0;
    }
    fn stats(&self) -> DevStats {
        self.stats
    }
}

/// What one overload run measured.
#[derive(Copy, Clone, Debug)]
pub struct Outcome {
    pub polls: u64,
    pub offered: u64,
    pub rx: u64,
    pub tx: u64,
    pub queue_full: u64,
    pub tx_full: u64,
    pub suspended: u64,
    pub lowered: u64,
    pub secs: f64,
}

/// The overload scenario: one port offered 64 packets per poll (line
/// rate), a shared RX/TX budget of 96 per poll, every packet routed back
/// out of the same port; the ToDevice's 1024-packet ring is the queue. Receiving at full rate leaves 32
/// transmit slots per poll; `balance` adds a NICBalance element watching
/// the queue (seed 004 §4.4's single-port experiment).
pub fn overload(balance: bool, polls: u64) -> Outcome {
    use elements::Env;
    use graph::{Graph, Runner};
    let (r0, a) = (pkt::Mac([2, 0, 0, 0, 0, 1]), pkt::Mac([2, 0, 0, 0, 1, 2]));
    let frames: Vec<Vec<u8>> = (0..64u8)
        .map(|i| pkt::build::udp4(r0, a, [10, 0, 1, 2], [10, 0, 9, i], 64, 1, 2, &[0; 18]))
        .collect();
    let nb = if balance {
        "NICBalance(TX out0, RX in0, QUEUES out0, QTHRESHOLD 100, QSTABILITY 3, RTHRESHOLD 1.3 1.6, INTERVAL 8, SUSPEND 4);"
    } else {
        ""
    };
    let cfg = format!(
        "in0 :: FromDevice(eth0); out0 :: ToDevice(eth0, BURST 1024);
         rt :: Ip4Lookup(ROUTE 10.0.9.0/24 10.0.1.3 0);
         in0 -> CheckIpHeader -> rt -> DecIpTtl
             -> EtherRewrite(MAC 02:00:00:00:00:01, NEIGH 10.0.1.3 02:00:00:00:01:03)
             -> out0;
         {nb}"
    );
    let mut env = Env::new();
    let g = Graph::from_str(&cfg, "overload.click", &mut env, Pool::new(4096))
        .unwrap_or_else(|e| panic!("{e}"));
    let nic = BusNic::new("eth0", frames, 64, 96);
    let mut r = Runner::new(g, vec![nic], 64).unwrap_or_else(|e| panic!("{e}"));
    let t = std::time::Instant::now();
    for _ in 0..polls {
        r.poll();
    }
    let secs = t.elapsed().as_secs_f64();
    let bs = r.balance_stats();
    let st = r.devices()[0].stats();
    Outcome {
        polls,
        offered: polls * 64,
        rx: st.rx,
        tx: st.tx,
        queue_full: r.graph.dropped("queue_full"),
        tx_full: r.graph.dropped("tx_full"),
        suspended: bs.iter().map(|b| b.suspended).sum(),
        lowered: bs.iter().map(|b| b.lowered).sum(),
        secs,
    }
}
