//! Export of resolved routes into the Linux kernel over rtnetlink (raw
//! `AF_NETLINK` socket, no library), for users who forward with Linux:
//! what BIRD's `kernel` protocol does.
//!
//! Routes are written in batches: many `RTM_NEWROUTE` (create/replace) and
//! `RTM_DELROUTE` messages in one `sendto`, each with `NLM_F_ACK`, then the
//! acknowledgements are read back and counted (rtnetlink(7), netlink(7)).
//! Routes carry protocol `RTPROT_BGP` (186) so `ip route show proto bgp`
//! lists them, a gateway and an output interface. Everything exported is
//! remembered and withdrawn by [`Exporter::withdraw_all`] (at shutdown),
//! unless `persist` is set (BIRD's `kernel { persist; }`).
//!
//! Graceful restart (RFC 4724 §4.1, `tesserad -R`): [`Exporter::adopt`]
//! dumps the routes of protocol 186 with our table and metric
//! (`RTM_GETROUTE` dump) and takes them as installed but stale: they stay
//! in the kernel while selection is deferred, the first full sync
//! replaces the still-selected ones in place (`NLM_F_REPLACE`, never a
//! delete and an add), and [`Exporter::sweep`] deletes the stale ones that
//! were not selected again.

use std::collections::HashSet;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use base::Prefix;

const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_GETROUTE: u16 = 26;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
/// `RTM_F_CLONED`: an IPv6 route cache entry, not a FIB route.
const RTM_F_CLONED: u32 = 0x200;
const NLM_F_ACK: u16 = 4;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_CREATE: u16 = 0x400;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_MULTIPATH: u16 = 9;
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
    /// Leave the routes in the kernel when stopped (`kernel_persist`).
    pub persist: bool,
    /// Graceful restart: adopt the routes a previous run left (see
    /// [`Exporter::adopt`]) when the dataplane starts.
    pub adopt: bool,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            table: 254,
            metric: 20,
            persist: false,
            adopt: false,
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
    /// Adopted at a graceful restart and not selected again yet.
    stale: HashSet<Prefix>,
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
            stale: HashSet::new(),
            last_error: 0,
        })
    }

    fn message(&mut self, p: Prefix, via: &[(u16, IpAddr)]) {
        let start = self.buf.len();
        let (ty, flags) = match via.first() {
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
        match via {
            [] => {}
            [(port, gw)] => {
                let (g, n) = addr_bytes(*gw);
                put_attr(&mut self.buf, RTA_GATEWAY, &g[..n]);
                if let Some(ix) = self.ifindex.get(usize::from(*port)) {
                    put_attr(&mut self.buf, RTA_OIF, &ix.to_ne_bytes());
                }
            }
            several => {
                // rtnetlink(7) RTA_MULTIPATH: one `struct rtnexthop`
                // {len u16, flags u8, hops u8, ifindex i32} per next hop,
                // each followed by its RTA_GATEWAY, 4-byte aligned.
                let mut mp = Vec::with_capacity(several.len() * 28);
                for &(port, gw) in several {
                    let at = mp.len();
                    let ix = self.ifindex.get(usize::from(port)).copied().unwrap_or(0);
                    mp.extend_from_slice(&0u16.to_ne_bytes());
                    mp.extend_from_slice(&[0, 0]);
                    mp.extend_from_slice(&ix.to_ne_bytes());
                    let (g, n) = addr_bytes(gw);
                    put_attr(&mut mp, RTA_GATEWAY, &g[..n]);
                    let len = (mp.len() - at) as u16;
                    if let Some(h) = mp.get_mut(at..at + 2) {
                        h.copy_from_slice(&len.to_ne_bytes());
                    }
                }
                put_attr(&mut self.buf, RTA_MULTIPATH, &mp);
            }
        }
        let len = (self.buf.len() - start) as u32;
        if let Some(h) = self.buf.get_mut(start..start + 4) {
            h.copy_from_slice(&len.to_ne_bytes());
        }
        self.pending += 1;
    }

    /// Writes `changes` (prefix and its (port, gateway) next hops: one, or
    /// several for a multipath route, RTA_MULTIPATH; none to remove) in
    /// batches; returns (acknowledged, failed) counts.
    pub fn apply(&mut self, changes: &[(Prefix, Vec<(u16, IpAddr)>)]) -> (u64, u64) {
        let (mut ok, mut err) = (0, 0);
        for (p, via) in changes {
            let p = *p;
            if via.is_empty() && !self.installed.contains(&p) {
                continue;
            }
            self.message(p, via);
            self.stale.remove(&p);
            match via.first() {
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

    /// Removes every route this exporter installed, unless the
    /// configuration says to keep them (`persist`): then nothing.
    pub fn withdraw_all(&mut self) -> (u64, u64) {
        if self.cfg.persist {
            return (0, 0);
        }
        let all: Vec<_> = self.installed.iter().map(|p| (*p, Vec::new())).collect();
        self.apply(&all)
    }

    /// Graceful restart: takes the routes a previous run left in the
    /// kernel (protocol 186, our table and metric) as installed and stale.
    /// Returns how many IPv4 and IPv6 routes were adopted.
    pub fn adopt(&mut self) -> Result<(usize, usize), KernelError> {
        let mut n = (0, 0);
        for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            for p in self.dump(family)? {
                if self.installed.insert(p) {
                    self.stale.insert(p);
                    match p {
                        Prefix::V4(_) => n.0 += 1,
                        Prefix::V6(_) => n.1 += 1,
                    }
                }
            }
        }
        Ok(n)
    }

    /// The first full sync after a graceful restart is done: deletes the
    /// adopted routes that were not selected again. Returns (acknowledged,
    /// failed) counts.
    pub fn sweep(&mut self) -> (u64, u64) {
        let gone: Vec<_> = self.stale.drain().map(|p| (p, Vec::new())).collect();
        self.apply(&gone)
    }

    /// Adopted routes not selected again yet.
    pub fn stale(&self) -> usize {
        self.stale.len()
    }

    /// Our routes of `family` in the kernel now (`RTM_GETROUTE` dump).
    fn dump(&mut self, family: u8) -> Result<Vec<Prefix>, KernelError> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut req = Vec::with_capacity(28);
        req.extend_from_slice(&28u32.to_ne_bytes());
        req.extend_from_slice(&RTM_GETROUTE.to_ne_bytes());
        req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req.extend_from_slice(&seq.to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        req.extend_from_slice(&[family, 0, 0, 0, 0, 0, 0, 0]);
        req.extend_from_slice(&0u32.to_ne_bytes());
        // SAFETY: zeroed sockaddr_nl addresses the kernel (pid 0).
        let mut sa: libc::sockaddr_nl = unsafe { core::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: req is a valid byte buffer; sa a valid sockaddr_nl.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                req.as_ptr().cast(),
                req.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                core::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc < 0 {
            return Err(KernelError::Send(errno()));
        }
        let mut out = Vec::new();
        let mut rb = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: rb is a writable buffer of its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), rb.as_mut_ptr().cast(), rb.len(), 0) };
            if n <= 0 {
                return Err(KernelError::Recv(errno()));
            }
            let got = rb.get(..n as usize).unwrap_or(&[]);
            match parse_dump(got, seq, &self.cfg, &mut out) {
                DumpPart::More => {}
                DumpPart::Done => return Ok(out),
                DumpPart::Error(e) => return Err(KernelError::Recv(e)),
            }
        }
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

/// What one datagram of a route dump said.
#[derive(Debug, PartialEq, Eq)]
enum DumpPart {
    More,
    Done,
    /// The kernel refused the dump (positive errno).
    Error(i32),
}

fn ne_u16(b: &[u8], at: usize) -> Option<u16> {
    let x = b.get(at..at + 2)?;
    Some(u16::from_ne_bytes([x[0], x[1]]))
}

fn ne_u32(b: &[u8], at: usize) -> Option<u32> {
    let x = b.get(at..at + 4)?;
    Some(u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
}

/// Parses one datagram of an `RTM_GETROUTE` dump answering `seq`, adding
/// to `out` each unicast route of protocol 186 in `cfg`'s table with
/// `cfg`'s metric. Anything short, odd or foreign is skipped: kernel
/// input never panics.
fn parse_dump(b: &[u8], seq: u32, cfg: &KernelConfig, out: &mut Vec<Prefix>) -> DumpPart {
    let mut off = 0usize;
    while let (Some(len), Some(ty), Some(mseq)) =
        (ne_u32(b, off), ne_u16(b, off + 4), ne_u32(b, off + 8))
    {
        let len = len as usize;
        if len < 16 || off + len > b.len() {
            break;
        }
        let msg = &b[off..off + len];
        off += (len + 3) & !3;
        if mseq != seq {
            continue;
        }
        match ty {
            NLMSG_DONE => return DumpPart::Done,
            NLMSG_ERROR => {
                let code = ne_u32(msg, 16).map_or(-1, |c| c as i32);
                if code != 0 {
                    return DumpPart::Error(-code);
                }
                return DumpPart::Done;
            }
            RTM_NEWROUTE => {
                if let Some(p) = route_of(msg, cfg) {
                    out.push(p);
                }
            }
            _ => {}
        }
    }
    DumpPart::More
}

/// The destination of one `RTM_NEWROUTE` message, when it is ours.
fn route_of(msg: &[u8], cfg: &KernelConfig) -> Option<Prefix> {
    let rtm = msg.get(16..28)?;
    let (family, dst_len, table8, proto, ty) = (rtm[0], rtm[1], rtm[4], rtm[5], rtm[7]);
    let flags = u32::from_ne_bytes([rtm[8], rtm[9], rtm[10], rtm[11]]);
    if proto != RTPROT_BGP || ty != RTN_UNICAST || flags & RTM_F_CLONED != 0 {
        return None;
    }
    let (mut table, mut metric, mut dst) = (u32::from(table8), 0u32, None);
    let mut off = 28usize;
    while let (Some(alen), Some(aty)) = (ne_u16(msg, off), ne_u16(msg, off + 2)) {
        let alen = usize::from(alen);
        if alen < 4 || off + alen > msg.len() {
            break;
        }
        let data = &msg[off + 4..off + alen];
        match aty {
            RTA_TABLE => table = ne_u32(data, 0)?,
            RTA_PRIORITY => metric = ne_u32(data, 0)?,
            RTA_DST => dst = Some(data),
            _ => {}
        }
        off += (alen + 3) & !3;
    }
    if table != cfg.table || metric != cfg.metric {
        return None;
    }
    let addr = match (family, dst) {
        (f, Some(d)) if i32::from(f) == libc::AF_INET => {
            let o: [u8; 4] = d.get(..4)?.try_into().ok()?;
            IpAddr::from(o)
        }
        (f, Some(d)) if i32::from(f) == libc::AF_INET6 => {
            let o: [u8; 16] = d.get(..16)?.try_into().ok()?;
            IpAddr::from(o)
        }
        (f, None) if i32::from(f) == libc::AF_INET => IpAddr::from([0u8; 4]),
        (f, None) if i32::from(f) == libc::AF_INET6 => IpAddr::from([0u8; 16]),
        _ => return None,
    };
    Prefix::new(addr, dst_len).ok().map(|p| p.masked())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `RTM_NEWROUTE` message as the kernel dumps it.
    fn route(
        seq: u32,
        family: u8,
        dst: &[u8],
        len: u8,
        proto: u8,
        table: u32,
        metric: u32,
    ) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&RTM_NEWROUTE.to_ne_bytes());
        b.extend_from_slice(&2u16.to_ne_bytes());
        b.extend_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&[family, len, 0, 0, 254, proto, 0, RTN_UNICAST]);
        b.extend_from_slice(&0u32.to_ne_bytes());
        put_attr(&mut b, RTA_TABLE, &table.to_ne_bytes());
        put_attr(&mut b, RTA_DST, dst);
        put_attr(&mut b, RTA_PRIORITY, &metric.to_ne_bytes());
        put_attr(&mut b, RTA_GATEWAY, &[198, 18, 1, 2]);
        let n = b.len() as u32;
        b[..4].copy_from_slice(&n.to_ne_bytes());
        b
    }

    fn done(seq: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&20u32.to_ne_bytes());
        b.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        b.extend_from_slice(&2u16.to_ne_bytes());
        b.extend_from_slice(&seq.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        b
    }

    /// Only unicast routes of protocol 186 in our table with our metric
    /// are ours; another protocol (FRR's zebra also uses 186, but BIRD
    /// 12), table or metric, or another dump's sequence, is not.
    #[test]
    fn dump_keeps_only_our_routes() {
        let cfg = KernelConfig::default();
        let v6: [u8; 16] = "2001:db8:ff01::"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets();
        let mut b = Vec::new();
        b.extend(route(
            7,
            libc::AF_INET as u8,
            &[198, 19, 1, 0],
            24,
            RTPROT_BGP,
            254,
            20,
        ));
        b.extend(route(
            7,
            libc::AF_INET as u8,
            &[198, 19, 2, 0],
            24,
            12,
            254,
            20,
        ));
        b.extend(route(
            7,
            libc::AF_INET as u8,
            &[198, 19, 3, 0],
            24,
            RTPROT_BGP,
            100,
            20,
        ));
        b.extend(route(
            7,
            libc::AF_INET as u8,
            &[198, 19, 4, 0],
            24,
            RTPROT_BGP,
            254,
            30,
        ));
        b.extend(route(
            6,
            libc::AF_INET as u8,
            &[198, 19, 5, 0],
            24,
            RTPROT_BGP,
            254,
            20,
        ));
        b.extend(route(7, libc::AF_INET6 as u8, &v6, 48, RTPROT_BGP, 254, 20));
        let mut out = Vec::new();
        assert_eq!(parse_dump(&b, 7, &cfg, &mut out), DumpPart::More);
        assert_eq!(
            out,
            vec![
                "198.19.1.0/24".parse::<Prefix>().unwrap(),
                "2001:db8:ff01::/48".parse::<Prefix>().unwrap()
            ]
        );
        assert_eq!(parse_dump(&done(7), 7, &cfg, &mut out), DumpPart::Done);
    }

    /// Truncated, zero-length and oversized messages and attributes end
    /// the parse of the datagram without a panic.
    #[test]
    fn dump_survives_garbage() {
        let cfg = KernelConfig::default();
        let good = route(
            1,
            libc::AF_INET as u8,
            &[198, 19, 1, 0],
            24,
            RTPROT_BGP,
            254,
            20,
        );
        for cut in 0..good.len() {
            let mut out = Vec::new();
            let _ = parse_dump(&good[..cut], 1, &cfg, &mut out);
            assert!(out.is_empty(), "cut at {cut}");
            let mut bad = good.clone();
            bad[cut] = 0xff;
            let _ = parse_dump(&bad, 1, &cfg, &mut out);
        }
        // A destination shorter than its family's address.
        let short = route(
            1,
            libc::AF_INET6 as u8,
            &[0x20, 0x01],
            32,
            RTPROT_BGP,
            254,
            20,
        );
        let mut out = Vec::new();
        assert_eq!(parse_dump(&short, 1, &cfg, &mut out), DumpPart::More);
        assert!(out.is_empty());
    }
}
