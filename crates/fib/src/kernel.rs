//! Export of resolved routes into the Linux kernel over rtnetlink (raw
//! `AF_NETLINK` socket, no library), for users who forward with Linux:
//! what BIRD's `kernel` protocol does.
//!
//! Routes are written in batches: many `RTM_NEWROUTE` (create/replace) and
//! `RTM_DELROUTE` messages in one `sendto`, each with `NLM_F_ACK`, then the
//! acknowledgements are read back and counted (rtnetlink(7), netlink(7)).
//! Routes carry protocol `RTPROT_BGP` (186) so `ip route show proto bgp`
//! lists them, a gateway and an output interface. Everything exported is
//! remembered and withdrawn by [`Exporter::withdraw_all`] (at shutdown).

use std::collections::HashSet;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use base::Prefix;

const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_CREATE: u16 = 0x400;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_TABLE: u16 = 15;
/// `RTPROT_BGP` from `linux/rtnetlink.h`.
pub const RTPROT_BGP: u8 = 186;
const RTN_UNICAST: u8 = 1;
/// Flush a batch when it reaches this many bytes.
const BATCH_BYTES: usize = 32 * 1024;

/// Where and how routes go into the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelConfig {
    /// Routing table id (254 = main).
    pub table: u32,
    /// Route metric (priority).
    pub metric: u32,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            table: 254,
            metric: 20,
        }
    }
}

/// Why the netlink socket failed (`errno`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    Socket(i32),
    Send(i32),
    Recv(i32),
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A netlink route writer.
pub struct Exporter {
    fd: OwnedFd,
    cfg: KernelConfig,
    /// Kernel ifindex of each dataplane port.
    ifindex: Vec<u32>,
    seq: u32,
    buf: Vec<u8>,
    pending: u32,
    installed: HashSet<Prefix>,
    /// The last netlink error code seen (negative errno), for diagnosis.
    pub last_error: i32,
}

fn put_attr(b: &mut Vec<u8>, ty: u16, data: &[u8]) {
    let len = 4 + data.len();
    b.extend_from_slice(&(len as u16).to_ne_bytes());
    b.extend_from_slice(&ty.to_ne_bytes());
    b.extend_from_slice(data);
    while b.len() % 4 != 0 {
        b.push(0);
    }
}

fn addr_bytes(a: IpAddr) -> ([u8; 16], usize) {
    let mut o = [0u8; 16];
    match a {
        IpAddr::V4(v) => {
            o[..4].copy_from_slice(&v.octets());
            (o, 4)
        }
        IpAddr::V6(v) => (v.octets(), 16),
    }
}

impl Exporter {
    /// Opens an rtnetlink socket; `ifindex[i]` is port `i`'s interface.
    pub fn open(cfg: KernelConfig, ifindex: Vec<u32>) -> Result<Self, KernelError> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(KernelError::Socket(errno()));
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: zeroed sockaddr_nl is valid (pid 0: the kernel assigns).
        let mut sa: libc::sockaddr_nl = unsafe { core::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: `sa` is a valid sockaddr_nl of the given size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                core::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc < 0 {
            return Err(KernelError::Socket(errno()));
        }
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: SO_RCVTIMEO takes a timeval; sizes match.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                core::mem::size_of::<libc::timeval>() as u32,
            )
        };
        Ok(Exporter {
            fd,
            cfg,
            ifindex,
            seq: 1,
            buf: Vec::with_capacity(BATCH_BYTES + 256),
            pending: 0,
            installed: HashSet::new(),
            last_error: 0,
        })
    }

    fn message(&mut self, p: Prefix, via: Option<(u16, IpAddr)>) {
        let start = self.buf.len();
        let (ty, flags) = match via {
            Some(_) => (
                RTM_NEWROUTE,
                NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
            ),
            None => (RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK),
        };
        self.seq = self.seq.wrapping_add(1);
        // nlmsghdr; the length is patched below.
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(&flags.to_ne_bytes());
        self.buf.extend_from_slice(&self.seq.to_ne_bytes());
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        // rtmsg
        let family = match p {
            Prefix::V4(_) => libc::AF_INET as u8,
            Prefix::V6(_) => libc::AF_INET6 as u8,
        };
        let table8 = u8::try_from(self.cfg.table).unwrap_or(252); // RT_TABLE_COMPAT
        self.buf.extend_from_slice(&[
            family,
            p.len(),
            0,
            0,
            table8,
            RTPROT_BGP,
            0, // RT_SCOPE_UNIVERSE
            RTN_UNICAST,
        ]);
        self.buf.extend_from_slice(&0u32.to_ne_bytes());
        let (dst, n) = addr_bytes(p.masked().addr());
        put_attr(&mut self.buf, RTA_DST, &dst[..n]);
        put_attr(&mut self.buf, RTA_TABLE, &self.cfg.table.to_ne_bytes());
        put_attr(&mut self.buf, RTA_PRIORITY, &self.cfg.metric.to_ne_bytes());
        if let Some((port, gw)) = via {
            let (g, n) = addr_bytes(gw);
            put_attr(&mut self.buf, RTA_GATEWAY, &g[..n]);
            if let Some(ix) = self.ifindex.get(usize::from(port)) {
                put_attr(&mut self.buf, RTA_OIF, &ix.to_ne_bytes());
            }
        }
        let len = (self.buf.len() - start) as u32;
        if let Some(h) = self.buf.get_mut(start..start + 4) {
            h.copy_from_slice(&len.to_ne_bytes());
        }
        self.pending += 1;
    }

    /// Writes `changes` (prefix, `Some((port, gateway))` or `None` to
    /// remove) in batches; returns (acknowledged, failed) counts.
    pub fn apply(&mut self, changes: &[(Prefix, Option<(u16, IpAddr)>)]) -> (u64, u64) {
        let (mut ok, mut err) = (0, 0);
        for &(p, via) in changes {
            if via.is_none() && !self.installed.contains(&p) {
                continue;
            }
            self.message(p, via);
            match via {
                Some(_) => self.installed.insert(p),
                None => self.installed.remove(&p),
            };
            if self.buf.len() >= BATCH_BYTES {
                let (o, e) = self.flush();
                ok += o;
                err += e;
            }
        }
        let (o, e) = self.flush();
        (ok + o, err + e)
    }

    /// Removes every route this exporter installed.
    pub fn withdraw_all(&mut self) -> (u64, u64) {
        let all: Vec<_> = self.installed.iter().map(|p| (*p, None)).collect();
        self.apply(&all)
    }

    /// Prefixes currently installed by us.
    pub fn installed(&self) -> usize {
        self.installed.len()
    }

    fn flush(&mut self) -> (u64, u64) {
        if self.pending == 0 {
            return (0, 0);
        }
        let want = self.pending;
        self.pending = 0;
        // SAFETY: zeroed sockaddr_nl addresses the kernel (pid 0).
        let mut sa: libc::sockaddr_nl = unsafe { core::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: buf is a valid byte buffer; sa a valid sockaddr_nl.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                self.buf.as_ptr().cast(),
                self.buf.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                core::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        self.buf.clear();
        if rc < 0 {
            self.last_error = -errno();
            return (0, u64::from(want));
        }
        let (mut ok, mut err) = (0u64, 0u64);
        let mut rb = vec![0u8; 64 * 1024];
        while ok + err < u64::from(want) {
            // SAFETY: rb is a writable buffer of its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), rb.as_mut_ptr().cast(), rb.len(), 0) };
            if n <= 0 {
                self.last_error = -errno();
                err += u64::from(want) - ok - err;
                break;
            }
            let mut off = 0usize;
            let n = n as usize;
            while off + 16 <= n {
                let Some(h) = rb.get(off..off + 16) else {
                    break;
                };
                let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
                let ty = u16::from_ne_bytes([h[4], h[5]]);
                if len < 16 {
                    break;
                }
                if ty == NLMSG_ERROR {
                    let code = rb
                        .get(off + 16..off + 20)
                        .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                        .unwrap_or(-1);
                    if code == 0 {
                        ok += 1;
                    } else {
                        self.last_error = code;
                        err += 1;
                    }
                }
                off += (len + 3) & !3;
            }
        }
        (ok, err)
    }
}
