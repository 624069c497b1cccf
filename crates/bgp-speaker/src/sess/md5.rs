//! TCP-MD5 signatures (RFC 2385) through Linux's `TCP_MD5SIG` socket
//! option: set on a listening socket once per peer address, and on an
//! outgoing socket before `connect`.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;

/// Linux's `struct tcp_md5sig` (include/uapi/linux/tcp.h); libc does not
/// export it.
#[repr(C)]
struct TcpMd5Sig {
    addr: libc::sockaddr_storage,
    flags: u8,
    prefixlen: u8,
    keylen: u16,
    ifindex: u32,
    key: [u8; 80],
}

/// The longest key Linux accepts (`TCP_MD5SIG_MAXKEYLEN`).
pub const MAX_KEY_LEN: usize = 80;

/// Installs (or, with an empty key, removes) the MD5 key for `peer` on
/// socket `fd`.
pub fn set_md5(fd: RawFd, peer: IpAddr, key: &[u8]) -> io::Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("TCP-MD5 key longer than {MAX_KEY_LEN} bytes"),
        ));
    }
    // SAFETY: all-zero bytes are a valid sockaddr_storage and struct.
    let mut sig: TcpMd5Sig = unsafe { std::mem::zeroed() };
    let sa = socket2::SockAddr::from(SocketAddr::new(peer, 0));
    let n = (sa.len() as usize).min(std::mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: copies `n` bytes of a valid sockaddr into the storage, which
    // is at least that large.
    unsafe {
        std::ptr::copy_nonoverlapping(
            sa.as_ptr() as *const u8,
            &mut sig.addr as *mut libc::sockaddr_storage as *mut u8,
            n,
        );
    }
    sig.keylen = key.len() as u16;
    sig.key[..key.len()].copy_from_slice(key);
    // SAFETY: passes a pointer to a properly sized, initialised struct.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_MD5SIG,
            &sig as *const TcpMd5Sig as *const libc::c_void,
            std::mem::size_of::<TcpMd5Sig>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
