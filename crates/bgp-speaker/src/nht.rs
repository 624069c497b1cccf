//! Next-hop tracking, the runtime half (`router.next_hop_tracking`): a
//! copy of the kernel's routing table read over rtnetlink, the resolution
//! of BGP next hops against it, and the watcher thread that follows the
//! table's changes and tells every RIB part which next hops changed.
//!
//! The pure half is in `bgp-rib`/`bgp-core`: a RIB part lists the next hops
//! it starts and stops using in `Outbox::nexthops`; the RIB thread resolves
//! the new ones at once through [`Tracker::track`] (under the tracker's
//! lock, so a change the watcher applies is either seen here or sent
//! afterwards) and feeds the answer back with `RibCore::nexthop_update`
//! before the next export round. The watcher blocks on the netlink socket
//! (subscribed to `RTNLGRP_IPV4_ROUTE` and `RTNLGRP_IPV6_ROUTE`), applies
//! each `RTM_NEWROUTE`/`RTM_DELROUTE` to the copy, re-resolves the tracked
//! next hops the changed prefix covers, and sends a
//! [`RibMsg::Nexthop`] to every RIB part for each whose state changed.
//!
//! Resolution (documented in `docs/config.md`, "Next-hop tracking"): the
//! longest-matching route of the main and local tables that is not a BGP
//! route (protocol 186, which tesserad's own kernel export uses: no
//! resolution through our own BGP routes) and not a default route; among
//! routes of that length the lowest metric. A unicast route resolves at
//! its metric, or at 0 without a gateway (directly connected); a local
//! route (one of our addresses) at 0; a blackhole/unreachable/prohibit
//! route makes the next hop unreachable.
//!
//! Raw `AF_NETLINK` through libc, as `fib::kernel` writes routes: the
//! workspace has no netlink crate, and the part of rtnetlink used here is
//! a fixed header and a few attributes.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bgp_core::NexthopUpdate;
use tracing::{debug, warn};

const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_GETROUTE: u16 = 26;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const RTA_DST: u16 = 1;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_MULTIPATH: u16 = 9;
const RTA_TABLE: u16 = 15;
const RTA_VIA: u16 = 18;
const RTN_UNICAST: u8 = 1;
const RTN_LOCAL: u8 = 2;
const RTN_BLACKHOLE: u8 = 6;
const RTN_UNREACHABLE: u8 = 7;
const RTN_PROHIBIT: u8 = 8;
/// `RTPROT_BGP`: what tesserad's kernel export (`fib::kernel`) and other
/// BGP daemons install with.
pub const RTPROT_BGP: u8 = 186;
const RT_TABLE_MAIN: u32 = 254;
const RT_TABLE_LOCAL: u32 = 255;
/// `RTNLGRP_IPV4_ROUTE` (7) and `RTNLGRP_IPV6_ROUTE` (11) as bind(2) group bits.
const GROUPS: u32 = (1 << (7 - 1)) | (1 << (11 - 1));

/// How a matching route resolves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// Reachable at this cost.
    Reach(u32),
    /// Blackhole, unreachable, prohibit.
    Reject,
}

/// One kernel route as far as resolution cares.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct KRoute {
    table: u32,
    metric: u32,
    kind: Kind,
}

/// A route change read from netlink.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct RouteMsg {
    add: bool,
    addr: IpAddr,
    len: u8,
    route: KRoute,
}

/// The copy of the kernel's routing table (only routes that may resolve
/// a next hop), by prefix length then masked address.
#[derive(Debug, Default)]
struct Table {
    v4: Vec<HashMap<u32, Vec<KRoute>>>,
    v6: Vec<HashMap<u128, Vec<KRoute>>>,
}

fn mask4(a: u32, len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        a & (u32::MAX << (32 - u32::from(len.min(32))))
    }
}

fn mask6(a: u128, len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        a & (u128::MAX << (128 - u32::from(len.min(128))))
    }
}

fn apply_to<K: std::hash::Hash + Eq>(m: &mut HashMap<K, Vec<KRoute>>, k: K, msg: &RouteMsg) {
    let same = |r: &KRoute| r.table == msg.route.table && r.metric == msg.route.metric;
    if msg.add {
        let v = m.entry(k).or_default();
        match v.iter_mut().find(|r| same(r)) {
            Some(r) => *r = msg.route,
            None => v.push(msg.route),
        }
    } else if let Some(v) = m.get_mut(&k) {
        v.retain(|r| !same(r));
        if v.is_empty() {
            m.remove(&k);
        }
    }
}

/// The best of the routes of one prefix: the lowest metric.
fn best(v: &[KRoute]) -> Option<Kind> {
    v.iter().min_by_key(|r| r.metric).map(|r| r.kind)
}

impl Table {
    fn new() -> Table {
        Table {
            v4: (0..=32).map(|_| HashMap::new()).collect(),
            v6: (0..=128).map(|_| HashMap::new()).collect(),
        }
    }

    fn apply(&mut self, msg: &RouteMsg) {
        match msg.addr {
            IpAddr::V4(a) => {
                if let Some(m) = self.v4.get_mut(usize::from(msg.len)) {
                    apply_to(m, mask4(u32::from(a), msg.len), msg);
                }
            }
            IpAddr::V6(a) => {
                if let Some(m) = self.v6.get_mut(usize::from(msg.len)) {
                    apply_to(m, mask6(u128::from(a), msg.len), msg);
                }
            }
        }
    }

    /// The resolution of `nh`: the longest match, default routes excluded.
    fn resolve(&self, nh: IpAddr) -> (bool, u32) {
        let kind = match nh {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                (1..=32u8)
                    .rev()
                    .find_map(|len| best(self.v4.get(usize::from(len))?.get(&mask4(a, len))?))
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                (1..=128u8)
                    .rev()
                    .find_map(|len| best(self.v6.get(usize::from(len))?.get(&mask6(a, len))?))
            }
        };
        match kind {
            Some(Kind::Reach(c)) => (true, c),
            _ => (false, 0),
        }
    }

    fn clear(&mut self) {
        for m in &mut self.v4 {
            m.clear();
        }
        for m in &mut self.v6 {
            m.clear();
        }
    }
}

/// Whether `nh` is inside `addr/len`.
fn covers(addr: IpAddr, len: u8, nh: IpAddr) -> bool {
    match (addr, nh) {
        (IpAddr::V4(p), IpAddr::V4(a)) => mask4(u32::from(a), len) == mask4(u32::from(p), len),
        (IpAddr::V6(p), IpAddr::V6(a)) => mask6(u128::from(a), len) == mask6(u128::from(p), len),
        _ => false,
    }
}

#[derive(Debug, Default)]
struct Inner {
    table: Table,
    /// Tracked next hops: how many RIB parts use each, and the state they
    /// were last told.
    tracked: HashMap<IpAddr, (u32, bool, u32)>,
}

impl Inner {
    /// Applies a route change; returns the tracked next hops whose state
    /// changed, with the new state.
    fn apply(&mut self, msg: &RouteMsg, out: &mut Vec<NexthopUpdate>) {
        self.table.apply(msg);
        for (nh, (_, reach, cost)) in self.tracked.iter_mut() {
            if !covers(msg.addr, msg.len, *nh) {
                continue;
            }
            let (r, c) = self.table.resolve(*nh);
            if (r, c) != (*reach, *cost) {
                *reach = r;
                *cost = c;
                out.push(NexthopUpdate {
                    nexthop: *nh,
                    reachable: r,
                    igp_cost: c,
                });
            }
        }
    }

    /// After a re-read of the whole table: every tracked next hop again.
    fn resolve_all(&mut self, out: &mut Vec<NexthopUpdate>) {
        for (nh, (_, reach, cost)) in self.tracked.iter_mut() {
            let (r, c) = self.table.resolve(*nh);
            if (r, c) != (*reach, *cost) {
                *reach = r;
                *cost = c;
                out.push(NexthopUpdate {
                    nexthop: *nh,
                    reachable: r,
                    igp_cost: c,
                });
            }
        }
    }
}

/// The shared resolver (see the module docs).
#[derive(Debug, Default)]
pub struct Tracker {
    inner: Mutex<Inner>,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A RIB part starts using `nh`: its state now.
    pub fn track(&self, nh: IpAddr) -> NexthopUpdate {
        let mut g = self.lock();
        let (reachable, igp_cost) = g.table.resolve(nh);
        let e = g.tracked.entry(nh).or_insert((0, reachable, igp_cost));
        e.0 += 1;
        NexthopUpdate {
            nexthop: nh,
            reachable: e.1,
            igp_cost: e.2,
        }
    }

    /// A RIB part stopped using `nh`.
    pub fn untrack(&self, nh: IpAddr) {
        let mut g = self.lock();
        if let Some(e) = g.tracked.get_mut(&nh) {
            e.0 = e.0.saturating_sub(1);
            if e.0 == 0 {
                g.tracked.remove(&nh);
            }
        }
    }
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A netlink route socket subscribed to route changes.
struct Socket {
    fd: OwnedFd,
    buf: Vec<u8>,
}

impl Socket {
    fn open() -> std::io::Result<Socket> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(errno());
        }
        // SAFETY: `fd` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // A big receive buffer: a burst of route changes must not overflow
        // it (ENOBUFS makes us read the whole table again). FORCE needs
        // CAP_NET_ADMIN; without it the plain option is capped by rmem_max.
        let size: libc::c_int = 8 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: the option takes an int; sizes match.
            let rc = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as u32,
                )
            };
            if rc == 0 {
                break;
            }
        }
        // SAFETY: zeroed sockaddr_nl is valid; pid 0 lets the kernel assign.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        sa.nl_groups = GROUPS;
        // SAFETY: `sa` is a valid sockaddr_nl of the given size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc < 0 {
            return Err(errno());
        }
        Ok(Socket {
            fd,
            buf: vec![0; 1 << 16],
        })
    }

    /// Asks for every route (both families).
    fn request_dump(&self) -> std::io::Result<()> {
        let mut m = Vec::with_capacity(28);
        m.extend_from_slice(&28u32.to_ne_bytes());
        m.extend_from_slice(&RTM_GETROUTE.to_ne_bytes());
        m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        m.extend_from_slice(&1u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        // rtmsg: family AF_UNSPEC, everything else 0.
        m.extend_from_slice(&[0u8; 12]);
        // SAFETY: zeroed sockaddr_nl addresses the kernel.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: `m` is a valid buffer; `sa` a valid sockaddr_nl.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                m.as_ptr().cast(),
                m.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if rc < 0 {
            return Err(errno());
        }
        Ok(())
    }

    /// Blocks for one datagram; hands each route message to `f` and
    /// returns whether it held the end of a dump.
    fn recv(&mut self, mut f: impl FnMut(RouteMsg)) -> std::io::Result<bool> {
        // SAFETY: `buf` is a writable buffer of its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                self.buf.as_mut_ptr().cast(),
                self.buf.len(),
                0,
            )
        };
        if n < 0 {
            return Err(errno());
        }
        let data = self.buf.get(..n as usize).unwrap_or_default();
        Ok(parse_messages(data, &mut f))
    }
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

/// Walks the netlink messages of one datagram; returns whether it held
/// NLMSG_DONE (or an error answer to the dump).
fn parse_messages(mut data: &[u8], f: &mut impl FnMut(RouteMsg)) -> bool {
    let mut done = false;
    while data.len() >= 16 {
        let (Some(len), Some(ty)) = (u32_at(data, 0), u16_at(data, 4)) else {
            break;
        };
        let len = len as usize;
        if len < 16 || len > data.len() {
            break;
        }
        let body = data.get(16..len).unwrap_or_default();
        match ty {
            RTM_NEWROUTE | RTM_DELROUTE => {
                if let Some(m) = parse_route(ty == RTM_NEWROUTE, body) {
                    f(m);
                }
            }
            NLMSG_DONE | NLMSG_ERROR => done = true,
            _ => {}
        }
        data = data.get((len + 3) & !3..).unwrap_or_default();
    }
    done
}

/// One `rtmsg` and its attributes; `None` for routes that cannot resolve
/// a next hop (other tables, BGP routes, default routes, broadcast...).
fn parse_route(add: bool, b: &[u8]) -> Option<RouteMsg> {
    let hdr = b.get(..12)?;
    let (family, dst_len, table8, proto, rtype) = (hdr[0], hdr[1], hdr[4], hdr[5], hdr[7]);
    if proto == RTPROT_BGP || dst_len == 0 {
        return None;
    }
    let mut table = u32::from(table8);
    let mut dst = None;
    let mut metric = 0u32;
    let mut gateway = false;
    let mut attrs = b.get(12..).unwrap_or_default();
    while attrs.len() >= 4 {
        let alen = usize::from(u16_at(attrs, 0)?);
        let aty = u16_at(attrs, 2)? & 0x3fff;
        if alen < 4 || alen > attrs.len() {
            break;
        }
        let v = attrs.get(4..alen).unwrap_or_default();
        match aty {
            RTA_DST => dst = Some(v),
            RTA_PRIORITY => metric = u32_at(v, 0).unwrap_or(0),
            RTA_TABLE => table = u32_at(v, 0).unwrap_or(table),
            RTA_GATEWAY | RTA_VIA => gateway = true,
            // Multipath: reachable through gateways (the kernel sends
            // multipath only for routes with several next hops).
            RTA_MULTIPATH => gateway = true,
            _ => {}
        }
        attrs = attrs.get((alen + 3) & !3..).unwrap_or_default();
    }
    if table != RT_TABLE_MAIN && table != RT_TABLE_LOCAL {
        return None;
    }
    let kind = match rtype {
        RTN_UNICAST => Kind::Reach(if gateway { metric } else { 0 }),
        RTN_LOCAL => Kind::Reach(0),
        RTN_BLACKHOLE | RTN_UNREACHABLE | RTN_PROHIBIT => Kind::Reject,
        _ => return None,
    };
    let dst = dst?;
    let addr = match i32::from(family) {
        libc::AF_INET => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(dst).ok()?)),
        libc::AF_INET6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(dst).ok()?)),
        _ => return None,
    };
    Some(RouteMsg {
        add,
        addr,
        len: dst_len,
        route: KRoute {
            table,
            metric,
            kind,
        },
    })
}

/// Reads the whole table through `sock` into `inner` (route changes that
/// arrive meanwhile are applied in order too).
fn load(
    sock: &mut Socket,
    inner: &Mutex<Inner>,
    out: &mut Vec<NexthopUpdate>,
) -> std::io::Result<()> {
    {
        let mut g = inner.lock().unwrap_or_else(|e| e.into_inner());
        g.table.clear();
    }
    sock.request_dump()?;
    let mut msgs = Vec::new();
    loop {
        msgs.clear();
        let done = sock.recv(|m| msgs.push(m))?;
        let mut g = inner.lock().unwrap_or_else(|e| e.into_inner());
        for m in &msgs {
            g.table.apply(m);
        }
        if done {
            g.resolve_all(out);
            return Ok(());
        }
    }
}

/// Next-hop tracking for a daemon: the tracker the RIB parts resolve
/// through and the watcher thread. Dropping it does not stop the thread,
/// which ends when the RIB parts are gone.
pub struct Nht {
    /// Shared with every RIB part.
    pub tracker: Arc<Tracker>,
    sock: Socket,
}

impl Nht {
    /// Subscribes to route changes and reads the routing table.
    pub fn open() -> Result<Nht, String> {
        let mut sock = Socket::open().map_err(|e| format!("rtnetlink socket: {e}"))?;
        let tracker = Arc::new(Tracker {
            inner: Mutex::new(Inner {
                table: Table::new(),
                tracked: HashMap::new(),
            }),
        });
        load(&mut sock, &tracker.inner, &mut Vec::new())
            .map_err(|e| format!("reading the routing table: {e}"))?;
        Ok(Nht { tracker, sock })
    }

    /// Starts the watcher: every next-hop change goes to `deliver`, which
    /// hands it to every RIB part (one control channel each, in any
    /// pipeline mode) and returns false once they are gone.
    pub fn spawn<F>(self, deliver: F) -> std::io::Result<JoinHandle<()>>
    where
        F: FnMut(NexthopUpdate) -> bool + Send + 'static,
    {
        let Nht { tracker, mut sock } = self;
        std::thread::Builder::new()
            .name("nht".into())
            .spawn(move || watch(&mut sock, &tracker, deliver))
    }
}

fn watch(sock: &mut Socket, tracker: &Tracker, mut deliver: impl FnMut(NexthopUpdate) -> bool) {
    let mut msgs = Vec::new();
    let mut changed = Vec::new();
    loop {
        msgs.clear();
        changed.clear();
        match sock.recv(|m| msgs.push(m)) {
            Ok(_) => {
                let mut g = tracker.lock();
                for m in &msgs {
                    g.apply(m, &mut changed);
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                // Changes were lost: read everything again.
                warn!("next-hop tracking: netlink overrun, re-reading the routing table");
                if let Err(e) = load(sock, &tracker.inner, &mut changed) {
                    warn!("next-hop tracking stopped: {e}");
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                warn!("next-hop tracking stopped: {e}");
                return;
            }
        }
        for u in &changed {
            debug!(
                nexthop = %u.nexthop,
                reachable = u.reachable,
                igp_cost = u.igp_cost,
                "next hop changed"
            );
            if !deliver(*u) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(add: bool, p: &str, table: u32, metric: u32, kind: Kind) -> RouteMsg {
        let (a, l) = p.split_once('/').unwrap();
        RouteMsg {
            add,
            addr: a.parse().unwrap(),
            len: l.parse().unwrap(),
            route: KRoute {
                table,
                metric,
                kind,
            },
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn longest_match_lowest_metric_and_changes() {
        let mut inner = Inner {
            table: Table::new(),
            tracked: HashMap::new(),
        };
        let t = Tracker {
            inner: Mutex::new(inner),
        };
        {
            let mut g = t.lock();
            g.table
                .apply(&route(true, "198.18.0.0/16", 254, 0, Kind::Reach(0)));
            g.table
                .apply(&route(true, "198.18.10.0/24", 254, 10, Kind::Reach(10)));
            g.table
                .apply(&route(true, "2001:db8::/32", 254, 1024, Kind::Reach(0)));
        }
        let a = t.track(ip("198.18.10.1"));
        assert_eq!((a.reachable, a.igp_cost), (true, 10));
        let b = t.track(ip("198.18.20.1"));
        assert_eq!((b.reachable, b.igp_cost), (true, 0));
        let c = t.track(ip("198.19.0.1"));
        assert!(!c.reachable);
        assert!(t.track(ip("2001:db8::1")).reachable);
        inner = std::mem::take(&mut *t.lock());
        let mut out = Vec::new();
        // A second route of the same prefix with a lower metric wins.
        inner.apply(
            &route(true, "198.18.10.0/24", 254, 5, Kind::Reach(5)),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].nexthop, out[0].igp_cost), (ip("198.18.10.1"), 5));
        out.clear();
        // Deleting both falls back to the covering connected route.
        inner.apply(
            &route(false, "198.18.10.0/24", 254, 5, Kind::Reach(5)),
            &mut out,
        );
        inner.apply(
            &route(false, "198.18.10.0/24", 254, 10, Kind::Reach(10)),
            &mut out,
        );
        assert_eq!(out.last().map(|u| u.igp_cost), Some(0));
        out.clear();
        // A more specific blackhole makes it unreachable.
        inner.apply(
            &route(true, "198.18.10.1/32", 254, 0, Kind::Reject),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert!(!out[0].reachable);
        out.clear();
        // A route elsewhere touches nothing.
        inner.apply(&route(true, "10.0.0.0/8", 254, 0, Kind::Reach(0)), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn parse_skips_bgp_default_and_other_tables() {
        fn msg(proto: u8, dst_len: u8, table: u8, gw: bool) -> Vec<u8> {
            let mut b = vec![
                libc::AF_INET as u8,
                dst_len,
                0,
                0,
                table,
                proto,
                0,
                RTN_UNICAST,
            ];
            b.extend_from_slice(&0u32.to_ne_bytes());
            let mut attr = |ty: u16, v: &[u8]| {
                b.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
                b.extend_from_slice(&ty.to_ne_bytes());
                b.extend_from_slice(v);
            };
            attr(RTA_DST, &[198, 18, 1, 0]);
            attr(RTA_PRIORITY, &7u32.to_ne_bytes());
            if gw {
                attr(RTA_GATEWAY, &[198, 18, 0, 1]);
            }
            b
        }
        let m = parse_route(true, &msg(3, 24, 254, true)).unwrap();
        assert_eq!(m.addr, ip("198.18.1.0"));
        assert_eq!((m.len, m.route.kind), (24, Kind::Reach(7)));
        // Without a gateway: directly connected, cost 0.
        let m = parse_route(true, &msg(2, 24, 254, false)).unwrap();
        assert_eq!(m.route.kind, Kind::Reach(0));
        assert!(parse_route(true, &msg(RTPROT_BGP, 24, 254, true)).is_none());
        assert!(parse_route(true, &msg(3, 0, 254, true)).is_none());
        assert!(parse_route(true, &msg(3, 24, 100, true)).is_none());
        // Truncated input never panics.
        let full = msg(3, 24, 254, true);
        for i in 0..full.len() {
            let _ = parse_route(true, &full[..i]);
        }
    }
}
