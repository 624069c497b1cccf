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
    let all: Vec<(String, IpAddr)> = interfaces().into_iter().map(|(n, a, _)| (n, a)).collect();
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

/// The address of a socket address, for IPv4 and IPv6.
///
/// # Safety
/// `sa` is null or points to a socket address as getifaddrs gives them.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: non-null, and of the type its family names (the caller's
    // promise).
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let sa = &*(sa as *const libc::sockaddr_in);
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr))))
            }
            libc::AF_INET6 => {
                let sa = &*(sa as *const libc::sockaddr_in6);
                Some(IpAddr::V6(Ipv6Addr::from(sa.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}

/// Every IPv4/IPv6 interface address (getifaddrs): the interface name,
/// the address and its netmask.
fn interfaces() -> Vec<(String, IpAddr, Option<IpAddr>)> {
    let mut all = Vec::new();
    // SAFETY: getifaddrs fills a linked list we walk read-only and free
    // with freeifaddrs; every pointer is checked for null before use.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            return all;
        }
        let mut p = head;
        while !p.is_null() {
            let ifa = &*p;
            p = ifa.ifa_next;
            if ifa.ifa_name.is_null() {
                continue;
            }
            let Some(a) = sockaddr_ip(ifa.ifa_addr) else {
                continue;
            };
            let name = std::ffi::CStr::from_ptr(ifa.ifa_name)
                .to_string_lossy()
                .into_owned();
            all.push((name, a, sockaddr_ip(ifa.ifa_netmask)));
        }
        libc::freeifaddrs(head);
    }
    all
}

/// Whether `a` and `b` agree under `mask` (all three of one family).
fn same_subnet(a: IpAddr, b: IpAddr, mask: IpAddr) -> bool {
    match (a, b, mask) {
        (IpAddr::V4(a), IpAddr::V4(b), IpAddr::V4(m)) => {
            u32::from(a) & u32::from(m) == u32::from(b) & u32::from(m)
        }
        (IpAddr::V6(a), IpAddr::V6(b), IpAddr::V6(m)) => {
            u128::from(a) & u128::from(m) == u128::from(b) & u128::from(m)
        }
        _ => false,
    }
}

/// RFC 4271 §5.1.3: whether `remote` shares a subnet with one of our
/// interface addresses (a link-local `remote` always does), so that a
/// link-local next hop from it can be reached (RFC 2545 §3).
pub fn on_link(remote: IpAddr) -> bool {
    let remote = match remote {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4),
        v4 => v4,
    };
    if let IpAddr::V6(a) = remote {
        if a.is_unicast_link_local() {
            return true;
        }
    }
    interfaces()
        .into_iter()
        .any(|(_, a, m)| m.is_some_and(|m| a != remote && same_subnet(a, remote, m)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets() {
        let v4 = |s: &str| IpAddr::V4(s.parse().unwrap());
        let v6 = |s: &str| IpAddr::V6(s.parse().unwrap());
        assert!(same_subnet(
            v4("10.0.1.1"),
            v4("10.0.1.2"),
            v4("255.255.255.0")
        ));
        assert!(!same_subnet(
            v4("10.0.1.1"),
            v4("10.0.2.2"),
            v4("255.255.255.0")
        ));
        assert!(same_subnet(
            v6("fd00:1::1"),
            v6("fd00:1::2"),
            v6("ffff:ffff:ffff:ffff::")
        ));
        assert!(!same_subnet(
            v6("fd00:1::1"),
            v6("fd00:2::2"),
            v6("ffff:ffff:ffff:ffff::")
        ));
        assert!(!same_subnet(
            v4("10.0.1.1"),
            v6("fd00:1::2"),
            v4("255.0.0.0")
        ));
        // 127.0.0.1/8 is on lo, so any other 127/8 address shares it.
        assert!(on_link(v4("127.0.0.2")));
        assert!(on_link(v6("fe80::1")));
        assert!(!on_link(v6("2001:db8:ffff::1")));
    }
}
