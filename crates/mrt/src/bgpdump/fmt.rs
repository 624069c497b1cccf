//! Byte-level printers for the `bgpdump -m` format: decimal integers and
//! bgpdump's own IPv4/IPv6 text forms. They append to a caller's buffer and
//! never allocate (beyond the buffer growing).

/// Appends `v` in decimal (printf `%u`).
#[inline]
pub(crate) fn push_u32(out: &mut Vec<u8>, mut v: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        // `v % 10` is < 10, so the cast cannot truncate.
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `v` zero-padded to six digits (printf `%06ld`), for BGP4MP_ET
/// microseconds. Values of a million or more print all their digits.
pub(crate) fn push_micros(out: &mut Vec<u8>, v: u32) {
    let mut digits = [b'0'; 10];
    let mut n = v;
    let mut len = 0;
    while n > 0 {
        digits[len] = b'0' + (n % 10) as u8;
        n /= 10;
        len += 1;
    }
    let width = len.max(6);
    for k in (0..width).rev() {
        out.push(digits[k]);
    }
}

/// Appends a dotted-quad IPv4 address (`inet_ntoa`).
#[inline]
pub(crate) fn push_ipv4(out: &mut Vec<u8>, a: [u8; 4]) {
    push_u8(out, a[0]);
    out.push(b'.');
    push_u8(out, a[1]);
    out.push(b'.');
    push_u8(out, a[2]);
    out.push(b'.');
    push_u8(out, a[3]);
}

#[inline]
fn push_u8(out: &mut Vec<u8>, v: u8) {
    if v >= 100 {
        out.extend_from_slice(&[b'0' + v / 100, b'0' + (v / 10) % 10, b'0' + v % 10]);
    } else if v >= 10 {
        out.extend_from_slice(&[b'0' + v / 10, b'0' + v % 10]);
    } else {
        out.push(b'0' + v);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends an IPv6 address the way bgpdump's `fmt_ipv6` does, which differs
/// from RFC 5952 (and from Rust's `Display`) in two ways:
/// * IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`, glibc's
///   `IN6_IS_ADDR_V4COMPAT`: 96 zero bits, last 32 bits > 1) print a dotted
///   quad;
/// * the longest run of zero groups becomes `::` even when it is one group
///   long; the first of equal runs wins.
pub(crate) fn push_ipv6(out: &mut Vec<u8>, a: &[u8; 16]) {
    let head_zero = a[..10].iter().all(|&b| b == 0);
    let tail = [a[12], a[13], a[14], a[15]];
    if head_zero && a[10] == 0xff && a[11] == 0xff {
        out.extend_from_slice(b"::ffff:");
        push_ipv4(out, tail);
        return;
    }
    if head_zero && a[10] == 0 && a[11] == 0 && u32::from_be_bytes(tail) > 1 {
        out.extend_from_slice(b"::");
        push_ipv4(out, tail);
        return;
    }
    let mut w = [0u16; 8];
    for (i, g) in w.iter_mut().enumerate() {
        *g = u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
    }
    // Longest run of zero groups; strictly longer replaces, so the first wins.
    let (mut best, mut best_len) = (usize::MAX, 0usize);
    let mut i = 0;
    while i < 8 {
        if w[i] == 0 {
            let start = i;
            while i < 8 && w[i] == 0 {
                i += 1;
            }
            if i - start > best_len {
                best = start;
                best_len = i - start;
            }
        } else {
            i += 1;
        }
    }
    let mut i = 0;
    while i < 8 {
        if i == best {
            if i == 0 {
                out.push(b':');
            }
            out.push(b':');
            i += best_len;
            continue;
        }
        push_hex16(out, w[i]);
        if i != 7 {
            out.push(b':');
        }
        i += 1;
    }
}

#[inline]
fn push_hex16(out: &mut Vec<u8>, v: u16) {
    let mut started = false;
    for shift in [12u32, 8, 4] {
        let d = ((v >> shift) & 0xf) as usize;
        if started || d != 0 {
            out.push(HEX[d]);
            started = true;
        }
    }
    out.push(HEX[(v & 0xf) as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    fn v6(s: &str) -> String {
        let a: Ipv6Addr = s.parse().unwrap();
        let mut o = Vec::new();
        push_ipv6(&mut o, &a.octets());
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn ipv6_like_bgpdump() {
        // bgpdump -T's own round-trip cases.
        assert_eq!(v6("fe80::"), "fe80::");
        assert_eq!(v6("2001:db8::1"), "2001:db8::1");
        assert_eq!(v6("::ffff:192.168.2.1"), "::ffff:192.168.2.1");
        assert_eq!(v6("::192.168.1.2"), "::192.168.1.2");
        assert_eq!(v6("2001:7f8:30::2:1:0:8447"), "2001:7f8:30::2:1:0:8447");
        // Where bgpdump differs from RFC 5952 / Rust's Display.
        assert_eq!(v6("2001:db8:0:1:1:1:1:1"), "2001:db8::1:1:1:1:1");
        assert_eq!(v6("::"), "::");
        assert_eq!(v6("::1"), "::1");
        assert_eq!(v6("::2"), "::0.0.0.2");
        assert_eq!(v6("1::"), "1::");
        assert_eq!(v6("1:0:0:2:0:0:0:3"), "1:0:0:2::3");
        assert_eq!(v6("2001:b08:2:280::4:100"), "2001:b08:2:280::4:100");
    }

    #[test]
    fn numbers() {
        let mut o = Vec::new();
        push_u32(&mut o, 0);
        o.push(b' ');
        push_u32(&mut o, u32::MAX);
        o.push(b' ');
        push_micros(&mut o, 42);
        o.push(b' ');
        push_micros(&mut o, 1_234_567);
        o.push(b' ');
        push_ipv4(&mut o, [0, 10, 100, 255]);
        assert_eq!(o, b"0 4294967295 000042 1234567 0.10.100.255");
    }
}
