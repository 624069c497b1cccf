//! What one generator run reports (JSON, one object on stdout), and the
//! sum of several (the bench adds up the hosts of a run).

use serde_json::{json, Value};

use crate::account::{pct, Histogram, RxStats};

/// One generator process: what it sent and what it received.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub iface: String,
    pub sender_id: u16,
    pub flows: u32,
    pub size: usize,
    pub rate_pps: u64,
    /// Seconds from the first to the last send.
    pub send_s: f64,
    pub sent: u64,
    /// Sends the TX ring refused (retried later, not lost).
    pub tx_ring_full: u64,
    /// Times the pacer fell more than 10 ms behind (CPU starvation).
    pub pacer_late: u64,
    pub received: u64,
    pub reordered: u64,
    pub duplicates: u64,
    pub seq_gaps: u64,
    pub bad_checksum: u64,
    pub foreign: u64,
    pub flows_seen: u64,
    pub latency: Histogram,
    pub bin_ms: f64,
    pub bins: Vec<u64>,
}

impl Report {
    /// Fills the receive side from `rx`.
    pub fn set_rx(&mut self, rx: &RxStats) {
        self.received = rx.received;
        self.reordered = rx.reordered;
        self.duplicates = rx.duplicates;
        self.seq_gaps = rx.seq_gaps();
        self.bad_checksum = rx.bad_checksum;
        self.foreign = rx.foreign;
        self.flows_seen = rx.flows.len() as u64;
        self.latency = rx.latency.clone();
        self.bin_ms = rx.bin_ns as f64 / 1e6;
        self.bins = rx.bins.clone();
    }

    pub fn to_json(&self) -> Value {
        let h = &self.latency;
        json!({
            "iface": self.iface,
            "sender_id": self.sender_id,
            "flows": self.flows,
            "size": self.size,
            "rate_pps": self.rate_pps,
            "send_s": self.send_s,
            "sent": self.sent,
            "tx_ring_full": self.tx_ring_full,
            "pacer_late": self.pacer_late,
            "received": self.received,
            "reordered": self.reordered,
            "duplicates": self.duplicates,
            "seq_gaps": self.seq_gaps,
            "bad_checksum": self.bad_checksum,
            "foreign": self.foreign,
            "flows_seen": self.flows_seen,
            "latency_ns": {
                "count": h.count,
                "sum": h.sum.to_string(),
                "min": if h.count == 0 { 0 } else { h.min },
                "max": h.max,
                "p50": h.quantile(0.5),
                "p99": h.quantile(0.99),
                "buckets": h.nonzero(),
            },
            "bin_ms": self.bin_ms,
            "bins": self.bins,
        })
    }

    /// Reads what [`Report::to_json`] wrote; missing fields are 0.
    pub fn from_json(v: &Value) -> Report {
        let u = |k: &str| v[k].as_u64().unwrap_or(0);
        let l = &v["latency_ns"];
        let mut latency = Histogram::default();
        for b in l["buckets"].as_array().into_iter().flatten() {
            if let (Some(i), Some(c)) = (b[0].as_u64(), b[1].as_u64()) {
                latency.add_bucket(i as usize, c);
            }
        }
        latency.sum = l["sum"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
        if latency.count > 0 {
            latency.min = l["min"].as_u64().unwrap_or(0);
            latency.max = l["max"].as_u64().unwrap_or(0);
        }
        Report {
            iface: v["iface"].as_str().unwrap_or("").to_string(),
            sender_id: u("sender_id") as u16,
            flows: u("flows") as u32,
            size: u("size") as usize,
            rate_pps: u("rate_pps"),
            send_s: v["send_s"].as_f64().unwrap_or(0.0),
            sent: u("sent"),
            tx_ring_full: u("tx_ring_full"),
            pacer_late: u("pacer_late"),
            received: u("received"),
            reordered: u("reordered"),
            duplicates: u("duplicates"),
            seq_gaps: u("seq_gaps"),
            bad_checksum: u("bad_checksum"),
            foreign: u("foreign"),
            flows_seen: u("flows_seen"),
            latency,
            bin_ms: v["bin_ms"].as_f64().unwrap_or(0.0),
            bins: v["bins"]
                .as_array()
                .map(|a| a.iter().map(|x| x.as_u64().unwrap_or(0)).collect())
                .unwrap_or_default(),
        }
    }

    /// Adds `o` (another host of the same run): counts add up, latency
    /// histograms and time bins merge, the send time is the longest.
    pub fn add(&mut self, o: &Report) {
        self.flows += o.flows;
        self.rate_pps += o.rate_pps;
        self.send_s = self.send_s.max(o.send_s);
        self.sent += o.sent;
        self.tx_ring_full += o.tx_ring_full;
        self.pacer_late += o.pacer_late;
        self.received += o.received;
        self.reordered += o.reordered;
        self.duplicates += o.duplicates;
        self.seq_gaps += o.seq_gaps;
        self.bad_checksum += o.bad_checksum;
        self.foreign += o.foreign;
        self.flows_seen += o.flows_seen;
        self.latency.merge(&o.latency);
        if self.bin_ms == 0.0 {
            self.bin_ms = o.bin_ms;
        }
        if self.bins.len() < o.bins.len() {
            self.bins.resize(o.bins.len(), 0);
        }
        for (a, b) in self.bins.iter_mut().zip(&o.bins) {
            *a += b;
        }
        if self.size == 0 {
            self.size = o.size;
        }
    }

    /// Packets sent and not received, in % of sent.
    pub fn loss_pct(&self) -> f64 {
        pct(self.sent.saturating_sub(self.received), self.sent)
    }

    pub fn reorder_pct(&self) -> f64 {
        pct(self.reordered, self.received)
    }

    /// Received packets per second of sending.
    pub fn rx_pps(&self) -> f64 {
        if self.send_s > 0.0 {
            self.received as f64 / self.send_s
        } else {
            0.0
        }
    }

    pub fn tx_pps(&self) -> f64 {
        if self.send_s > 0.0 {
            self.sent as f64 / self.send_s
        } else {
            0.0
        }
    }
}

impl Histogram {
    /// (bucket, count) of every non-empty bucket.
    pub fn nonzero(&self) -> Vec<(usize, u64)> {
        self.buckets()
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i, *c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::Payload;

    #[test]
    fn json_round_trip_and_sum() {
        let mut rx = RxStats::new(0, 10_000_000);
        for (seq, t) in [(0, 1_000_000u64), (2, 2_000_000), (1, 30_000_000)] {
            rx.on_packet(
                t,
                &Payload {
                    flow: 3,
                    seq,
                    ts_ns: t - 40_000,
                },
            );
        }
        let mut r = Report {
            iface: "e0".into(),
            sent: 5,
            send_s: 1.0,
            ..Default::default()
        };
        r.set_rx(&rx);
        let back = Report::from_json(&r.to_json());
        assert_eq!(back.sent, 5);
        assert_eq!(back.received, 3);
        assert_eq!(back.reordered, 1);
        assert_eq!(back.latency, r.latency);
        assert_eq!(back.bins, vec![2, 0, 0, 1]);
        let mut sum = back.clone();
        sum.add(&back);
        assert_eq!(sum.sent, 10);
        assert_eq!(sum.received, 6);
        assert_eq!(sum.latency.count, 6);
        assert_eq!(sum.bins, vec![4, 0, 0, 2]);
        assert!((sum.loss_pct() - 40.0).abs() < 1e-9);
        assert!((sum.reorder_pct() - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(Report::from_json(&serde_json::json!({})).sent, 0);
    }
}
