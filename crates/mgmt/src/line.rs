//! Bounded line reading, shared by the socket server and the client: a
//! peer that never sends a newline must not make us buffer without limit.

use std::io::{self, BufRead};

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// A line (with its `\n`, or the unterminated rest before end of
    /// stream) was appended.
    Line,
    /// End of stream before any byte.
    Eof,
    /// The line exceeded the limit; the stream cannot be resynchronised.
    TooLong,
}

/// Appends one line of at most `max` bytes (newline included) to `line`.
pub(crate) fn read_line<R: BufRead>(
    r: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if line.len().saturating_add(take) > max {
            return Ok(LineRead::TooLong);
        }
        line.extend_from_slice(buf.get(..take).unwrap_or_default());
        r.consume(take);
        if done {
            return Ok(LineRead::Line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn lines_limits_and_eof() {
        // A tiny BufReader capacity makes lines span several fills.
        let mut r = BufReader::with_capacity(3, &b"abcdef\nxy\n0123456789"[..]);
        let mut l = Vec::new();
        assert_eq!(read_line(&mut r, &mut l, 100).unwrap(), LineRead::Line);
        assert_eq!(l, b"abcdef\n");
        l.clear();
        assert_eq!(read_line(&mut r, &mut l, 3).unwrap(), LineRead::Line);
        assert_eq!(l, b"xy\n");
        l.clear();
        assert_eq!(read_line(&mut r, &mut l, 5).unwrap(), LineRead::TooLong);
        let mut r = BufReader::new(&b"tail"[..]);
        l.clear();
        assert_eq!(read_line(&mut r, &mut l, 100).unwrap(), LineRead::Line);
        assert_eq!(l, b"tail");
        l.clear();
        assert_eq!(read_line(&mut r, &mut l, 100).unwrap(), LineRead::Eof);
    }
}
