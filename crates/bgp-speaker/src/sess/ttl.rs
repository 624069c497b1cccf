//! The IP TTL / IPv6 hop limit of a session's socket, on connections we
//! open and on those we accept: `ttl` (eBGP multihop) sets what we send;
//! GTSM (RFC 5082) sends with 255 and has the kernel drop every segment
//! that arrives with less than 255 - (hops - 1), through Linux's
//! `IP_MINTTL` / `IPV6_MINHOPCOUNT`.

use std::io;
use std::os::fd::AsRawFd;

/// How a session's packets are limited.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HopLimits {
    /// TTL / hop limit we send with; `None`: the system default.
    pub ttl: Option<u8>,
    /// GTSM with the peer at most this many hops away (1: directly
    /// connected); `None`: off. Overrides `ttl` (it sends with 255).
    pub gtsm_hops: Option<u8>,
}

impl HopLimits {
    /// The smallest TTL accepted under GTSM: 255 for a directly connected
    /// peer, one less per further hop (RFC 5082 §3: 255 - TrustRadius,
    /// where TrustRadius is hops - 1).
    pub fn min_ttl(&self) -> Option<u8> {
        self.gtsm_hops.map(|h| 255u8.saturating_sub(h.max(1) - 1))
    }

    /// Applies to `s`, an IPv4 or IPv6 (`v6`) TCP socket, before connect
    /// or right after accept.
    pub fn apply(&self, s: &impl AsRawFd, v6: bool) -> io::Result<()> {
        let send = if self.gtsm_hops.is_some() {
            Some(255)
        } else {
            self.ttl
        };
        let fd = s.as_raw_fd();
        if let Some(t) = send {
            if v6 {
                setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, t)?;
            } else {
                setsockopt(fd, libc::IPPROTO_IP, libc::IP_TTL, t)?;
            }
        }
        if let Some(m) = self.min_ttl() {
            if v6 {
                setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT, m)?;
            } else {
                setsockopt(fd, libc::IPPROTO_IP, libc::IP_MINTTL, m)?;
            }
        }
        Ok(())
    }
}

fn setsockopt(fd: std::os::fd::RawFd, level: i32, name: i32, v: u8) -> io::Result<()> {
    let v = libc::c_int::from(v);
    // SAFETY: passes a pointer to an initialised c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn getsockopt(fd: std::os::fd::RawFd, level: i32, name: i32) -> i32 {
        let mut v: libc::c_int = -1;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: v and len are valid for writing.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                &mut v as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        v
    }

    #[test]
    fn min_ttl_follows_rfc_5082() {
        let g = |h| HopLimits {
            ttl: None,
            gtsm_hops: Some(h),
        };
        assert_eq!(g(1).min_ttl(), Some(255));
        assert_eq!(g(2).min_ttl(), Some(254));
        assert_eq!(g(254).min_ttl(), Some(2));
        assert_eq!(HopLimits::default().min_ttl(), None);
    }

    #[test]
    fn sockets_get_ttl_and_min_ttl() {
        let s4 = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let l = HopLimits {
            ttl: Some(7),
            gtsm_hops: None,
        };
        l.apply(&s4, false).unwrap();
        let fd = s4.as_raw_fd();
        assert_eq!(getsockopt(fd, libc::IPPROTO_IP, libc::IP_TTL), 7);
        assert_eq!(getsockopt(fd, libc::IPPROTO_IP, libc::IP_MINTTL), 0);
        let g = HopLimits {
            ttl: None,
            gtsm_hops: Some(2),
        };
        g.apply(&s4, false).unwrap();
        assert_eq!(getsockopt(fd, libc::IPPROTO_IP, libc::IP_TTL), 255);
        assert_eq!(getsockopt(fd, libc::IPPROTO_IP, libc::IP_MINTTL), 254);
        if let Ok(s6) = std::net::TcpListener::bind("[::1]:0") {
            g.apply(&s6, true).unwrap();
            let fd = s6.as_raw_fd();
            assert_eq!(
                getsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS),
                255
            );
            assert_eq!(
                getsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT),
                254
            );
        }
    }
}
