//! One AF_XDP socket on one (interface, queue), in one of two ways:
//!
//! * Private UMEM (copy mode, [`XskSocket::open`]): the socket's own UMEM
//!   split in two; the first half of the frames cycles through fill -> RX
//!   -> (copied into a pool buffer) -> fill, the second half through free
//!   list -> TX (a packet copied in) -> completion -> free list. Forwarding
//!   between two sockets copies the frame twice, once out and once in.
//! * Shared UMEM ([`XskSocket::open_shared`]): the core's [`XskUmem`], a
//!   `pkt::Pool`'s arena, shared by every socket of the core
//!   (`XDP_SHARED_UMEM`, each socket with its own fill and completion
//!   rings). A received frame is handed to the graph in place as a packet
//!   of that pool; a packet of that pool is sent by putting its address in
//!   the TX ring of whichever socket it leaves on; completions return the
//!   frames to the pool, and each socket tops its fill ring up from the
//!   pool. Only a packet of another pool (a frame from a non-XDP port) is
//!   copied, into a free frame.
//!
//! Bind flags: the private UMEM binds `XDP_COPY`. The shared one binds as
//! [`XskConfig::bind`] says: `XDP_COPY`, no flag (the kernel takes
//! zero-copy where the driver offers it and falls back to copy, and
//! `XDP_OPTIONS` tells which: [`XskSocket::zero_copy`]), or
//! `XDP_ZEROCOPY` (refused where the driver has no zero-copy: veth).
//! The kernel's copy mode still copies between its buffer (skb or
//! xdp_frame) and the UMEM; what the shared UMEM saves is our two copies.

use super::bpf::XdpProgram;
use super::ring::{MmapOffsets, Ring};
use super::umem::XskUmem;
use crate::device::{Common, FrameRing};
use crate::error::IoError;
use crate::sys::{self, Mmap};
use pkt::{Batch, DevStats, Pool, QueueStats};
use std::mem::ManuallyDrop;
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

/// `struct xdp_options`.
#[repr(C)]
#[derive(Copy, Clone, Default, Debug)]
struct XdpOptions {
    flags: u32,
}

/// How a socket asks the kernel to bind (see the module doc).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum XskBind {
    /// `XDP_COPY`.
    #[default]
    Copy,
    /// No mode flag: zero-copy where the driver offers it, else copy.
    Auto,
    /// `XDP_ZEROCOPY`: fails where the driver offers no zero-copy.
    ZeroCopy,
}

/// Configuration of one [`XskSocket`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct XskConfig {
    pub queue_id: u32,
    /// UMEM chunk size: 2048 or 4096 (private UMEM; a shared one has its
    /// own, [`XskUmem::new`]).
    pub frame_size: u32,
    /// Frames in a private UMEM (half for RX, half for TX), or the frames
    /// a socket on a shared UMEM keeps in its fill ring (at most
    /// `ring_size`). Power of two.
    pub frame_count: u32,
    /// Size of each of the four rings (power of two, >= frame_count / 2).
    pub ring_size: u32,
    /// Bind flags of the first socket of a shared UMEM (the others follow
    /// its mode); a private UMEM always binds `XDP_COPY`.
    pub bind: XskBind,
}

impl XskConfig {
    pub fn new(queue_id: u32) -> Self {
        XskConfig {
            queue_id,
            frame_size: 2048,
            frame_count: 4096,
            ring_size: 2048,
            bind: XskBind::Copy,
        }
    }
}

/// Where a socket's frames come from.
enum Frames {
    /// Its own UMEM; `tx_free` holds the addresses of TX frames not in
    /// flight.
    Private { umem: Mmap, tx_free: Vec<u64> },
    /// The core's UMEM; `fill_out` frames of it are in this socket's fill
    /// ring (or taken from it by the kernel and not yet received), up to
    /// `fill_target`.
    Shared {
        umem: XskUmem,
        /// This socket's id on the UMEM (whose frames its rings hold).
        id: u8,
        fill_out: u32,
        fill_target: u32,
    },
}

/// The socket's descriptor. On a shared UMEM, closing it gives the frames
/// the socket's rings held back to the pool, after the close (the kernel
/// writes them no more), and the socket that registered the UMEM says it
/// is gone.
struct SockFd {
    fd: ManuallyDrop<OwnedFd>,
    shared: Option<(XskUmem, u8)>,
}

impl AsRawFd for SockFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for SockFd {
    fn drop(&mut self) {
        let raw = self.fd.as_raw_fd();
        // SAFETY: dropped once, here, and not used after.
        unsafe { ManuallyDrop::drop(&mut self.fd) };
        if let Some((u, id)) = &self.shared {
            if u.inner.reg_fd.get() == Some(raw) {
                u.inner.reg_fd.set(None);
            }
            u.inner.release(*id);
        }
    }
}

/// An AF_XDP socket bound to one queue of an interface running [`XdpProgram`].
pub struct XskSocket {
    // Rings are unmapped, then the socket closes (its last reference, so
    // the kernel unbinds it), then a shared UMEM takes back the frames it
    // held, then a private UMEM goes (field order).
    rx: Ring,
    tx: Ring,
    fill: Ring,
    comp: Ring,
    fd: SockFd,
    frames: Frames,
    /// Keeps the program attached while the socket lives.
    _prog: Arc<XdpProgram>,
    frame_size: u32,
    queue_id: u32,
    tx_pending: usize,
    zero_copy: bool,
    common: Common,
}

/// The rings of a new socket, sized `n`, mapped.
struct Rings {
    rx: Ring,
    tx: Ring,
    fill: Ring,
    comp: Ring,
}

fn make_rings(fd: &OwnedFd, n: u32) -> Result<Rings, IoError> {
    let raw = fd.as_raw_fd();
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
        let m = Mmap::of_fd(fd, len, pgoff as i64)?;
        Ring::new(m, o, n, entry, producer)
    };
    Ok(Rings {
        rx: map_ring(&off.rx, libc::XDP_PGOFF_RX_RING as u64, DESC_SIZE, false)?,
        tx: map_ring(&off.tx, libc::XDP_PGOFF_TX_RING as u64, DESC_SIZE, true)?,
        fill: map_ring(&off.fr, libc::XDP_UMEM_PGOFF_FILL_RING, 8, true)?,
        comp: map_ring(&off.cr, libc::XDP_UMEM_PGOFF_COMPLETION_RING, 8, false)?,
    })
}

fn check_rings(cfg: &XskConfig) -> Result<(), IoError> {
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
    Ok(())
}

impl XskSocket {
    /// Creates the socket and its private UMEM, binds it in copy mode to
    /// `prog`'s interface at `cfg.queue_id`, and registers it in the XSKMAP.
    pub fn open(prog: &Arc<XdpProgram>, cfg: &XskConfig) -> Result<Self, IoError> {
        if cfg.frame_size != 2048 && cfg.frame_size != 4096 {
            return Err(IoError::Config("frame_size must be 2048 or 4096"));
        }
        check_rings(cfg)?;
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
        let Rings {
            rx,
            tx,
            mut fill,
            comp,
        } = make_rings(&fd, cfg.ring_size)?;

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
            fd: SockFd {
                fd: ManuallyDrop::new(fd),
                shared: None,
            },
            frames: Frames::Private { umem, tx_free },
            _prog: Arc::clone(prog),
            frame_size: cfg.frame_size,
            queue_id: cfg.queue_id,
            tx_pending: 0,
            zero_copy: false,
            common: Common::new(&format!("xsk{}q{}", prog.ifindex(), cfg.queue_id)),
        })
    }

    /// Creates a socket on the core's shared `umem` and binds it to
    /// `prog`'s interface at `cfg.queue_id`: the first socket of the UMEM
    /// registers it (`XDP_UMEM_REG` over the pool's arena) and binds with
    /// `cfg.bind`; the next ones bind with `XDP_SHARED_UMEM` naming it.
    /// The socket keeps `cfg.frame_count / 2` frames (at most the ring
    /// size) in its fill ring. Fails where the kernel refuses (before 5.10
    /// a UMEM cannot be shared across interfaces): the caller then falls
    /// back to [`XskSocket::open`].
    pub fn open_shared(
        prog: &Arc<XdpProgram>,
        cfg: &XskConfig,
        umem: &XskUmem,
    ) -> Result<Self, IoError> {
        check_rings(cfg)?;
        let u = &umem.inner;
        let id = u
            .new_id()
            .ok_or(IoError::Config("more than 255 sockets on one UMEM"))?;
        let fd = sys::socket(libc::AF_XDP, libc::SOCK_RAW, 0)?;
        let raw = fd.as_raw_fd();
        let first = u.reg_fd.get();
        if first.is_none() {
            let (base, len) = u.pool.region();
            let reg = libc::xdp_umem_reg {
                addr: base as u64,
                len: len as u64,
                chunk_size: u.frame_size,
                headroom: 0,
                flags: 0,
                tx_metadata_len: 0,
            };
            sys::setsockopt(raw, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)?;
        }
        let Rings { rx, tx, fill, comp } = make_rings(&fd, cfg.ring_size)?;
        let (flags, shared_fd) = match first {
            Some(f) => (libc::XDP_SHARED_UMEM, f as u32),
            None => (
                match cfg.bind {
                    XskBind::Copy => libc::XDP_COPY,
                    XskBind::Auto => 0,
                    XskBind::ZeroCopy => libc::XDP_ZEROCOPY,
                },
                0,
            ),
        };
        let mut s = XskSocket {
            rx,
            tx,
            fill,
            comp,
            fd: SockFd {
                fd: ManuallyDrop::new(fd),
                shared: Some((umem.clone(), id)),
            },
            frames: Frames::Shared {
                umem: umem.clone(),
                id,
                fill_out: 0,
                fill_target: (cfg.frame_count / 2).min(cfg.ring_size),
            },
            _prog: Arc::clone(prog),
            frame_size: u.frame_size,
            queue_id: cfg.queue_id,
            tx_pending: 0,
            zero_copy: false,
            common: Common::new(&format!("xsk{}q{}", prog.ifindex(), cfg.queue_id)),
        };
        // Frames to the fill ring before the bind, so the first frames
        // find buffers.
        s.refill();
        let sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: prog.ifindex(),
            sxdp_queue_id: cfg.queue_id,
            sxdp_shared_umem_fd: shared_fd,
        };
        // On failure `s` drops: its frames go back to the pool with the
        // UMEM's handle (the kernel never had the socket bound).
        sys::bind(raw, &sxdp)?;
        let opts: XdpOptions = sys::getsockopt(raw, libc::SOL_XDP, libc::XDP_OPTIONS)?;
        s.zero_copy = opts.flags & libc::XDP_OPTIONS_ZEROCOPY != 0;
        prog.register(cfg.queue_id, raw)?;
        if first.is_none() {
            u.reg_fd.set(Some(raw));
        }
        Ok(s)
    }

    /// The interface queue this socket is bound to.
    pub fn queue_id(&self) -> u32 {
        self.queue_id
    }

    /// Largest frame this socket can receive or send.
    pub fn max_frame(&self) -> usize {
        (self.frame_size - XDP_PACKET_HEADROOM) as usize
    }

    /// True when the socket is on a shared UMEM ([`XskSocket::open_shared`]).
    pub fn shared_umem(&self) -> bool {
        matches!(self.frames, Frames::Shared { .. })
    }

    /// True when the kernel bound the socket in zero-copy mode
    /// (`XDP_OPTIONS`; never for a private UMEM, which binds `XDP_COPY`).
    pub fn zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The shared UMEM's counters, for a socket on one.
    pub fn umem_stats(&self) -> Option<super::UmemStats> {
        match &self.frames {
            Frames::Shared { umem, .. } => Some(umem.stats()),
            Frames::Private { .. } => None,
        }
    }

    /// The kernel's counters for this socket (`XDP_STATISTICS`).
    pub fn kernel_stats(&self) -> Result<XdpKernelStats, IoError> {
        sys::getsockopt(self.fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_STATISTICS)
    }

    /// Moves finished TX frames from the completion ring to the free list
    /// (the socket's own, or the shared UMEM's pool).
    fn reclaim(&mut self) {
        let n = self.comp.available(self.comp.size);
        if n == 0 {
            return;
        }
        let mut h = self.comp.head;
        for _ in 0..n {
            // SAFETY: `available` says the kernel produced this entry.
            let addr = unsafe { self.comp.entry_ptr(h).cast::<u64>().read() };
            match &mut self.frames {
                Frames::Private { tx_free, .. } => tx_free.push(addr),
                Frames::Shared { umem, id, .. } => {
                    let u = &umem.inner;
                    if let Some(idx) = u.take_back(addr, *id) {
                        // SAFETY: the kernel held the frame and gave it
                        // back (checked by `take_back`): nobody else does.
                        unsafe { u.pool.put_frame(idx) };
                    }
                }
            }
            h = h.wrapping_add(1);
        }
        self.comp.release(n);
    }

    /// Tops the fill ring up to its target from the shared UMEM's pool.
    fn refill(&mut self) {
        let Frames::Shared {
            umem,
            id,
            fill_out,
            fill_target,
        } = &mut self.frames
        else {
            return;
        };
        let want = fill_target.saturating_sub(*fill_out);
        if want == 0 {
            return;
        }
        let room = self.fill.free(want);
        let u = &umem.inner;
        let mut h = self.fill.head;
        let mut k = 0;
        while k < room {
            let Some(addr) = u.give(*id) else {
                u.fill_short.set(u.fill_short.get() + 1);
                break;
            };
            // SAFETY: `free` reserved `room` slots from `head`.
            unsafe { self.fill.entry_ptr(h).cast::<u64>().write(addr) };
            h = h.wrapping_add(1);
            k += 1;
        }
        if k > 0 {
            self.fill.submit(h);
            *fill_out += k;
        }
    }

    /// `rx_burst` on a shared UMEM: the frames become packets of its pool
    /// in place.
    fn rx_shared(&mut self, batch: &mut Batch, max: usize) -> usize {
        self.reclaim();
        let want = max.min(batch.room()).min(u32::MAX as usize) as u32;
        let n = self.rx.available(want);
        let mut got = 0usize;
        if n == 0 {
            self.common.stats.rx_empty_polls += 1;
        } else if let Frames::Shared {
            umem, id, fill_out, ..
        } = &mut self.frames
        {
            let u = &umem.inner;
            let fs = u64::from(self.frame_size);
            let mut h = self.rx.head;
            let mut bytes = 0u64;
            for _ in 0..n {
                // SAFETY: `available` says the kernel produced this descriptor.
                let d = unsafe { self.rx.entry_ptr(h).cast::<libc::xdp_desc>().read() };
                h = h.wrapping_add(1);
                let Some(idx) = u.take_back(d.addr, *id) else {
                    self.common.stats.errors += 1;
                    continue;
                };
                *fill_out = fill_out.saturating_sub(1);
                let off = (d.addr % fs) as usize;
                let p = if d.len > 0 {
                    // SAFETY: the kernel held frame `idx` and gave it back
                    // (checked by `take_back`); nobody else holds it.
                    unsafe { u.pool.packet_from_frame(idx, off, d.len as usize) }
                } else {
                    None
                };
                match p {
                    Some(p) => {
                        bytes += u64::from(d.len);
                        if batch.push(p).is_ok() {
                            got += 1;
                        }
                    }
                    None => {
                        // Empty, or running past its frame: the frame is
                        // ours again, its contents are not trusted.
                        // SAFETY: as above, and no packet was made of it.
                        unsafe { u.pool.put_frame(idx) };
                        u.bad_descs.set(u.bad_descs.get() + 1);
                        self.common.stats.errors += 1;
                    }
                }
            }
            self.rx.release(n);
            u.rx_in_place.set(u.rx_in_place.get() + got as u64);
            self.common.stats.rx_bytes += bytes;
            self.common.stats.rx += got as u64;
        }
        self.refill();
        got
    }

    /// `tx_burst` on a shared UMEM: a packet of its pool goes by address,
    /// any other is copied into a free frame.
    fn tx_shared(&mut self, batch: &mut Batch) -> usize {
        if batch.is_empty() {
            return 0;
        }
        self.reclaim();
        let pending = self.tx_pending as u32;
        let want = batch.len().min(u32::MAX as usize - pending as usize) as u32;
        let room = self.tx.free(pending + want).saturating_sub(pending) as usize;
        if room < batch.len() {
            self.common.stats.tx_ring_full += 1;
        }
        let Frames::Shared { umem, id, .. } = &self.frames else {
            return 0;
        };
        let (umem, id) = (umem.clone(), *id);
        let u = &umem.inner;
        let fs = self.frame_size as usize;
        let (mut sent, mut dropped, mut bytes) = (0usize, 0u64, 0u64);
        let mut drained = batch.drain_front(room);
        while let Some(p) = drained.next() {
            let len = p.len();
            let desc_addr = if u.pool.owns(&p) {
                if len == 0 {
                    dropped += 1;
                    continue;
                }
                let (idx, head, len) = p.into_frame();
                u.lend(idx, id);
                u.tx_in_place.set(u.tx_in_place.get() + 1);
                (idx as u64 * fs as u64 + head as u64, len)
            } else {
                if len == 0 || len > fs {
                    dropped += 1;
                    continue;
                }
                let Some(addr) = u.give(id) else {
                    u.fill_short.set(u.fill_short.get() + 1);
                    dropped += 1;
                    continue;
                };
                // SAFETY: `addr` starts a frame of `fs` bytes inside the
                // UMEM that the pool just gave up (nobody else holds it),
                // and `len <= fs`.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        p.data().as_ptr(),
                        u.pool.region().0.add(addr as usize),
                        len,
                    );
                }
                u.tx_copied.set(u.tx_copied.get() + 1);
                self.common.stats.tx_copied += 1;
                (addr, len)
            };
            let desc = libc::xdp_desc {
                addr: desc_addr.0,
                len: desc_addr.1 as u32,
                options: 0,
            };
            // SAFETY: the slot at head + pending is free: `free` reserved
            // `room` slots past the pending ones. Published in `tx_kick`.
            unsafe {
                self.tx
                    .entry_ptr(self.tx.head.wrapping_add(self.tx_pending as u32))
                    .cast::<libc::xdp_desc>()
                    .write(desc);
            }
            self.tx_pending += 1;
            sent += 1;
            bytes += desc_addr.1 as u64;
            if self.tx_pending >= self.common.kn {
                if let Err(e) = self.kick() {
                    self.common.last_error = Some(e);
                }
            }
        }
        drop(drained);
        self.common.stats.tx += sent as u64;
        self.common.stats.tx_bytes += bytes;
        self.common.stats.tx_dropped += dropped;
        sent
    }

    /// Publishes the queued TX descriptors and kicks the kernel.
    fn kick(&mut self) -> Result<(), IoError> {
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
}

impl pkt::Device for XskSocket {
    type Error = IoError;
    fn name(&self) -> &str {
        &self.common.name
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        if self.shared_umem() {
            self.rx_shared(batch, max)
        } else {
            let n = crate::device::rx_burst(self, pool, batch, max);
            self.common.stats.rx_copied += n as u64;
            n
        }
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        if self.shared_umem() {
            self.tx_shared(batch)
        } else {
            let n = crate::device::tx_burst(self, batch);
            self.common.stats.tx_copied += n as u64;
            n
        }
    }
    fn flush(&mut self) {
        crate::device::flush(self)
    }
    fn stats(&self) -> DevStats {
        self.common.stats
    }
    fn poll_fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }
    fn last_error(&self) -> Option<IoError> {
        self.common.last_error
    }
    /// Frames the kernel could not put on our RX ring (full) or dropped
    /// for want of a fill-ring buffer (`XDP_STATISTICS`, cumulative).
    fn rx_ring_drops(&self) -> Option<u64> {
        self.kernel_stats()
            .ok()
            .map(|s| s.rx_ring_full + s.rx_dropped)
    }
    fn queue_stats(&self, out: &mut Vec<QueueStats>) {
        out.push(QueueStats {
            queue: self.queue_id,
            stats: self.common.stats,
            ring_drops: pkt::Device::rx_ring_drops(self),
            buffers: Some(self.buffers()),
        });
    }
}

impl XskSocket {
    /// Renames the device (the name a graph's `FromDevice(NAME)`
    /// and `ToDevice(NAME)` bind to).
    pub fn set_name(&mut self, name: &str) {
        self.common.name = name.to_string();
    }
    /// Kicks the kernel after every `kn` queued TX frames (default
    /// 32; at least 1).
    pub fn set_kn(&mut self, kn: usize) {
        self.common.kn = kn.max(1);
    }
    /// How frames reach the graph, for `show dataplane`: `shared-umem`
    /// (in place) or `copy` (a private UMEM, copied in and out), and
    /// `/zero-copy` when the kernel bound in zero-copy mode.
    pub fn buffers(&self) -> &'static str {
        match (self.shared_umem(), self.zero_copy) {
            (true, true) => "shared-umem/zero-copy",
            (true, false) => "shared-umem",
            (false, _) => "copy",
        }
    }
}

impl FrameRing for XskSocket {
    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn rx_frames<F: FnMut(&[u8])>(&mut self, max: usize, mut f: F) -> Result<usize, IoError> {
        let Frames::Private { umem, .. } = &self.frames else {
            return Ok(0);
        };
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
                Some(e) if e <= umem.len() => {
                    // SAFETY: [start, e) lies in the UMEM (checked); the
                    // kernel handed this frame to us and takes it back only
                    // after we put it on the fill ring below.
                    let frame = unsafe {
                        core::slice::from_raw_parts(umem.ptr().add(start), d.len as usize)
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
        if matches!(&self.frames, Frames::Private { tx_free, .. } if tx_free.is_empty()) {
            self.reclaim();
        }
        let pending = self.tx_pending as u32;
        if self.tx.free(pending + 1) <= pending {
            self.common.stats.tx_ring_full += 1;
            return Ok(false);
        }
        let Frames::Private { umem, tx_free } = &mut self.frames else {
            return Ok(false);
        };
        let Some(addr) = tx_free.pop() else {
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
                umem.ptr().add(addr as usize),
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
        self.kick()
    }

    fn tx_queued(&self) -> usize {
        self.tx_pending
    }
}
