//! Send orders: which peer's next message goes out next, for the
//! single-threaded sender variants (seed 000 §4.1.2) and the traffic mixes
//! of its Table 4.3.
//!
//! A schedule is a list of [`Step`]s; every message of every feed appears
//! exactly once, and each peer's messages keep their own order (a peer's
//! UPDATEs must not be reordered: a later one may withdraw an earlier
//! one). Schedules are pure functions of the workload, so their ordering
//! properties are unit-tested here.

use crate::workload::{Step, Workload};
use std::str::FromStr;

/// The traffic mixes of seed 000 Table 4.3: how many peers send at once.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mix {
    /// All peers send, one message at a time each (perfect balance).
    Best,
    /// All peers, in the input's own order ("Mix1", realistic): the update
    /// trace's order; for inputs without one, a seeded random interleave.
    Normal,
    /// 4 peers send at a time.
    Mix2,
    /// 2 peers send at a time.
    Mix3,
    /// 1 peer sends at a time (all of it, then the next).
    Worst,
}

impl Mix {
    /// How many peers are active at once (`None`: all).
    pub fn window(self) -> Option<usize> {
        match self {
            Mix::Best | Mix::Normal => None,
            Mix::Mix2 => Some(4),
            Mix::Mix3 => Some(2),
            Mix::Worst => Some(1),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mix::Best => "best",
            Mix::Normal => "normal",
            Mix::Mix2 => "mix2",
            Mix::Mix3 => "mix3",
            Mix::Worst => "worst",
        }
    }

    pub const ALL: [Mix; 5] = [Mix::Best, Mix::Normal, Mix::Mix2, Mix::Mix3, Mix::Worst];
}

impl FromStr for Mix {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "best" => Ok(Mix::Best),
            "normal" | "mix1" => Ok(Mix::Normal),
            "mix2" => Ok(Mix::Mix2),
            "mix3" => Ok(Mix::Mix3),
            "worst" => Ok(Mix::Worst),
            _ => Err("expected best, normal, mix2, mix3 or worst"),
        }
    }
}

/// A single-threaded send order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// The input's own order ([`Workload::trace`]), or a seeded random
    /// interleave when it has none.
    Trace { seed: u64 },
    /// `batch` messages of each active peer in turn; at most `window`
    /// peers active at once (sliding: when one runs dry the next peer by
    /// index joins).
    RoundRobin { batch: u32, window: Option<usize> },
}

/// The send order for `w`.
pub fn schedule(w: &Workload, order: Order) -> Vec<Step> {
    match order {
        Order::Trace { .. } if !w.trace.is_empty() => w.trace.clone(),
        Order::Trace { seed } => random_interleave(w, seed),
        Order::RoundRobin { batch, window } => round_robin(w, batch.max(1), window),
    }
}

fn round_robin(w: &Workload, batch: u32, window: Option<usize>) -> Vec<Step> {
    let n = w.feeds.len();
    let window = window.unwrap_or(n).max(1);
    let mut next_msg = vec![0u32; n];
    let total: usize = w.feeds.iter().map(|f| f.msgs.len()).sum();
    let mut out = Vec::with_capacity(total);
    // Active peers in join order; `joined` is the next peer to join.
    let mut active: Vec<usize> = Vec::with_capacity(window);
    let mut joined = 0usize;
    let len = |i: usize| w.feeds.get(i).map_or(0, |f| f.msgs.len()) as u32;
    loop {
        while active.len() < window && joined < n {
            if len(joined) > 0 {
                active.push(joined);
            }
            joined += 1;
        }
        if active.is_empty() {
            break;
        }
        let mut k = 0;
        while k < active.len() {
            let p = active[k];
            let (Some(m), l) = (next_msg.get_mut(p), len(p)) else {
                break;
            };
            let end = (*m + batch).min(l);
            out.extend((*m..end).map(|msg| Step {
                peer: p as u32,
                msg,
            }));
            *m = end;
            if end >= l {
                active.remove(k);
            } else {
                k += 1;
            }
        }
    }
    out
}

/// Merges the peers' streams at random, each step choosing a peer with
/// probability proportional to what it has left, so all peers finish at
/// about the same time, as in a trace where they all send throughout.
fn random_interleave(w: &Workload, seed: u64) -> Vec<Step> {
    let mut left: Vec<u64> = w.feeds.iter().map(|f| f.msgs.len() as u64).collect();
    let mut next = vec![0u32; left.len()];
    let mut total: u64 = left.iter().sum();
    let mut out = Vec::with_capacity(total as usize);
    let mut rng = sim::Rng::new(seed);
    while total > 0 {
        let mut r = rng.below(total);
        let mut p = 0;
        for (i, &l) in left.iter().enumerate() {
            if r < l {
                p = i;
                break;
            }
            r -= l;
        }
        if let (Some(l), Some(m)) = (left.get_mut(p), next.get_mut(p)) {
            out.push(Step {
                peer: p as u32,
                msg: *m,
            });
            *m += 1;
            *l -= 1;
        }
        total -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Feed;

    fn workload(lens: &[usize]) -> Workload {
        let feeds = lens
            .iter()
            .map(|&n| {
                let mut f = Feed::default();
                for _ in 0..n {
                    f.push_msg(&[0; 23], 1, 0, None);
                }
                f
            })
            .collect();
        Workload {
            feeds,
            ..Workload::default()
        }
    }

    /// Every message once, and each peer's messages in order.
    fn check_complete(w: &Workload, s: &[Step]) {
        let mut next = vec![0u32; w.feeds.len()];
        for st in s {
            assert_eq!(
                next[st.peer as usize], st.msg,
                "peer {} out of order",
                st.peer
            );
            next[st.peer as usize] += 1;
        }
        for (i, f) in w.feeds.iter().enumerate() {
            assert_eq!(next[i] as usize, f.msgs.len(), "peer {i} incomplete");
        }
    }

    /// The largest number of distinct peers in any run of `k` steps.
    fn peers_in_windows(s: &[Step], k: usize) -> usize {
        s.windows(k)
            .map(|w| {
                let mut p: Vec<u32> = w.iter().map(|x| x.peer).collect();
                p.sort_unstable();
                p.dedup();
                p.len()
            })
            .max()
            .unwrap_or(0)
    }

    /// The most peers "in flight" (first message sent, last not yet) at
    /// any step.
    fn max_active(w: &Workload, s: &[Step]) -> usize {
        let n = w.feeds.len();
        let (mut first, mut last) = (vec![usize::MAX; n], vec![0usize; n]);
        for (i, st) in s.iter().enumerate() {
            let p = st.peer as usize;
            first[p] = first[p].min(i);
            last[p] = i;
        }
        (0..s.len())
            .map(|i| (0..n).filter(|&p| first[p] <= i && i <= last[p]).count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn best_alternates_every_peer_one_message_at_a_time() {
        let w = workload(&[5, 5, 5, 5, 5, 5]);
        let s = schedule(
            &w,
            Order::RoundRobin {
                batch: 1,
                window: Mix::Best.window(),
            },
        );
        check_complete(&w, &s);
        // Every run of 6 steps has all 6 peers.
        assert!(s.windows(6).step_by(6).all(|x| {
            let mut p: Vec<u32> = x.iter().map(|y| y.peer).collect();
            p.sort_unstable();
            p == vec![0, 1, 2, 3, 4, 5]
        }));
    }

    #[test]
    fn mixes_bound_the_number_of_peers_sending_at_once() {
        let w = workload(&[7, 3, 9, 1, 4, 6, 2, 8]);
        for mix in [Mix::Mix2, Mix::Mix3, Mix::Worst] {
            let k = mix.window().unwrap();
            let s = schedule(
                &w,
                Order::RoundRobin {
                    batch: 1,
                    window: Some(k),
                },
            );
            check_complete(&w, &s);
            // At every step at most k peers have started and not finished ...
            assert!(max_active(&w, &s) <= k, "{mix:?}");
            assert_eq!(max_active(&w, &s), k, "{mix:?}: the window is used");
            // ... and while the first k are busy, each run of k steps has k.
            assert_eq!(peers_in_windows(&s[..k], k), k, "{mix:?}");
        }
        // Worst: each peer's messages are contiguous.
        let s = schedule(
            &w,
            Order::RoundRobin {
                batch: 1,
                window: Some(1),
            },
        );
        let mut order: Vec<u32> = s.iter().map(|x| x.peer).collect();
        order.dedup();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn round_robin_sends_batches_and_skips_empty_peers() {
        let w = workload(&[5, 0, 3]);
        let s = schedule(
            &w,
            Order::RoundRobin {
                batch: 2,
                window: None,
            },
        );
        check_complete(&w, &s);
        let peers: Vec<u32> = s.iter().map(|x| x.peer).collect();
        assert_eq!(peers, vec![0, 0, 2, 2, 0, 0, 2, 0]);
    }

    #[test]
    fn trace_order_is_the_trace_or_a_seeded_interleave() {
        let mut w = workload(&[3, 2]);
        let r1 = schedule(&w, Order::Trace { seed: 1 });
        check_complete(&w, &r1);
        assert_eq!(r1, schedule(&w, Order::Trace { seed: 1 }), "deterministic");
        let big = workload(&[200, 200, 200]);
        let a = schedule(&big, Order::Trace { seed: 1 });
        let b = schedule(&big, Order::Trace { seed: 2 });
        check_complete(&big, &a);
        assert_ne!(a, b, "seed matters");
        // Interleaved: all three peers appear in the first 30 steps.
        assert_eq!(peers_in_windows(&a[..30], 30), 3);
        w.trace = vec![
            Step { peer: 1, msg: 0 },
            Step { peer: 0, msg: 0 },
            Step { peer: 1, msg: 1 },
            Step { peer: 0, msg: 1 },
            Step { peer: 0, msg: 2 },
        ];
        assert_eq!(schedule(&w, Order::Trace { seed: 9 }), w.trace);
        assert_eq!("mix1".parse(), Ok(Mix::Normal));
        assert!("mix4".parse::<Mix>().is_err());
    }
}
