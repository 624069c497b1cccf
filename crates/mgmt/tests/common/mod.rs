//! Helpers shared by the control-socket and metrics tests.

use std::io::{Read, Write};
use std::time::Duration;

/// A client that sends `byte` every `every` and never ends its request
/// (no newline, no blank line), until the server closes the connection
/// (its time, from `t0`) or `give_up` passes (`None`).
///
/// `t0` is taken before connecting: the server's deadline cannot start
/// earlier, so a time measured from it is never short of the deadline,
/// however late this thread starts on a loaded machine.
pub fn drip<S: Read + Write + Send + 'static>(
    mut s: S,
    t0: std::time::Instant,
    byte: u8,
    every: Duration,
    give_up: Duration,
    set_timeout: impl Fn(&S, Duration) + Send + 'static,
) -> std::thread::JoinHandle<Option<Duration>> {
    std::thread::spawn(move || {
        set_timeout(&s, Duration::from_millis(5));
        let mut buf = [0u8; 256];
        while t0.elapsed() < give_up {
            if s.write_all(&[byte]).is_err() {
                return Some(t0.elapsed());
            }
            let end = std::time::Instant::now() + every;
            while std::time::Instant::now() < end {
                match s.read(&mut buf) {
                    Ok(0) => return Some(t0.elapsed()),
                    Ok(_) => {}
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            || e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => return Some(t0.elapsed()),
                }
            }
        }
        None
    })
}
