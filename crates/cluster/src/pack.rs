//! IBPack / IBUnpack (seed 004 §2.3.3, spec §2.4): frames for the same
//! next fabric hop and egress node wait in their own queue; when the
//! fabric transmitter asks for a packet, [`Packer::pull`] takes the next
//! non-empty queue in round-robin order and packs as many of its frames
//! as the packing degree and the fabric MTU allow. Nothing waits for a
//! timer: at light load a queue holds one frame and it leaves alone, so
//! packing adds no latency (Ye, Fig 2.10); under load, frames pile up
//! between pulls and leave together. Degree 1 turns packing off.
//!
//! Unpacking is [`crate::fabric::decode`] and [`crate::fabric::Data::frames`].

use std::collections::VecDeque;
use std::ops::Range;

use crate::fabric::{Meta, PacketWriter, FLAG_TRANSIT, MAX_FRAMES};

/// A frame waiting to be packed.
#[derive(Debug)]
struct Waiting<F> {
    port: u8,
    queue: u8,
    frame: F,
}

/// One packet handed to the fabric transmitter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pulled {
    /// The node to send it to (the egress, or the VLB intermediate).
    pub next_hop: u16,
    /// The node that transmits the frames.
    pub egress: u16,
    /// The datagram's bytes in the caller's buffer.
    pub range: Range<usize>,
    /// Frames in it.
    pub frames: usize,
}

/// Per-packer counters (plain integers: one packer per core).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PackStats {
    /// Frames accepted into a queue.
    pub queued: u64,
    /// Frames refused because their queue was full.
    pub dropped_full: u64,
    /// Frames dropped because they cannot fit any fabric packet.
    pub dropped_oversize: u64,
    /// Packets pulled.
    pub packets: u64,
    /// Frames packed into them.
    pub frames: u64,
}

/// The packing queues of one core.
#[derive(Debug)]
pub struct Packer<F> {
    /// Indexed by `next_hop * nodes + egress`.
    queues: Vec<VecDeque<Waiting<F>>>,
    /// Keys of non-empty queues, in round-robin order.
    active: VecDeque<u32>,
    nodes: u16,
    source: u16,
    vni: u32,
    degree: usize,
    cap: usize,
    limit: usize,
    /// Flags every data packet carries (e.g. [`crate::fabric::FLAG_NEIGHBOUR`]).
    flags: u8,
    stats: PackStats,
}

impl<F: AsRef<[u8]>> Packer<F> {
    /// Queues for node ids `0..nodes`, built at `source`. `degree` is the
    /// most frames per packet (1 = no packing; at most
    /// [`MAX_FRAMES`]), `cap` the largest datagram (fabric MTU less IP and
    /// UDP headers), `limit` the frames each queue holds before it drops.
    pub fn new(nodes: u16, source: u16, vni: u32, degree: usize, cap: usize, limit: usize) -> Self {
        let n = usize::from(nodes) * usize::from(nodes);
        Packer {
            queues: (0..n).map(|_| VecDeque::new()).collect(),
            active: VecDeque::new(),
            nodes,
            source,
            vni,
            degree: degree.clamp(1, MAX_FRAMES),
            cap,
            limit: limit.max(1),
            flags: 0,
            stats: PackStats::default(),
        }
    }

    /// Sets flags every data packet carries besides the transit flag
    /// (e.g. [`crate::fabric::FLAG_NEIGHBOUR`] when every frame pushed
    /// ends with its neighbour).
    pub fn set_flags(&mut self, flags: u8) {
        self.flags = flags & !FLAG_TRANSIT;
    }

    /// Queues a frame for `egress` through `next_hop` (equal for a direct
    /// path). The frame comes back when its queue is full or a node id is
    /// out of range; the caller recycles it and counts the drop.
    pub fn push(
        &mut self,
        next_hop: u16,
        egress: u16,
        port: u8,
        queue: u8,
        frame: F,
    ) -> Result<(), F> {
        if next_hop >= self.nodes || egress >= self.nodes {
            return Err(frame);
        }
        let key = u32::from(next_hop) * u32::from(self.nodes) + u32::from(egress);
        let Some(q) = self.queues.get_mut(key as usize) else {
            return Err(frame);
        };
        if q.len() >= self.limit {
            self.stats.dropped_full += 1;
            return Err(frame);
        }
        if q.is_empty() {
            self.active.push_back(key);
        }
        q.push_back(Waiting { port, queue, frame });
        self.stats.queued += 1;
        Ok(())
    }

    /// Whether any frame waits.
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }

    /// Frames waiting in all queues.
    pub fn waiting(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Builds the next fabric packet into `buf` (which needs
    /// [`crate::fabric::HDR_MAX`] bytes of headroom plus the payload):
    /// the next non-empty queue, round robin, as many frames as fit. Each
    /// packed (or oversized, dropped) frame goes to `recycle`. `None` when
    /// nothing waits.
    pub fn pull(&mut self, buf: &mut [u8], mut recycle: impl FnMut(F)) -> Option<Pulled> {
        while let Some(key) = self.active.pop_front() {
            let Some(q) = self.queues.get_mut(key as usize) else {
                continue;
            };
            let n = u32::from(self.nodes.max(1));
            let (next_hop, egress) = ((key / n) as u16, (key % n) as u16);
            let mut w = PacketWriter::new(buf, self.degree, self.cap);
            while let Some(f) = q.front() {
                if !w.fits(f.frame.as_ref().len()) {
                    if w.frames() == 0 {
                        // Too big for any packet: drop rather than block the queue.
                        if let Some(f) = q.pop_front() {
                            self.stats.dropped_oversize += 1;
                            recycle(f.frame);
                        }
                        continue;
                    }
                    break;
                }
                let Some(f) = q.pop_front() else { break };
                w.push(f.port, f.queue, f.frame.as_ref());
                recycle(f.frame);
            }
            if !q.is_empty() {
                self.active.push_back(key);
            }
            let frames = w.frames();
            let meta = Meta {
                egress,
                source: self.source,
                flags: self.flags | if next_hop == egress { 0 } else { FLAG_TRANSIT },
            };
            if let Some(range) = w.finish(self.vni, meta) {
                self.stats.packets += 1;
                self.stats.frames += frames as u64;
                return Some(Pulled {
                    next_hop,
                    egress,
                    range,
                    frames,
                });
            }
        }
        None
    }

    /// The counters.
    pub fn stats(&self) -> PackStats {
        self.stats
    }

    /// Drops every frame queued for `node` as next hop or egress (it
    /// failed), handing them to `recycle`; returns how many.
    pub fn flush_node(&mut self, node: u16, mut recycle: impl FnMut(F)) -> usize {
        let n = u32::from(self.nodes.max(1));
        let mut dropped = 0;
        for (key, q) in self.queues.iter_mut().enumerate() {
            let key = key as u32;
            if (key / n) as u16 == node || (key % n) as u16 == node {
                dropped += q.len();
                q.drain(..).for_each(|w| recycle(w.frame));
            }
        }
        let queues = &self.queues;
        self.active
            .retain(|&k| queues.get(k as usize).is_some_and(|q| !q.is_empty()));
        dropped
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::fabric::{decode, Message, HDR_MAX};

    fn frames_of(buf: &[u8]) -> Vec<(u8, u8, Vec<u8>)> {
        match decode(buf) {
            Ok(Message::Data(d)) => d
                .frames()
                .map(|f| (f.port, f.queue, f.bytes.to_vec()))
                .collect(),
            o => panic!("not data: {o:?}"),
        }
    }

    #[test]
    fn light_load_sends_each_frame_alone_heavy_load_packs() {
        let mut p: Packer<Vec<u8>> = Packer::new(4, 0, 0, 8, 1472, 100);
        let mut buf = vec![0u8; HDR_MAX + 1500];
        let mut recycled = 0;
        // One frame waiting when the transmitter asks: it leaves alone.
        p.push(2, 2, 1, 0, vec![1; 60]).expect("room");
        let got = p.pull(&mut buf, |_| recycled += 1).expect("one");
        assert_eq!((got.next_hop, got.egress, got.frames), (2, 2, 1));
        assert!(p.pull(&mut buf, |_| ()).is_none());
        // Twenty frames piled up between pulls: 8 + 8 + 4.
        for i in 0..20u8 {
            p.push(2, 2, 1, i, vec![i; 60]).expect("room");
        }
        let sizes: Vec<usize> =
            std::iter::from_fn(|| p.pull(&mut buf, |_| recycled += 1).map(|x| x.frames)).collect();
        assert_eq!(sizes, vec![8, 8, 4]);
        assert_eq!(recycled, 21, "every packed frame goes back to the pool");
        let s = p.stats();
        assert_eq!((s.packets, s.frames), (4, 21));
    }

    #[test]
    fn degree_one_is_off_and_order_kept_per_queue() {
        let mut p: Packer<Vec<u8>> = Packer::new(3, 0, 0, 1, 1472, 100);
        let mut buf = vec![0u8; HDR_MAX + 1500];
        for i in 0..3u8 {
            p.push(1, 1, 0, i, vec![i; 10]).expect("room");
        }
        for i in 0..3u8 {
            let g = p.pull(&mut buf, |_| ()).expect("frame");
            assert_eq!(g.frames, 1);
            assert_eq!(frames_of(&buf[g.range]), vec![(0, i, vec![i; 10])]);
        }
    }

    #[test]
    fn round_robin_over_destinations_and_mtu_bound() {
        let mut p: Packer<Vec<u8>> = Packer::new(3, 0, 0, 29, 300, 100);
        let mut buf = vec![0u8; HDR_MAX + 1500];
        for _ in 0..10 {
            p.push(1, 1, 0, 0, vec![0; 60]).expect("room");
            p.push(1, 2, 0, 0, vec![0; 60]).expect("room");
        }
        let mut order = Vec::new();
        while let Some(g) = p.pull(&mut buf, |_| ()) {
            assert!(g.range.len() <= 300, "cap respected: {}", g.range.len());
            order.push((g.next_hop, g.egress, g.frames));
        }
        // 300-byte datagrams: 20 + 4n + 60n <= 300 -> n = 4.
        assert_eq!(
            order,
            vec![
                (1, 1, 4),
                (1, 2, 4),
                (1, 1, 4),
                (1, 2, 4),
                (1, 1, 2),
                (1, 2, 2)
            ]
        );
    }

    #[test]
    fn transit_flag_oversize_drop_full_queue_and_flush() {
        let mut p: Packer<Vec<u8>> = Packer::new(3, 0, 0, 4, 200, 2);
        let mut buf = vec![0u8; HDR_MAX + 1500];
        p.push(1, 2, 0, 0, vec![0; 500]).expect("room");
        p.push(1, 2, 0, 0, vec![7; 10]).expect("room");
        assert!(p.push(1, 2, 0, 0, vec![0; 10]).is_err(), "limit 2");
        assert!(p.push(3, 2, 0, 0, vec![0; 10]).is_err(), "node 3 of 3");
        let g = p.pull(&mut buf, |_| ()).expect("the small one");
        assert_eq!((g.frames, p.stats().dropped_oversize), (1, 1));
        match decode(&buf[g.range]) {
            Ok(Message::Data(d)) => assert_eq!(d.meta.flags, FLAG_TRANSIT),
            o => panic!("{o:?}"),
        }
        p.push(1, 2, 0, 0, vec![0; 10]).expect("room");
        p.push(0, 0, 0, 0, vec![0; 10]).expect("room");
        assert_eq!(p.flush_node(1, |_| ()), 1);
        assert_eq!(p.waiting(), 1);
        assert_eq!(p.pull(&mut buf, |_| ()).map(|g| g.egress), Some(0));
        assert!(p.is_empty());
    }
}
