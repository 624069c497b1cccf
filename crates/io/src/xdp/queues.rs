//! The queues of one interface that one core serves, as one device.
//!
//! A port may have more RX queues than the dataplane has cores
//! (`queues = 4` with `cores = 2`): core `c` then reads queues
//! `c, c + cores, ...`, one [`XskSocket`] each, through one [`XskQueues`],
//! so that the element graph still sees one device per port. Reception
//! takes from the queues in turn, starting one further each poll (no queue
//! starves when a poll fills the batch); transmission goes through the
//! first queue only (each core sends on a queue of its own, no lock).
//! With several sockets, one `epoll` descriptor holds them all and is the
//! device's [`pkt::Device::poll_fd`]: a core sleeps on one descriptor per
//! port however many queues it serves (`sys::poll_many` takes 16).

use super::socket::XskSocket;
use crate::error::{IoError, Op};
use pkt::{Batch, DevStats, Pool, QueueStats};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Several AF_XDP sockets of one interface, owned by one core.
pub struct XskQueues {
    /// Never empty; the first one transmits.
    socks: Vec<XskSocket>,
    /// Where the next poll starts.
    next: usize,
    /// With more than one socket: an epoll descriptor holding them all.
    epoll: Option<OwnedFd>,
    name: String,
}

impl XskQueues {
    /// Groups `socks` (sockets of one interface, at least one).
    pub fn new(socks: Vec<XskSocket>) -> Result<Self, IoError> {
        let Some(first) = socks.first() else {
            return Err(IoError::Config("a queue group needs at least one socket"));
        };
        let name = pkt::Device::name(first).to_string();
        let epoll = if socks.len() > 1 {
            // SAFETY: plain epoll_create1(2); checked below.
            let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            if fd < 0 {
                return Err(IoError::last(Op::Poll));
            }
            // SAFETY: `fd` is a new descriptor we own from here on.
            let ep = unsafe { OwnedFd::from_raw_fd(fd) };
            for s in &socks {
                let Some(sfd) = pkt::Device::poll_fd(s) else {
                    continue;
                };
                let mut ev = libc::epoll_event {
                    events: libc::EPOLLIN as u32,
                    u64: sfd as u64,
                };
                // SAFETY: both descriptors are open; `ev` lives across the call.
                let rc =
                    unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, sfd, &mut ev) };
                if rc < 0 {
                    return Err(IoError::last(Op::Poll));
                }
            }
            Some(ep)
        } else {
            None
        };
        Ok(XskQueues {
            socks,
            next: 0,
            epoll,
            name,
        })
    }

    /// The sockets, the transmitting one first.
    pub fn sockets(&self) -> &[XskSocket] {
        &self.socks
    }

    /// Renames every socket (the name a graph's devices bind to).
    pub fn set_name(&mut self, name: &str) {
        for s in &mut self.socks {
            s.set_name(name);
        }
        self.name = name.to_string();
    }

    /// Kicks the kernel after every `kn` queued TX frames.
    pub fn set_kn(&mut self, kn: usize) {
        for s in &mut self.socks {
            s.set_kn(kn);
        }
    }
}

impl pkt::Device for XskQueues {
    type Error = IoError;
    fn name(&self) -> &str {
        &self.name
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let n = self.socks.len();
        let start = self.next % n.max(1);
        self.next = start + 1;
        let mut got = 0;
        for i in 0..n {
            if got >= max {
                break;
            }
            if let Some(s) = self.socks.get_mut((start + i) % n) {
                got += s.rx_burst(pool, batch, max - got);
            }
        }
        got
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        self.socks.first_mut().map_or(0, |s| s.tx_burst(batch))
    }
    fn flush(&mut self) {
        if let Some(s) = self.socks.first_mut() {
            s.flush();
        }
    }
    /// The sum over the queues.
    fn stats(&self) -> DevStats {
        let mut t = DevStats::default();
        for s in &self.socks {
            let x = s.stats();
            t.rx += x.rx;
            t.rx_bytes += x.rx_bytes;
            t.rx_nobuf += x.rx_nobuf;
            t.rx_empty_polls += x.rx_empty_polls;
            t.tx += x.tx;
            t.tx_bytes += x.tx_bytes;
            t.tx_dropped += x.tx_dropped;
            t.tx_ring_full += x.tx_ring_full;
            t.tx_kicks += x.tx_kicks;
            t.errors += x.errors;
        }
        t
    }
    fn poll_fd(&self) -> Option<i32> {
        match &self.epoll {
            Some(ep) => Some(ep.as_raw_fd()),
            None => self.socks.first().and_then(pkt::Device::poll_fd),
        }
    }
    fn last_error(&self) -> Option<IoError> {
        self.socks.iter().find_map(pkt::Device::last_error)
    }
    fn rx_ring_drops(&self) -> Option<u64> {
        let mut any = None;
        for d in self.socks.iter().filter_map(pkt::Device::rx_ring_drops) {
            any = Some(any.unwrap_or(0) + d);
        }
        any
    }
    fn queue_stats(&self, out: &mut Vec<QueueStats>) {
        for s in &self.socks {
            s.queue_stats(out);
        }
    }
}
