//! Per-core packet buffer pools and the [`Packet`] handle.
//!
//! A [`Pool`] allocates one contiguous arena of fixed-size buffers once, at
//! creation, and keeps a free list of buffer indices whose capacity is also
//! reserved up front. Taking a buffer pops an index, dropping a [`Packet`]
//! pushes it back: after warm-up nothing on the packet path touches the heap
//! (the buffer recycling of seed 004 §2.3.2, without Click's fall-back to the
//! general allocator: an empty pool answers `None` and the caller counts a
//! drop).
//!
//! The pool is single-threaded by construction (`Packet` and `Pool` hold
//! raw pointers, so neither is `Send` nor `Sync`): RouteBricks' rule that
//! one core owns a queue and a packet (seed 003, "Rule 1/Rule 2") is
//! enforced by the type system. Each worker core creates its own pool.
//!
//! A packet holds a plain pointer to its pool, not an `Rc`: recycling is
//! one store into the free list and one counter update, with no reference
//! count per packet (the profile of issue 19 had one increment per receive
//! and one decrement per recycle). The pool's memory lives while a [`Pool`]
//! handle or a packet does: the handles are counted (cloning a `Pool` is
//! rare), and the free list's length counts the packets out, so the last
//! of the two to go frees it.
//!
//! The arena is one allocation so that an AF_XDP device can register it as
//! its UMEM ([`Pool::region`], [`Packet::frame_index`]).

use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Default buffer size: holds a 1500-byte frame plus headroom.
pub const DEFAULT_BUF_SIZE: usize = 2048;
/// Default headroom reserved in front of received data, so encapsulations
/// and in-place ICMP errors can prepend headers without copying the payload.
pub const DEFAULT_HEADROOM: usize = 128;

/// Why a pool could not be created.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PoolError {
    /// Zero buffers, a buffer size over 65535, or headroom not below the size.
    BadGeometry,
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bad pool geometry")
    }
}
impl std::error::Error for PoolError {}

struct Inner {
    base: NonNull<u8>,
    arena_len: usize,
    buf_size: usize,
    headroom: usize,
    count: usize,
    /// The free list: indices `free[..top]` are free. Its capacity is
    /// `count`, and a buffer is either free or owned by exactly one
    /// packet, so `top <= count` always holds.
    free: NonNull<u32>,
    top: Cell<usize>,
    /// Live [`Pool`] handles.
    handles: Cell<usize>,
}

impl Inner {
    /// Frees the pool when nothing refers to it any more: no handle and
    /// every buffer back (no packet out).
    ///
    /// # Safety
    /// `this` points to a live `Inner` made by `Pool::with_geometry`, and
    /// the caller does not use it after this call unless it is still
    /// referred to (a handle or a packet).
    #[inline]
    unsafe fn release_if_unused(this: NonNull<Inner>) {
        // SAFETY: live, by the caller's contract.
        let i = unsafe { this.as_ref() };
        if i.handles.get() == 0 && i.top.get() == i.count {
            // SAFETY: made by `Box::into_raw` in `Pool::with_geometry`;
            // nothing refers to it any more, so this is the last use.
            drop(unsafe { Box::from_raw(this.as_ptr()) });
        }
    }

    /// Pushes a returned buffer index.
    #[inline(always)]
    fn put(&self, idx: u32) {
        let top = self.top.get();
        debug_assert!(top < self.count, "a buffer returned twice");
        if top < self.count {
            // SAFETY: top < count, the free list's length.
            unsafe { self.free.as_ptr().add(top).write(idx) };
            self.top.set(top + 1);
        }
    }

    /// Pops a free buffer index.
    #[inline(always)]
    fn take(&self) -> Option<u32> {
        let top = self.top.get().checked_sub(1)?;
        self.top.set(top);
        // SAFETY: top < count (it was <= count before the decrement).
        Some(unsafe { self.free.as_ptr().add(top).read() })
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: `base`/`arena_len` and `free`/`count` come from
        // `Box::into_raw` of boxed slices of exactly these lengths (see
        // `Pool::with_geometry`), and this runs once, when neither a
        // handle nor a packet refers to the pool any more.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.base.as_ptr(),
                self.arena_len,
            )));
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.free.as_ptr(),
                self.count,
            )));
        }
    }
}

/// A per-core pool of fixed-size packet buffers. Cloning is cheap and shares
/// the pool.
pub struct Pool {
    inner: NonNull<Inner>,
    /// Not `Send` or `Sync` (the pointer already makes it so; said here).
    _one_core: PhantomData<*mut Inner>,
}

impl Clone for Pool {
    fn clone(&self) -> Pool {
        let i = self.inner();
        i.handles.set(i.handles.get() + 1);
        Pool {
            inner: self.inner,
            _one_core: PhantomData,
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let i = self.inner();
        i.handles.set(i.handles.get() - 1);
        // SAFETY: `inner` is live (this handle counted until now), and
        // this handle does not use it again.
        unsafe { Inner::release_if_unused(self.inner) };
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("count", &self.inner().count)
            .field("buf_size", &self.inner().buf_size)
            .field("available", &self.available())
            .finish()
    }
}

impl Pool {
    #[inline(always)]
    fn inner(&self) -> &Inner {
        // SAFETY: a handle keeps its `Inner` alive (counted in `handles`).
        unsafe { self.inner.as_ref() }
    }

    /// A pool of `count` buffers of [`DEFAULT_BUF_SIZE`] with
    /// [`DEFAULT_HEADROOM`].
    pub fn new(count: usize) -> Pool {
        // The default geometry is valid for any count above zero.
        Self::with_geometry(count.max(1), DEFAULT_BUF_SIZE, DEFAULT_HEADROOM)
            .unwrap_or_else(|_| unreachable!("default geometry is valid"))
    }

    /// A pool of `count` buffers of `buf_size` bytes, each reserving
    /// `headroom` bytes in front of the data.
    pub fn with_geometry(
        count: usize,
        buf_size: usize,
        headroom: usize,
    ) -> Result<Pool, PoolError> {
        if count == 0 || count > u32::MAX as usize || buf_size > 65535 || headroom >= buf_size {
            return Err(PoolError::BadGeometry);
        }
        let arena_len = count.checked_mul(buf_size).ok_or(PoolError::BadGeometry)?;
        let arena: Box<[u8]> = vec![0u8; arena_len].into_boxed_slice();
        let raw = Box::into_raw(arena) as *mut u8;
        let base = NonNull::new(raw).ok_or(PoolError::BadGeometry)?;
        // Free list in reverse so the first allocations take low indices.
        let free: Box<[u32]> = (0..count as u32).rev().collect();
        let free = NonNull::new(Box::into_raw(free) as *mut u32).ok_or(PoolError::BadGeometry)?;
        let inner = Box::new(Inner {
            base,
            arena_len,
            buf_size,
            headroom,
            count,
            free,
            top: Cell::new(count),
            handles: Cell::new(1),
        });
        Ok(Pool {
            // SAFETY: `Box::into_raw` is never null.
            inner: unsafe { NonNull::new_unchecked(Box::into_raw(inner)) },
            _one_core: PhantomData,
        })
    }

    /// Takes an empty buffer (length 0, data starting after the headroom).
    #[inline]
    pub fn alloc(&self) -> Option<Packet> {
        Packet::alloc_in(self.inner)
    }

    /// Takes a buffer and copies `data` into it. `None` when the pool is
    /// empty or `data` does not fit after the headroom.
    #[inline]
    pub fn alloc_from(&self, data: &[u8]) -> Option<Packet> {
        if data.len() > self.inner().buf_size - self.inner().headroom {
            return None;
        }
        let mut p = self.alloc()?;
        p.append(data).ok()?;
        Some(p)
    }

    /// Buffers currently free.
    pub fn available(&self) -> usize {
        self.inner().top.get()
    }
    /// Buffers in the pool.
    pub fn capacity(&self) -> usize {
        self.inner().count
    }
    /// Size of each buffer, headroom included.
    pub fn buf_size(&self) -> usize {
        self.inner().buf_size
    }
    /// Headroom reserved in front of fresh packets.
    pub fn headroom(&self) -> usize {
        self.inner().headroom
    }
    /// The arena: start and length. Buffer `i` is at `i * buf_size`. Meant
    /// for registering the pool as an AF_XDP UMEM; writing through it to a
    /// buffer that a live `Packet` owns is the caller's responsibility.
    pub fn region(&self) -> (*mut u8, usize) {
        (self.inner().base.as_ptr(), self.inner().arena_len)
    }
}

/// Per-packet annotations carried along the graph (Click's packet
/// annotations): set by one element, read by a later one.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Anno {
    /// Index of the device the packet arrived on (set by the driver).
    pub in_port: u16,
    /// Offset of the layer-3 header from the start of the data; 0 means
    /// not yet parsed (CheckIpHeader sets 14, or 18 under one VLAN tag).
    pub l3: u16,
    /// Next-hop index chosen by a lookup element.
    pub nh: u32,
    /// Gateway address chosen by a lookup element, network byte order:
    /// IPv4 in the first 4 bytes, IPv6 in all 16. All zero: none.
    pub gw: [u8; 16],
}

/// A packet: an owned buffer from a [`Pool`], returned to it on drop.
pub struct Packet {
    buf: NonNull<u8>,
    /// Its pool, kept alive by this packet's buffer being out (see the
    /// module doc): no reference count.
    pool: NonNull<Inner>,
    idx: u32,
    head: u16,
    len: u16,
    /// Annotations (see [`Anno`]).
    pub anno: Anno,
}

impl std::fmt::Debug for Packet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packet")
            .field("idx", &self.idx)
            .field("head", &self.head)
            .field("len", &self.len)
            .field("anno", &self.anno)
            .finish()
    }
}

impl Drop for Packet {
    #[inline]
    fn drop(&mut self) {
        self.pool().put(self.idx);
        // SAFETY: the pool is live (this packet's buffer was out), and the
        // packet does not touch it again.
        unsafe { Inner::release_if_unused(self.pool) };
    }
}

/// A change of packet length that did not fit the buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NoRoom;

impl Packet {
    /// Takes a buffer of the pool at `inner` (live: a handle or a packet
    /// refers to it).
    #[inline(always)]
    fn alloc_in(inner: NonNull<Inner>) -> Option<Packet> {
        // SAFETY: the caller's handle or packet keeps `inner` alive.
        let i = unsafe { inner.as_ref() };
        let idx = i.take()?;
        let off = idx as usize * i.buf_size;
        // SAFETY: idx < count, so off + buf_size <= arena_len.
        let buf = unsafe { NonNull::new_unchecked(i.base.as_ptr().add(off)) };
        Some(Packet {
            buf,
            pool: inner,
            idx,
            head: i.headroom as u16,
            len: 0,
            anno: Anno::default(),
        })
    }

    #[inline(always)]
    fn pool(&self) -> &Inner {
        // SAFETY: the pool lives while this packet's buffer is out.
        unsafe { self.pool.as_ref() }
    }

    /// The packet bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        // SAFETY: head + len <= buf_size is kept by every mutator; this
        // packet exclusively owns buffer `idx` until it is dropped.
        unsafe {
            std::slice::from_raw_parts(self.buf.as_ptr().add(self.head as usize), self.len as usize)
        }
    }
    /// The packet bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `data`; `&mut self` gives exclusive access.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.buf.as_ptr().add(self.head as usize),
                self.len as usize,
            )
        }
    }
    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    /// True when the packet holds no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Free bytes in front of the data.
    #[inline]
    pub fn headroom(&self) -> usize {
        self.head as usize
    }
    /// Free bytes after the data.
    #[inline]
    pub fn tailroom(&self) -> usize {
        self.pool().buf_size - self.head as usize - self.len as usize
    }
    /// The buffer's index in its pool's arena.
    pub fn frame_index(&self) -> u32 {
        self.idx
    }
    /// Returns the buffer to its pool now (same as dropping).
    pub fn recycle(self) {}

    /// Grows the packet at the front by `n` bytes (taken from headroom) and
    /// returns the new front bytes (old contents of the headroom).
    #[inline]
    pub fn push_front(&mut self, n: usize) -> Result<&mut [u8], NoRoom> {
        if n > self.head as usize {
            return Err(NoRoom);
        }
        self.head -= n as u16;
        self.len += n as u16;
        Ok(self.data_mut().split_at_mut(n).0)
    }
    /// Removes `n` bytes from the front.
    #[inline]
    pub fn pull_front(&mut self, n: usize) -> Result<(), NoRoom> {
        if n > self.len as usize {
            return Err(NoRoom);
        }
        self.head += n as u16;
        self.len -= n as u16;
        Ok(())
    }
    /// Shortens the packet to `n` bytes (no-op if already shorter).
    #[inline]
    pub fn truncate(&mut self, n: usize) {
        if n < self.len as usize {
            self.len = n as u16;
        }
    }
    /// Sets the length to `n`, growing into tailroom (new bytes hold
    /// whatever the buffer held) or shrinking.
    #[inline]
    pub fn set_len(&mut self, n: usize) -> Result<(), NoRoom> {
        if self.head as usize + n > self.pool().buf_size {
            return Err(NoRoom);
        }
        self.len = n as u16;
        Ok(())
    }
    /// Appends bytes at the tail.
    #[inline]
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), NoRoom> {
        let old = self.len as usize;
        self.set_len(old + bytes.len())?;
        if let Some(t) = self.data_mut().get_mut(old..) {
            t.copy_from_slice(bytes);
        }
        Ok(())
    }
    /// Replaces the contents with `bytes`, resetting the headroom to the
    /// pool default.
    pub fn reset_to(&mut self, bytes: &[u8]) -> Result<(), NoRoom> {
        self.head = self.pool().headroom as u16;
        self.len = 0;
        self.append(bytes)
    }
    /// A copy of this packet (bytes and annotations) in a new buffer from
    /// the same pool; `None` when the pool is empty.
    pub fn try_clone(&self) -> Option<Packet> {
        let mut p = Packet::alloc_in(self.pool)?;
        p.head = self.head;
        p.len = self.len;
        p.data_mut().copy_from_slice(self.data());
        p.anno = self.anno;
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_and_recycle() {
        let pool = Pool::new(4);
        assert_eq!(pool.available(), 4);
        let a = pool.alloc_from(&[1, 2, 3]).unwrap();
        let b = pool.alloc().unwrap();
        assert_ne!(a.frame_index(), b.frame_index());
        assert_eq!(a.data(), &[1, 2, 3]);
        assert_eq!(pool.available(), 2);
        drop(a);
        b.recycle();
        assert_eq!(pool.available(), 4);
        let v: Vec<_> = (0..4).map(|_| pool.alloc().unwrap()).collect();
        assert!(pool.alloc().is_none());
        drop(v);
        assert_eq!(pool.available(), 4);
    }

    #[test]
    fn front_and_tail() {
        let pool = Pool::with_geometry(1, 64, 8).unwrap();
        let mut p = pool.alloc_from(&[9; 10]).unwrap();
        assert_eq!(p.headroom(), 8);
        assert_eq!(p.tailroom(), 46);
        p.push_front(8).unwrap().fill(7);
        assert_eq!(p.len(), 18);
        assert_eq!(p.data()[0], 7);
        assert_eq!(p.push_front(1), Err(NoRoom));
        p.pull_front(8).unwrap();
        assert_eq!(p.data(), &[9; 10]);
        assert_eq!(p.pull_front(11), Err(NoRoom));
        assert!(p.set_len(57).is_err());
        assert!(p.append(&[0; 47]).is_err());
        p.truncate(2);
        assert_eq!(p.len(), 2);
        assert!(pool.alloc_from(&[0; 57]).is_none());
    }

    #[test]
    fn bad_geometry() {
        assert!(Pool::with_geometry(0, 2048, 128).is_err());
        assert!(Pool::with_geometry(1, 100, 100).is_err());
        assert!(Pool::with_geometry(1, 70000, 100).is_err());
    }

    #[test]
    fn packets_outlive_their_pool_handle() {
        // The last packet out frees the pool once every handle is gone
        // (run under Miri or a sanitizer, a leak or use after free shows).
        let pool = Pool::with_geometry(3, 64, 8).unwrap();
        let extra = pool.clone();
        let a = pool.alloc_from(&[1, 2, 3]).unwrap();
        let b = pool.alloc_from(&[4]).unwrap();
        drop(pool);
        assert_eq!(extra.available(), 1);
        drop(extra);
        // No handle left: the packets keep the arena alive and usable.
        let c = a.try_clone().unwrap();
        assert_eq!(c.data(), &[1, 2, 3]);
        assert!(c.try_clone().is_none(), "three buffers out");
        drop(a);
        drop(c);
        assert_eq!(b.data(), &[4]);
        assert_eq!(b.tailroom(), 64 - 8 - 1);
        drop(b);
        // A pool dropped with every buffer home frees at once.
        let p = Pool::new(2);
        drop(p.alloc());
        drop(p);
    }

    #[test]
    fn clone_copies() {
        let pool = Pool::new(2);
        let mut a = pool.alloc_from(&[1, 2]).unwrap();
        a.anno.nh = 5;
        let b = a.try_clone().unwrap();
        a.data_mut()[0] = 3;
        assert_eq!(b.data(), &[1, 2]);
        assert_eq!(b.anno.nh, 5);
        assert!(a.try_clone().is_none());
    }
}
