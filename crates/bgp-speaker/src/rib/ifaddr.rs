//! Our addresses on the interface a session runs over, so that routes of
//! the other family get a usable next hop (an IPv6 route on an IPv4
//! session needs our IPv6 address on that link, RFC 4760 §3 / RFC 2545 §3,
//! and the reverse for RFC 8950).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub use bgp_core::msg::LinkAddrs;

/// Reads the interface list (getifaddrs). When `local` is on no interface
/// (e.g. a loopback alias in a test) only `local` itself is returned. An
/// IPv4-mapped IPv6 address counts as IPv4.
pub fn link_addrs(local: IpAddr) -> LinkAddrs {
    let local = match local {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4),
        v4 => v4,
    };
    let mut out = LinkAddrs::default();
    let mut all: Vec<(String, IpAddr)> = Vec::new();
    // SAFETY: getifaddrs fills a linked list we walk read-only and free
    // with freeifaddrs; every pointer is checked for null before use.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            return out;
        }
        let mut p = head;
        while !p.is_null() {
            let ifa = &*p;
            p = ifa.ifa_next;
            if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
                continue;
            }
            let name = std::ffi::CStr::from_ptr(ifa.ifa_name)
                .to_string_lossy()
                .into_owned();
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    let a = Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr));
                    all.push((name, IpAddr::V4(a)));
                }
                libc::AF_INET6 => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    all.push((name, IpAddr::V6(Ipv6Addr::from(sa.sin6_addr.s6_addr))));
                }
                _ => {}
            }
        }
        libc::freeifaddrs(head);
    }
    // The session's own address is always usable for its family, even
    // when no interface holds it (a 127/8 address other than 127.0.0.1 is
    // local on Linux without being configured anywhere).
    let iface = all
        .iter()
        .find(|(_, a)| *a == local)
        .map(|(n, _)| n.clone());
    for (n, a) in &all {
        if Some(n) != iface.as_ref() {
            continue;
        }
        match a {
            IpAddr::V4(v) => {
                out.v4.get_or_insert(*v);
            }
            IpAddr::V6(v) if v.is_unicast_link_local() => {
                out.v6_link_local.get_or_insert(*v);
            }
            IpAddr::V6(v) => {
                out.v6.get_or_insert(*v);
            }
        }
    }
    match local {
        IpAddr::V4(v) => out.v4 = Some(v),
        IpAddr::V6(v) if !v.is_unicast_link_local() => out.v6 = Some(v),
        IpAddr::V6(_) => {}
    }
    out
}
