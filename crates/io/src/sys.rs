//! Thin, checked wrappers over the few system calls the devices need. Every
//! `unsafe` block in the crate that is not ring arithmetic lives here.

use crate::error::{IoError, Op};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Opens a socket, returning an owned descriptor closed on drop.
pub(crate) fn socket(domain: i32, ty: i32, proto: i32) -> Result<OwnedFd, IoError> {
    // SAFETY: socket(2) takes plain integers and returns a new descriptor or -1.
    let fd = unsafe { libc::socket(domain, ty | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        return Err(IoError::last(Op::Socket));
    }
    // SAFETY: `fd` is a freshly created descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt` with a plain-old-data value.
pub(crate) fn setsockopt<T: Copy>(
    fd: RawFd,
    level: i32,
    name: i32,
    val: &T,
) -> Result<(), IoError> {
    // SAFETY: the pointer and length describe `val`, which lives across the
    // call; the kernel copies at most `size_of::<T>()` bytes from it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (val as *const T).cast(),
            core::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(IoError::last(Op::SetSockOpt));
    }
    Ok(())
}

/// `getsockopt` into a zero-initialised plain-old-data value.
pub(crate) fn getsockopt<T: Copy + Default>(
    fd: RawFd,
    level: i32,
    name: i32,
) -> Result<T, IoError> {
    let mut val = T::default();
    let mut len = core::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the pointer and length describe `val`; the kernel writes at
    // most `len` bytes and updates `len`.
    let rc = unsafe { libc::getsockopt(fd, level, name, (&mut val as *mut T).cast(), &mut len) };
    if rc < 0 {
        return Err(IoError::last(Op::GetSockOpt));
    }
    Ok(val)
}

/// `bind` with a socket address struct of type `T`.
pub(crate) fn bind<T: Copy>(fd: RawFd, addr: &T) -> Result<(), IoError> {
    // SAFETY: `addr` is a valid sockaddr_* of the given size for the call.
    let rc = unsafe {
        libc::bind(
            fd,
            (addr as *const T).cast(),
            core::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(IoError::last(Op::Bind));
    }
    Ok(())
}

/// Interface name to index.
pub fn ifindex(name: &str) -> Result<u32, IoError> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(IoError::NoSuchInterface);
    }
    let c = CString::new(name).map_err(|_| IoError::NoSuchInterface)?;
    // SAFETY: `c` is a valid NUL-terminated string for the call's duration.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        return Err(IoError::NoSuchInterface);
    }
    Ok(idx)
}

/// Kicks a socket's TX path: `sendto(fd, NULL, 0, MSG_DONTWAIT)`. Returns
/// `Ok(true)` when the kernel drained what it could, `Ok(false)` when it
/// asks to be called again (EAGAIN / EBUSY / ENOBUFS are back-pressure, not
/// failures).
pub(crate) fn kick_tx(fd: RawFd) -> Result<bool, IoError> {
    // SAFETY: a zero-length send with a null buffer reads no user memory.
    let rc = unsafe {
        libc::sendto(
            fd,
            core::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            core::ptr::null(),
            0,
        )
    };
    if rc >= 0 {
        return Ok(true);
    }
    let e = IoError::last(Op::Send);
    match e.errno() {
        Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => Ok(false),
        _ => Err(e),
    }
}

/// A shared memory mapping, unmapped on drop.
pub(crate) struct Mmap {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; moving it between
// threads is fine (the device that owns it is used by one thread at a time).
unsafe impl Send for Mmap {}

impl Mmap {
    /// Maps `len` bytes of `fd` at `offset` (a ring), read/write, shared.
    pub(crate) fn of_fd(fd: &OwnedFd, len: usize, offset: i64) -> Result<Self, IoError> {
        Self::map(
            fd.as_raw_fd(),
            len,
            offset,
            libc::MAP_SHARED | libc::MAP_POPULATE,
        )
    }

    /// Maps `len` bytes of anonymous private memory (an AF_XDP UMEM).
    pub(crate) fn anonymous(len: usize) -> Result<Self, IoError> {
        Self::map(
            -1,
            len,
            0,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
        )
    }

    fn map(fd: RawFd, len: usize, offset: i64, flags: i32) -> Result<Self, IoError> {
        if len == 0 {
            return Err(IoError::Config("zero-length mapping"));
        }
        // SAFETY: a fresh mapping at a kernel-chosen address; no existing
        // Rust object is aliased.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(IoError::last(Op::Mmap));
        }
        Ok(Mmap { ptr: p.cast(), len })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; nothing borrows
        // the mapping past the owner's lifetime.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Moves the calling thread into the network namespace at `path` (for
/// example `/var/run/netns/NAME`). Only this thread changes namespace;
/// sockets it opens afterwards belong to that namespace.
pub fn enter_netns(path: &str) -> Result<(), IoError> {
    let f = std::fs::File::open(path).map_err(|e| IoError::Sys {
        op: Op::Open,
        errno: e.raw_os_error().unwrap_or(0),
    })?;
    // SAFETY: setns(2) on a valid namespace descriptor; it changes only the
    // calling thread's namespace.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc < 0 {
        return Err(IoError::last(Op::Setns));
    }
    Ok(())
}

/// Waits up to `timeout_ms` for any of `fds` to become readable.
pub fn poll_many(fds: &[RawFd], timeout_ms: i32) -> Result<bool, IoError> {
    let mut p = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 16];
    let n = fds.len().min(p.len());
    for (slot, fd) in p.iter_mut().zip(fds) {
        slot.fd = *fd;
    }
    // SAFETY: `n` initialised pollfds that live across the call.
    let rc = unsafe { libc::poll(p.as_mut_ptr(), n as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let e = IoError::last(Op::Poll);
        return if e.errno() == Some(libc::EINTR) {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0)
}
