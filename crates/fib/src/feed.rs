//! The local channel between tesserad and a separate dataplane process:
//! batches of [`Change`]s on a Unix stream socket; the server side
//! ([`serve`], a mirror of the best routes for whichever dataplane
//! connects) and the client side ([`follow`]).
//!
//! Frame: `u32` (big endian) count of records, then the records. A record
//! is `family` (4 or 6), prefix length, the prefix address (4 or 16
//! bytes), then the next hop: `0` (no route), or `4`/`6` and the address
//! followed by a count (one byte) of further multipath next hops
//! (`Change::ecmp`, at most [`MAX_ECMP`]), each `4`/`6` and the address.
//! Decoding checks every length and family; a bad frame is an error that
//! ends the connection (the sender is local and trusted, but a bug must
//! not turn into a wrong FIB).

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base::Prefix;

use crate::resolve::Change;

/// Largest batch accepted from the socket.
pub const MAX_BATCH: u32 = 1 << 20;

/// Most multipath next hops of one route on the wire (besides the best).
pub const MAX_ECMP: u8 = 63;

/// Why a frame was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FeedError {
    /// The stream ended (cleanly between frames, or cut inside one).
    Closed,
    BadFamily(u8),
    BadLength(u8),
    TooLarge(u32),
    /// More multipath next hops than [`MAX_ECMP`].
    TooManyPaths(u8),
    Io(std::io::ErrorKind),
}

fn put_addr(out: &mut Vec<u8>, a: IpAddr) {
    match a {
        IpAddr::V4(v) => {
            out.push(4);
            out.extend_from_slice(&v.octets());
        }
        IpAddr::V6(v) => {
            out.push(6);
            out.extend_from_slice(&v.octets());
        }
    }
}

/// Appends the frame of `batch` to `out`.
pub fn encode(batch: &[Change], out: &mut Vec<u8>) {
    out.extend_from_slice(&(batch.len() as u32).to_be_bytes());
    for c in batch {
        let a = c.prefix.addr();
        match a {
            IpAddr::V4(v) => {
                out.extend_from_slice(&[4, c.prefix.len()]);
                out.extend_from_slice(&v.octets());
            }
            IpAddr::V6(v) => {
                out.extend_from_slice(&[6, c.prefix.len()]);
                out.extend_from_slice(&v.octets());
            }
        }
        match c.next_hop {
            None => out.push(0),
            Some(nh) => {
                put_addr(out, nh);
                let k = c.ecmp.len().min(usize::from(MAX_ECMP));
                out.push(k as u8);
                for &a in c.ecmp.iter().take(k) {
                    put_addr(out, a);
                }
            }
        }
    }
}

/// Writes one batch.
pub fn write_batch<W: Write>(
    w: &mut W,
    batch: &[Change],
    scratch: &mut Vec<u8>,
) -> Result<(), FeedError> {
    scratch.clear();
    encode(batch, scratch);
    w.write_all(scratch).map_err(|e| FeedError::Io(e.kind()))
}

fn read_exact<R: Read>(r: &mut R, b: &mut [u8]) -> Result<(), FeedError> {
    r.read_exact(b).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => FeedError::Closed,
        k => FeedError::Io(k),
    })
}

fn read_addr<R: Read>(r: &mut R, fam: u8) -> Result<IpAddr, FeedError> {
    match fam {
        4 => {
            let mut b = [0u8; 4];
            read_exact(r, &mut b)?;
            Ok(IpAddr::V4(Ipv4Addr::from(b)))
        }
        6 => {
            let mut b = [0u8; 16];
            read_exact(r, &mut b)?;
            Ok(IpAddr::V6(Ipv6Addr::from(b)))
        }
        f => Err(FeedError::BadFamily(f)),
    }
}

/// Reads one batch (blocking).
pub fn read_batch<R: Read>(r: &mut R) -> Result<Vec<Change>, FeedError> {
    let mut n = [0u8; 4];
    read_exact(r, &mut n)?;
    let n = u32::from_be_bytes(n);
    if n > MAX_BATCH {
        return Err(FeedError::TooLarge(n));
    }
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mut h = [0u8; 2];
        read_exact(r, &mut h)?;
        let a = read_addr(r, h[0])?;
        let prefix = Prefix::new(a, h[1]).map_err(|_| FeedError::BadLength(h[1]))?;
        let mut f = [0u8; 1];
        read_exact(r, &mut f)?;
        let mut c = Change::single(prefix, None);
        if f[0] != 0 {
            c.next_hop = Some(read_addr(r, f[0])?);
            read_exact(r, &mut f)?;
            if f[0] > MAX_ECMP {
                return Err(FeedError::TooManyPaths(f[0]));
            }
            for _ in 0..f[0] {
                let mut fam = [0u8; 1];
                read_exact(r, &mut fam)?;
                c.ecmp.push(read_addr(r, fam[0])?);
            }
        }
        v.push(c);
    }
    Ok(v)
}

/// Serves the best routes arriving on `rx` on `l`: keeps a mirror; each
/// dataplane that connects gets the whole mirror, then every change. One
/// client at a time (a new one replaces the old). Returns when `rx` is
/// closed.
pub fn serve(l: std::os::unix::net::UnixListener, rx: std::sync::mpsc::Receiver<Vec<Change>>) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut mirror: std::collections::HashMap<Prefix, Change> = Default::default();
    let mut client: Option<std::os::unix::net::UnixStream> = None;
    let mut scratch = Vec::new();
    let _ = l.set_nonblocking(true);
    loop {
        if let Ok((s, _)) = l.accept() {
            let _ = s.set_nonblocking(false);
            let mut s = s;
            let all: Vec<Change> = mirror.values().cloned().collect();
            let ok = all
                .chunks(4096)
                .all(|c| write_batch(&mut s, c, &mut scratch).is_ok());
            client = ok.then_some(s);
        }
        match rx.recv_timeout(std::time::Duration::from_millis(50)) {
            Ok(b) => {
                for c in &b {
                    match c.next_hop {
                        Some(_) => mirror.insert(c.prefix, c.clone()),
                        None => mirror.remove(&c.prefix),
                    };
                }
                if let Some(s) = client.as_mut() {
                    if write_batch(s, &b, &mut scratch).is_err() {
                        client = None;
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// The client side: connects to `path` (again and again, every 200 ms,
/// while tesserad is away) and hands every batch to `tx`. Returns when
/// `tx` is closed.
pub fn follow(path: &std::path::Path, tx: std::sync::mpsc::SyncSender<Vec<Change>>) {
    loop {
        let Ok(s) = std::os::unix::net::UnixStream::connect(path) else {
            std::thread::sleep(std::time::Duration::from_millis(200));
            continue;
        };
        let mut r = std::io::BufReader::new(s);
        while let Ok(b) = read_batch(&mut r) {
            if tx.send(b).is_err() {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        let b = vec![
            Change::single(
                "203.0.113.0/24".parse().expect("p"),
                Some("10.2.0.2".parse().expect("ip")),
            ),
            Change::single("2001:db8::/32".parse().expect("p"), None),
            Change::single(
                "0.0.0.0/0".parse().expect("p"),
                Some("2001:db8::1".parse().expect("ip")),
            ),
            Change {
                prefix: "198.19.0.0/16".parse().expect("p"),
                next_hop: Some("10.2.0.2".parse().expect("ip")),
                ecmp: vec![
                    "10.3.0.2".parse().expect("ip"),
                    "10.4.0.2".parse().expect("ip"),
                ],
            },
        ];
        let mut w = Vec::new();
        encode(&b, &mut w);
        encode(&[], &mut w);
        let mut r = &w[..];
        assert_eq!(read_batch(&mut r), Ok(b));
        assert_eq!(read_batch(&mut r), Ok(vec![]));
        assert_eq!(read_batch(&mut r), Err(FeedError::Closed));
        let mut cut = Vec::new();
        encode(&read_batch(&mut &w[..]).expect("again"), &mut cut);
        cut.truncate(9);
        assert_eq!(read_batch(&mut &cut[..]), Err(FeedError::Closed));
        assert_eq!(
            read_batch(&mut &[0, 0, 0, 1, 4, 8, 1, 0, 0, 0, 4, 9, 9, 9, 9, 64][..]),
            Err(FeedError::TooManyPaths(64))
        );
        assert_eq!(
            read_batch(&mut &[0, 0, 0, 1, 4, 8, 1, 0, 0, 0, 4, 9, 9, 9, 9, 1, 7][..]),
            Err(FeedError::BadFamily(7))
        );
        assert_eq!(
            read_batch(&mut &[0, 0, 0, 1, 4, 33, 1, 2, 3, 4, 0][..]),
            Err(FeedError::BadLength(33))
        );
        assert_eq!(
            read_batch(&mut &[0, 0, 0, 1, 5, 8][..]),
            Err(FeedError::BadFamily(5))
        );
        assert_eq!(
            read_batch(&mut &[0xff, 0, 0, 0][..]),
            Err(FeedError::TooLarge(0xff00_0000))
        );
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn addr() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            any::<[u8; 4]>().prop_map(|b| IpAddr::V4(Ipv4Addr::from(b))),
            any::<[u8; 16]>().prop_map(|b| IpAddr::V6(Ipv6Addr::from(b))),
        ]
    }

    fn change() -> impl Strategy<Value = Change> {
        (
            addr(),
            0u8..=128,
            prop::option::of(addr()),
            prop::collection::vec(addr(), 0..5),
        )
            .prop_map(|(a, len, nh, ecmp)| {
                let len = if a.is_ipv4() { len % 33 } else { len };
                let prefix = Prefix::new(a, len).expect("valid length");
                Change {
                    prefix,
                    next_hop: nh,
                    ecmp: if nh.is_some() { ecmp } else { Vec::new() },
                }
            })
    }

    proptest! {
        /// Any bytes: an error or a batch, never a panic.
        #[test]
        fn any_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = read_batch(&mut &b[..]);
        }

        /// Multipath changes survive the frame.
        #[test]
        fn round_trip(batch in prop::collection::vec(change(), 0..8)) {
            let mut w = Vec::new();
            encode(&batch, &mut w);
            prop_assert_eq!(read_batch(&mut &w[..]), Ok(batch));
        }
    }
}
