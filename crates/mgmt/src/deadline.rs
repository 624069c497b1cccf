//! A deadline for a whole request or response, not for each read: a client
//! that sends one byte every few seconds never trips a per-read timeout,
//! and would hold its connection slot for as long as it likes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A socket whose blocking reads and writes take a timeout.
pub(crate) trait Timed {
    fn set_read(&self, t: Duration) -> io::Result<()>;
    fn set_write(&self, t: Duration) -> io::Result<()>;
}

impl Timed for UnixStream {
    fn set_read(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))
    }
    fn set_write(&self, t: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(t))
    }
}

impl Timed for TcpStream {
    fn set_read(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))
    }
    fn set_write(&self, t: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(t))
    }
}

/// Reads and writes on `s` that all end by one instant: each call gets
/// the time that is left as its timeout, and none is left after it.
pub(crate) struct Deadline<'a, S> {
    s: &'a S,
    until: Instant,
}

impl<'a, S: Timed> Deadline<'a, S> {
    /// Reads and writes on `s` that end within `budget` from now.
    pub(crate) fn new(s: &'a S, budget: Duration) -> Self {
        Deadline {
            s,
            until: Instant::now() + budget,
        }
    }

    /// A new budget from now (the next request).
    pub(crate) fn restart(&mut self, budget: Duration) {
        self.until = Instant::now() + budget;
    }

    fn left(&self) -> io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "request deadline passed",
            ))
        } else {
            Ok(left)
        }
    }
}

impl<S: Timed> Read for Deadline<'_, S>
where
    for<'b> &'b S: Read,
{
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.s.set_read(self.left()?)?;
        let mut s = self.s;
        s.read(buf)
    }
}

impl<S: Timed> Write for Deadline<'_, S>
where
    for<'b> &'b S: Write,
{
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.s.set_write(self.left()?)?;
        let mut s = self.s;
        s.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        let mut s = self.s;
        s.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A peer that sends a byte every 30 ms is cut once the whole budget
    /// is spent, though no single read waits long.
    #[test]
    fn a_dripping_peer_is_cut_at_the_deadline() {
        let (a, b) = UnixStream::pair().unwrap();
        let drip = std::thread::spawn(move || {
            let mut b = b;
            for _ in 0..40 {
                if b.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(30));
            }
        });
        let t0 = Instant::now();
        let mut d = Deadline::new(&a, Duration::from_millis(300));
        let mut got = 0;
        let mut buf = [0u8; 1];
        let err = loop {
            match d.read(&mut buf) {
                Ok(n) => got += n,
                Err(e) => break e,
            }
        };
        assert!(err.kind() == io::ErrorKind::TimedOut || err.kind() == io::ErrorKind::WouldBlock);
        assert!(got >= 2, "some bytes came first");
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_millis(280) && took < Duration::from_secs(3),
            "{took:?}"
        );
        drop(a);
        drip.join().unwrap();
    }
}
