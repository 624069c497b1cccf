//! One AF_XDP socket in copy mode on one (interface, queue), with its own
//! UMEM. The UMEM is split in two: the first half of the frames cycles
//! through fill -> RX -> (callback) -> fill, the second half through
//! free list -> TX -> completion -> free list. Forwarding between two
//! sockets copies the frame (copy mode copies in the kernel anyway, and the
//! copy keeps each socket's UMEM private to its core).

use super::bpf::XdpProgram;
use super::ring::{MmapOffsets, Ring};
use crate::device::{ring_device, Common, FrameRing};
use crate::error::IoError;
use crate::sys::{self, Mmap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

/// `XDP_PACKET_HEADROOM`: the kernel reserves it in front of RX data.
const XDP_PACKET_HEADROOM: u32 = 256;
const DESC_SIZE: usize = 16;

/// `struct xdp_statistics`.
#[repr(C)]
#[derive(Copy, Clone, Default, Debug, PartialEq, Eq)]
pub struct XdpKernelStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// Configuration of one [`XskSocket`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct XskConfig {
    pub queue_id: u32,
    /// UMEM chunk size: 2048 or 4096.
    pub frame_size: u32,
    /// Frames in the UMEM; half for RX, half for TX. Power of two.
    pub frame_count: u32,
    /// Size of each of the four rings (power of two, >= frame_count / 2).
    pub ring_size: u32,
}

impl XskConfig {
    pub fn new(queue_id: u32) -> Self {
        XskConfig {
            queue_id,
            frame_size: 2048,
            frame_count: 4096,
            ring_size: 2048,
        }
    }
}

/// An AF_XDP socket bound to one queue of an interface running [`XdpProgram`].
pub struct XskSocket {
    // Rings and UMEM are unmapped before the socket closes (field order).
    rx: Ring,
    tx: Ring,
    fill: Ring,
    comp: Ring,
    umem: Mmap,
    fd: OwnedFd,
    /// Keeps the program attached while the socket lives.
    _prog: Arc<XdpProgram>,
    frame_size: u32,
    queue_id: u32,
    /// UMEM addresses of TX frames not in flight.
    tx_free: Vec<u64>,
    tx_pending: usize,
    common: Common,
}

impl XskSocket {
    /// Creates the socket and UMEM, binds it in copy mode to
    /// `prog`'s interface at `cfg.queue_id`, and registers it in the XSKMAP.
    pub fn open(prog: &Arc<XdpProgram>, cfg: &XskConfig) -> Result<Self, IoError> {
        if cfg.frame_size != 2048 && cfg.frame_size != 4096 {
            return Err(IoError::Config("frame_size must be 2048 or 4096"));
        }
        if !cfg.frame_count.is_power_of_two() || cfg.frame_count < 64 || cfg.frame_count > 1 << 20 {
            return Err(IoError::Config(
                "frame_count must be a power of two in 64..=2^20",
            ));
        }
        if !cfg.ring_size.is_power_of_two() || cfg.ring_size < cfg.frame_count / 2 {
            return Err(IoError::Config(
                "ring_size must be a power of two >= frame_count / 2",
            ));
        }
        let fd = sys::socket(libc::AF_XDP, libc::SOCK_RAW, 0)?;
        let raw = fd.as_raw_fd();
        let umem_len = cfg.frame_count as usize * cfg.frame_size as usize;
        let umem = Mmap::anonymous(umem_len)?;
        let reg = libc::xdp_umem_reg {
            addr: umem.ptr() as u64,
            len: umem_len as u64,
            chunk_size: cfg.frame_size,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        sys::setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)?;
        let n = cfg.ring_size;
        sys::setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_FILL_RING, &n)?;
        sys::setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_COMPLETION_RING, &n)?;
        sys::setsockopt(raw, libc::SOL_XDP, libc::XDP_RX_RING, &n)?;
        sys::setsockopt(raw, libc::SOL_XDP, libc::XDP_TX_RING, &n)?;
        let off: MmapOffsets = sys::getsockopt(raw, libc::SOL_XDP, libc::XDP_MMAP_OFFSETS)?;
        let map_ring = |o: &super::ring::RingOff,
                        pgoff: u64,
                        entry: usize,
                        producer: bool|
         -> Result<Ring, IoError> {
            let len = o.desc as usize + n as usize * entry;
            let m = Mmap::of_fd(&fd, len, pgoff as i64)?;
            Ring::new(m, o, n, entry, producer)
        };
        let rx = map_ring(&off.rx, libc::XDP_PGOFF_RX_RING as u64, DESC_SIZE, false)?;
        let tx = map_ring(&off.tx, libc::XDP_PGOFF_TX_RING as u64, DESC_SIZE, true)?;
        let mut fill = map_ring(&off.fr, libc::XDP_UMEM_PGOFF_FILL_RING, 8, true)?;
        let comp = map_ring(&off.cr, libc::XDP_UMEM_PGOFF_COMPLETION_RING, 8, false)?;

        // First half of the frames to the fill ring, second half free for TX.
        let half = cfg.frame_count / 2;
        let fs = u64::from(cfg.frame_size);
        let give = fill.free(half);
        let mut h = fill.head;
        for i in 0..give {
            // SAFETY: `free` reserved `give` slots from `head`; each entry
            // is an 8-byte UMEM address slot inside the mapped ring.
            unsafe { fill.entry_ptr(h).cast::<u64>().write(u64::from(i) * fs) };
            h = h.wrapping_add(1);
        }
        fill.submit(h);
        let tx_free: Vec<u64> = (half..cfg.frame_count).map(|i| u64::from(i) * fs).collect();

        let sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: libc::XDP_COPY,
            sxdp_ifindex: prog.ifindex(),
            sxdp_queue_id: cfg.queue_id,
            sxdp_shared_umem_fd: 0,
        };
        sys::bind(raw, &sxdp)?;
        prog.register(cfg.queue_id, raw)?;
        Ok(XskSocket {
            rx,
            tx,
            fill,
            comp,
            umem,
            fd,
            _prog: Arc::clone(prog),
            frame_size: cfg.frame_size,
            queue_id: cfg.queue_id,
            tx_free,
            tx_pending: 0,
            common: Common::new(&format!("xsk{}q{}", prog.ifindex(), cfg.queue_id)),
        })
    }

    /// The interface queue this socket is bound to.
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// Largest frame this socket can receive or send.
    pub fn max_frame(&self) -> usize {
        (self.frame_size - XDP_PACKET_HEADROOM) as usize
    }

    /// The kernel's counters for this socket (`XDP_STATISTICS`).
    pub fn kernel_stats(&self) -> Result<XdpKernelStats, IoError> {
        sys::getsockopt(self.fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_STATISTICS)
    }

    /// Moves finished TX frames from the completion ring to the free list.
    fn reclaim(&mut self) {
        let n = self.comp.available(self.comp.size);
        let mut h = self.comp.head;
        for _ in 0..n {
            // SAFETY: `available` says the kernel produced this entry.
            let addr = unsafe { self.comp.entry_ptr(h).cast::<u64>().read() };
            self.tx_free.push(addr);
            h = h.wrapping_add(1);
        }
        if n > 0 {
            self.comp.release(n);
        }
    }
}

ring_device!(XskSocket);

impl XskSocket {
    fn fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }
    /// Frames the kernel could not put on our RX ring (full) or dropped
    /// for want of a fill-ring buffer (`XDP_STATISTICS`, cumulative).
    fn ring_drops(&self) -> Option<u64> {
        self.kernel_stats()
            .ok()
            .map(|s| s.rx_ring_full + s.rx_dropped)
    }
    fn queues(&self, out: &mut Vec<pkt::QueueStats>) {
        out.push(pkt::QueueStats {
            queue: self.queue_id,
            stats: self.common.stats,
            ring_drops: self.ring_drops(),
        });
    }
}

impl FrameRing for XskSocket {
    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn rx_frames<F: FnMut(&[u8])>(&mut self, max: usize, mut f: F) -> Result<usize, IoError> {
        let want = max.min(u32::MAX as usize) as u32;
        let n = self.rx.available(want);
        if n == 0 {
            self.common.stats.rx_empty_polls += 1;
            return Ok(0);
        }
        // Every RX frame goes straight back to the fill ring, which has room
        // for all of them (the ring holds every RX frame).
        let room = self.fill.free(n);
        let mut fh = self.fill.head;
        let mut h = self.rx.head;
        let chunk_mask = !(u64::from(self.frame_size) - 1);
        for i in 0..n {
            // SAFETY: `available` says the kernel produced this descriptor.
            let d = unsafe { self.rx.entry_ptr(h).cast::<libc::xdp_desc>().read() };
            h = h.wrapping_add(1);
            let start = d.addr as usize;
            let end = start.checked_add(d.len as usize);
            match end {
                Some(e) if e <= self.umem.len() => {
                    // SAFETY: [start, e) lies in the UMEM (checked); the
                    // kernel handed this frame to us and takes it back only
                    // after we put it on the fill ring below.
                    let frame = unsafe {
                        core::slice::from_raw_parts(self.umem.ptr().add(start), d.len as usize)
                    };
                    self.common.stats.rx_bytes += u64::from(d.len);
                    f(frame);
                }
                _ => self.common.stats.errors += 1,
            }
            if i < room {
                // SAFETY: `free` reserved `room` fill slots from its head.
                unsafe {
                    self.fill
                        .entry_ptr(fh)
                        .cast::<u64>()
                        .write(d.addr & chunk_mask)
                };
                fh = fh.wrapping_add(1);
            }
        }
        self.rx.release(n);
        self.fill.submit(fh);
        Ok(n as usize)
    }

    fn tx_frame(&mut self, frame: &[u8]) -> Result<bool, IoError> {
        if frame.len() > self.frame_size as usize {
            return Err(IoError::FrameTooLarge {
                len: frame.len(),
                max: self.frame_size as usize,
            });
        }
        if self.tx_free.is_empty() {
            self.reclaim();
        }
        let pending = self.tx_pending as u32;
        if self.tx.free(pending + 1) <= pending {
            self.common.stats.tx_ring_full += 1;
            return Ok(false);
        }
        let Some(addr) = self.tx_free.pop() else {
            self.common.stats.tx_ring_full += 1;
            return Ok(false);
        };
        let desc = libc::xdp_desc {
            addr,
            len: frame.len() as u32,
            options: 0,
        };
        // SAFETY: `addr` is the start of one of our TX frames (frame_size
        // bytes inside the UMEM, not in flight) and `frame.len()` fits it;
        // the TX slot at `head` is free (checked above). The slot is
        // published to the kernel in `tx_kick`.
        unsafe {
            core::ptr::copy_nonoverlapping(
                frame.as_ptr(),
                self.umem.ptr().add(addr as usize),
                frame.len(),
            );
            self.tx
                .entry_ptr(self.tx.head.wrapping_add(self.tx_pending as u32))
                .cast::<libc::xdp_desc>()
                .write(desc);
        }
        self.tx_pending += 1;
        self.common.stats.tx += 1;
        self.common.stats.tx_bytes += frame.len() as u64;
        Ok(true)
    }

    fn tx_kick(&mut self) -> Result<(), IoError> {
        if self.tx_pending > 0 {
            let h = self.tx.head.wrapping_add(self.tx_pending as u32);
            self.tx.submit(h);
            self.tx_pending = 0;
        }
        // Copy mode transmits only inside sendto, at most 32 frames per
        // call (the kernel's TX budget), so kick until the ring is drained
        // or the device pushes back.
        let mut tries = self.tx.outstanding() / 32 + 2;
        while self.tx.outstanding() > 0 && tries > 0 {
            self.common.stats.tx_kicks += 1;
            if !sys::kick_tx(self.fd.as_raw_fd())? {
                break;
            }
            tries -= 1;
        }
        self.reclaim();
        Ok(())
    }

    fn tx_queued(&self) -> usize {
        self.tx_pending
    }
}
