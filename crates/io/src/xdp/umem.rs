//! One UMEM per core, shared by that core's AF_XDP sockets
//! (`XDP_SHARED_UMEM`, kernel >= 5.10 across interfaces and queues), and
//! it is the core's packet pool: the UMEM is a `pkt::Pool`'s arena, so a
//! received frame is a packet without a copy, and a packet of the pool is
//! sent by putting its address in a TX ring, on any of the core's sockets.
//!
//! Each frame (one pool buffer) is either the kernel's (in a fill ring, an
//! RX ring not yet read, a TX ring or a completion ring not yet read) or
//! ours (free in the pool or held by a packet). [`XskUmem`] keeps that
//! owner per frame: a descriptor from the kernel is trusted only when it
//! names a frame the kernel holds, inside the UMEM, with its length inside
//! the frame; anything else is counted ([`UmemStats::bad_descs`]) and
//! dropped, so a wrong descriptor can never give one buffer two owners.
//!
//! The sockets of one core share the frames: the free list is the pool's,
//! each socket keeps its own fill ring topped up from it and returns its
//! TX completions to it. When the last socket and the last handle are
//! gone, the frames still with the kernel go back to the pool, which then
//! frees its arena once no packet holds a buffer.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::rc::Rc;

use pkt::Pool;

/// Counters of one shared UMEM (all its sockets).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct UmemStats {
    /// Frames in the UMEM (the pool's buffers).
    pub frames: usize,
    /// Frames free in the pool now.
    pub free: usize,
    /// Frames the kernel holds now (fill, RX, TX and completion rings).
    pub with_kernel: usize,
    /// Frames received and handed to the graph in place (no copy).
    pub rx_in_place: u64,
    /// Packets of the pool sent by address (no copy).
    pub tx_in_place: u64,
    /// Packets from elsewhere (another pool) copied into a frame to send.
    pub tx_copied: u64,
    /// Descriptors from the kernel that named no frame it held, lay
    /// outside the UMEM or ran past their frame: counted and dropped.
    pub bad_descs: u64,
    /// Fill-ring refills cut short because the pool was empty.
    pub fill_short: u64,
}

pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) frame_size: u32,
    /// Per frame: 0 while it is ours, else the id of the socket whose
    /// rings hold it (the kernel's).
    owner: Box<[Cell<u8>]>,
    /// The id the next socket gets (1..=255).
    next_id: Cell<u8>,
    with_kernel: Cell<usize>,
    /// The socket that registered the UMEM (`XDP_UMEM_REG`), which the
    /// others name in `sxdp_shared_umem_fd`; `None` before the first
    /// socket and after it closed.
    pub(crate) reg_fd: Cell<Option<RawFd>>,
    pub(crate) rx_in_place: Cell<u64>,
    pub(crate) tx_in_place: Cell<u64>,
    pub(crate) tx_copied: Cell<u64>,
    pub(crate) bad_descs: Cell<u64>,
    pub(crate) fill_short: Cell<u64>,
}

/// A per-core UMEM over a `pkt::Pool`, shared by the core's sockets
/// (cloning shares it). Not `Send`: one core owns it, as it owns the pool.
#[derive(Clone)]
pub struct XskUmem {
    pub(crate) inner: Rc<Inner>,
}

impl std::fmt::Debug for XskUmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XskUmem")
            .field("stats", &self.stats())
            .finish()
    }
}

impl XskUmem {
    /// A UMEM of `frames` frames of `frame_size` bytes (2048 or 4096),
    /// which is also the pool it returns in [`XskUmem::pool`]. Nothing is
    /// registered with the kernel until the first socket opens on it
    /// (`XskSocket::open_shared`).
    pub fn new(frames: u32, frame_size: u32) -> Result<Self, crate::IoError> {
        if frame_size != 2048 && frame_size != 4096 {
            return Err(crate::IoError::Config("frame_size must be 2048 or 4096"));
        }
        if !frames.is_power_of_two() || !(64..=1 << 20).contains(&frames) {
            return Err(crate::IoError::Config(
                "frame_count must be a power of two in 64..=2^20",
            ));
        }
        // The headroom of packets made by the graph itself (ICMP, ARP);
        // received frames keep the kernel's (XDP_PACKET_HEADROOM).
        let pool = Pool::with_geometry(
            frames as usize,
            frame_size as usize,
            pkt::pool::DEFAULT_HEADROOM,
        )
        .map_err(|_| crate::IoError::Config("bad UMEM geometry"))?;
        Ok(XskUmem {
            inner: Rc::new(Inner {
                pool,
                frame_size,
                owner: (0..frames).map(|_| Cell::new(0)).collect(),
                next_id: Cell::new(1),
                with_kernel: Cell::new(0),
                reg_fd: Cell::new(None),
                rx_in_place: Cell::new(0),
                tx_in_place: Cell::new(0),
                tx_copied: Cell::new(0),
                bad_descs: Cell::new(0),
                fill_short: Cell::new(0),
            }),
        })
    }

    /// The pool whose arena is this UMEM: the graph allocates from it, and
    /// its packets are sent without a copy on every socket of the UMEM.
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// The counters.
    pub fn stats(&self) -> UmemStats {
        let i = &self.inner;
        UmemStats {
            frames: i.pool.capacity(),
            free: i.pool.available(),
            with_kernel: i.with_kernel.get(),
            rx_in_place: i.rx_in_place.get(),
            tx_in_place: i.tx_in_place.get(),
            tx_copied: i.tx_copied.get(),
            bad_descs: i.bad_descs.get(),
            fill_short: i.fill_short.get(),
        }
    }
}

impl Inner {
    /// An id for a new socket on this UMEM; `None` past 255 sockets.
    pub(crate) fn new_id(&self) -> Option<u8> {
        let id = self.next_id.get();
        if id == 0 {
            return None;
        }
        // After 255: 0, exhausted.
        self.next_id.set(id.wrapping_add(1));
        Some(id)
    }

    /// Takes a free frame and hands it to socket `id`'s rings; its UMEM
    /// address.
    #[inline]
    pub(crate) fn give(&self, id: u8) -> Option<u64> {
        let idx = self.pool.take_frame()?;
        self.lend(idx, id);
        Some(u64::from(idx) * u64::from(self.frame_size))
    }

    /// Marks frame `idx` (out of the pool, ours) as held by socket `id`'s
    /// rings.
    #[inline]
    pub(crate) fn lend(&self, idx: u32, id: u8) {
        if let Some(o) = self.owner.get(idx as usize) {
            o.set(id);
            self.with_kernel.set(self.with_kernel.get() + 1);
        }
    }

    /// Socket `id`'s rings give back the frame holding UMEM address
    /// `addr`: its index, when they held it (then it is ours again);
    /// `None` and counted when the address is outside the UMEM or names a
    /// frame they did not hold.
    #[inline]
    pub(crate) fn take_back(&self, addr: u64, id: u8) -> Option<u32> {
        let idx = addr / u64::from(self.frame_size);
        match self.owner.get(idx as usize) {
            Some(o) if o.get() == id => {
                o.set(0);
                self.with_kernel.set(self.with_kernel.get() - 1);
                Some(idx as u32)
            }
            _ => {
                self.bad_descs.set(self.bad_descs.get() + 1);
                None
            }
        }
    }

    /// Socket `id` is closed: the frames its rings held are the pool's
    /// again.
    pub(crate) fn release(&self, id: u8) {
        for (i, o) in self.owner.iter().enumerate() {
            if o.get() == id {
                o.set(0);
                self.with_kernel.set(self.with_kernel.get() - 1);
                // SAFETY: the socket's rings held frame `i` (taken from the
                // pool, never given back); the socket is closed, so the
                // kernel writes it no more, and nothing else holds it.
                unsafe { self.pool.put_frame(i as u32) };
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Every socket is closed (each holds a handle until after its
        // descriptor closes, and then gave its frames back): this finds
        // none, unless a socket failed before it had an id.
        for (i, o) in self.owner.iter().enumerate() {
            if o.get() != 0 {
                // SAFETY: the kernel held frame `i` (taken from the pool and
                // never given back), and nothing else holds it.
                unsafe { self.pool.put_frame(i as u32) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_checked_against_the_owner() {
        let u = XskUmem::new(64, 2048).unwrap();
        let i = &u.inner;
        let (a, b) = (i.new_id().unwrap(), i.new_id().unwrap());
        let x = i.give(a).unwrap();
        let y = i.give(b).unwrap();
        assert_eq!((u.stats().free, u.stats().with_kernel), (62, 2));
        // Another socket's frame, an address past the UMEM, a frame that
        // is ours: refused, counted, nothing changes hands.
        assert_eq!(i.take_back(x, b), None);
        assert_eq!(i.take_back(64 * 2048, a), None);
        assert_eq!(i.take_back(u64::MAX, a), None);
        // Any offset inside the frame names it (RX data starts after the
        // kernel's headroom).
        assert_eq!(i.take_back(x + 256, a), Some((x / 2048) as u32));
        assert_eq!(i.take_back(x, a), None, "given back twice");
        assert_eq!(u.stats().bad_descs, 4);
        // SAFETY: taken back above, held by nobody.
        unsafe { i.pool.put_frame((x / 2048) as u32) };
        // A closed socket's frames return to the pool.
        i.release(b);
        assert_eq!(i.take_back(y, b), None);
        assert_eq!((u.stats().free, u.stats().with_kernel), (64, 0));
        // A UMEM dropped with frames lent frees cleanly (the pool with it).
        let _ = i.give(a).unwrap();
        drop(u);
    }

    #[test]
    fn ids_run_out_after_255_sockets() {
        let u = XskUmem::new(64, 2048).unwrap();
        assert!((0..255).all(|_| u.inner.new_id().is_some()));
        assert_eq!(u.inner.new_id(), None);
        assert!(XskUmem::new(100, 2048).is_err());
        assert!(XskUmem::new(64, 1000).is_err());
    }
}
