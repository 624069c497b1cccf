//! A minimal MRT record framer (RFC 6396 §2) over plain, gzip or bzip2
//! files, giving the header fields and the raw body of each record.
//!
//! Stop-gap: the crate's full `MrtReader` was not available when the
//! bgpdump formatter was written; the CLI should move to it once it can hand
//! out raw bodies.

use super::RecordInfo;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::mpsc;

/// Why reading stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawError {
    /// The stream ended inside a record; `offset` is the decompressed byte
    /// offset where that record starts.
    Truncated { offset: u64 },
    /// The decompressor or the file failed at about `offset`.
    Io { offset: u64, kind: io::ErrorKind },
}

impl fmt::Display for RawError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawError::Truncated { offset } => {
                write!(f, "truncated MRT record at byte offset {offset}")
            }
            RawError::Io { offset, kind } => {
                write!(f, "read error ({kind}) near byte offset {offset}")
            }
        }
    }
}

impl std::error::Error for RawError {}

/// Reads records one by one into a reused body buffer.
pub struct RawReader {
    inner: Box<dyn Read + Send>,
    offset: u64,
    body: Vec<u8>,
}

impl RawReader {
    /// Opens `path`, choosing gzip or bzip2 by the magic bytes.
    pub fn open(path: &Path) -> io::Result<RawReader> {
        let mut f = File::open(path)?;
        let mut magic = [0u8; 3];
        let n = read_full(&mut f, &mut magic)?;
        drop(f);
        let f = BufReader::with_capacity(1 << 16, File::open(path)?);
        // Decompression (bzip2 above all) costs more than formatting, so it
        // runs on its own thread.
        let inner: Box<dyn Read + Send> = if n >= 2 && magic[..2] == [0x1f, 0x8b] {
            Box::new(Threaded::spawn(flate2::read::MultiGzDecoder::new(f)))
        } else if n == 3 && &magic == b"BZh" {
            Box::new(Threaded::spawn(bzip2::read::MultiBzDecoder::new(f)))
        } else {
            Box::new(f)
        };
        Ok(RawReader::new(inner))
    }

    /// Reads records from an already decompressed stream.
    pub fn new(inner: Box<dyn Read + Send>) -> RawReader {
        RawReader {
            inner: Box::new(BufReader::with_capacity(1 << 18, inner)),
            offset: 0,
            body: Vec::with_capacity(1 << 16),
        }
    }

    /// The next record, `Ok(None)` at a clean end of stream.
    pub fn next_record(&mut self) -> Result<Option<(RecordInfo, &[u8])>, RawError> {
        let start = self.offset;
        let mut h = [0u8; 12];
        let n = read_full(&mut self.inner, &mut h).map_err(|e| io_err(start, &e))?;
        if n == 0 {
            return Ok(None);
        }
        if n < h.len() {
            return Err(RawError::Truncated { offset: start });
        }
        let mrt_type = u16::from_be_bytes([h[4], h[5]]);
        let mut len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let mut info = RecordInfo {
            timestamp: u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
            microseconds: 0,
            mrt_type,
            subtype: u16::from_be_bytes([h[6], h[7]]),
        };
        let mut got = h.len() as u64;
        // RFC 6396 §3: the _ET microseconds count in the length field.
        if mrt_type == 17 {
            let mut m = [0u8; 4];
            let n = read_full(&mut self.inner, &mut m).map_err(|e| io_err(start, &e))?;
            if n < 4 || len < 4 {
                return Err(RawError::Truncated { offset: start });
            }
            info.microseconds = u32::from_be_bytes(m);
            len -= 4;
            got += 4;
        }
        self.body.clear();
        let n = (&mut self.inner)
            .take(len as u64)
            .read_to_end(&mut self.body)
            .map_err(|e| io_err(start, &e))?;
        if n < len {
            return Err(RawError::Truncated { offset: start });
        }
        self.offset = start + got + len as u64;
        Ok(Some((info, &self.body)))
    }
}

/// A reader whose source is read ahead, in 1 MiB chunks, by a thread.
struct Threaded {
    rx: mpsc::Receiver<io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl Threaded {
    fn spawn<R: Read + Send + 'static>(mut src: R) -> Threaded {
        let (tx, rx) = mpsc::sync_channel(4);
        std::thread::spawn(move || loop {
            let mut buf = vec![0u8; 1 << 20];
            let mut n = 0;
            let mut err = None;
            while n < buf.len() {
                match src.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            buf.truncate(n);
            // Bytes decoded before an error still count: the records they
            // hold are complete and must be printed. A send error means the
            // reader is gone: stop. An empty chunk marks the end.
            if n > 0 && tx.send(Ok(buf)).is_err() {
                return;
            }
            if let Some(e) = err {
                let _ = tx.send(Err(e));
                return;
            }
            if n == 0 {
                let _ = tx.send(Ok(Vec::new()));
                return;
            }
        });
        Threaded {
            rx,
            cur: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl Read for Threaded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.cur.len() {
            if self.done {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Ok(c)) => {
                    self.done = c.is_empty();
                    self.cur = c;
                    self.pos = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Ok(0);
                }
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn io_err(offset: u64, e: &io::Error) -> RawError {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        RawError::Truncated { offset }
    } else {
        RawError::Io {
            offset,
            kind: e.kind(),
        }
    }
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
