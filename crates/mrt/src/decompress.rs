//! Transparent decompression, detected by magic bytes (gzip `1f 8b`,
//! bzip2 `BZh`), optionally on a background thread that hands fixed-size
//! chunks to the parser through a bounded channel, recycling the buffers.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Input buffer size: large reads keep syscalls and decoder calls rare.
pub const BUF_SIZE: usize = 1 << 20;
/// Size of the chunks the background decompressor produces.
pub const CHUNK_SIZE: usize = 1 << 20;
/// Chunks in flight between the decompressor and the parser.
pub const CHUNKS_IN_FLIGHT: usize = 4;

/// How the input is compressed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain MRT.
    None,
    /// gzip (RFC 1952), as the RIPE RIS archives.
    Gzip,
    /// bzip2, as the RouteViews archives.
    Bzip2,
}

impl Compression {
    /// Detects compression from the first bytes of the input.
    pub fn detect(magic: &[u8]) -> Compression {
        if magic.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if magic.starts_with(b"BZh") {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }
}

/// Peeks at the buffered input to detect its compression. Input shorter
/// than a magic number is plain.
fn sniff<R: Read>(r: &mut BufReader<R>) -> io::Result<Compression> {
    // One fill_buf normally returns plenty; a slow reader could return fewer
    // than 3 bytes, which at worst misdetects a tiny input as plain.
    let b = loop {
        match r.fill_buf() {
            Ok(b) => break b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    Ok(Compression::detect(b))
}

/// The decompressed byte stream, enum-dispatched.
pub(crate) enum Source<R: Read> {
    Plain(BufReader<R>),
    Gzip(BufReader<flate2::bufread::MultiGzDecoder<BufReader<R>>>),
    Bzip2(BufReader<bzip2::bufread::MultiBzDecoder<BufReader<R>>>),
    Threaded(ChunkReader),
}

/// A source and its compression, plus an error met while sniffing (reported
/// by the reader's first read, so that constructors stay infallible).
pub(crate) type Opened<R> = (Source<R>, Compression, Option<io::ErrorKind>);

impl<R: Read> Source<R> {
    /// Wraps `r`, detecting compression, decoding on the calling thread.
    pub(crate) fn new(r: R) -> Opened<R> {
        let mut br = BufReader::with_capacity(BUF_SIZE, r);
        let (c, err) = match sniff(&mut br) {
            Ok(c) => (c, None),
            Err(e) => (Compression::None, Some(e.kind())),
        };
        let s = match c {
            Compression::None => Source::Plain(br),
            Compression::Gzip => Source::Gzip(BufReader::with_capacity(
                BUF_SIZE,
                flate2::bufread::MultiGzDecoder::new(br),
            )),
            Compression::Bzip2 => Source::Bzip2(BufReader::with_capacity(
                BUF_SIZE,
                bzip2::bufread::MultiBzDecoder::new(br),
            )),
        };
        (s, c, err)
    }
}

impl<R: Read + Send + 'static> Source<R> {
    /// Like [`Source::new`], but compressed input is decoded on a background
    /// thread. Plain input is read directly (a thread would only add copies).
    pub(crate) fn new_threaded(r: R) -> Opened<R> {
        let mut br = BufReader::with_capacity(BUF_SIZE, r);
        let c = match sniff(&mut br) {
            Ok(c) => c,
            Err(e) => return (Source::Plain(br), Compression::None, Some(e.kind())),
        };
        let spawned = match c {
            Compression::None => return (Source::Plain(br), c, None),
            Compression::Gzip => ChunkReader::spawn(flate2::bufread::MultiGzDecoder::new(br)),
            Compression::Bzip2 => ChunkReader::spawn(bzip2::bufread::MultiBzDecoder::new(br)),
        };
        match spawned {
            Ok(t) => (Source::Threaded(t), c, None),
            // The input moved into the failed thread; report the failure.
            Err(e) => (Source::Threaded(ChunkReader::empty()), c, Some(e.kind())),
        }
    }
}

impl<R: Read> Read for Source<R> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::Plain(r) => r.read(buf),
            Source::Gzip(r) => r.read(buf),
            Source::Bzip2(r) => r.read(buf),
            Source::Threaded(r) => r.read(buf),
        }
    }
}

/// What the decompressor thread sends: a filled chunk, or the error that
/// ended the stream (its kind and message, re-created on the reading side).
type Msg = Result<Vec<u8>, io::Error>;

/// Reads the output of a decompressor running on its own thread.
pub(crate) struct ChunkReader {
    rx: Option<Receiver<Msg>>,
    recycle: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    /// Set after the stream's end or error has been delivered.
    done: bool,
    thread: Option<JoinHandle<()>>,
}

impl ChunkReader {
    fn spawn<D: Read + Send + 'static>(mut dec: D) -> io::Result<ChunkReader> {
        let (tx, rx) = sync_channel::<Msg>(CHUNKS_IN_FLIGHT);
        // Buffers come back to the decompressor once the parser is done with
        // them, so steady state allocates nothing.
        let (recycle, recycled) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 2);
        let thread = std::thread::Builder::new()
            .name("mrt-decompress".into())
            .spawn(move || loop {
                let mut chunk = recycled
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(CHUNK_SIZE));
                chunk.clear();
                chunk.resize(CHUNK_SIZE, 0);
                let mut filled = 0;
                let mut err = None;
                while filled < CHUNK_SIZE {
                    match dec.read(chunk.get_mut(filled..).unwrap_or(&mut [])) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            err = Some(e);
                            break;
                        }
                    }
                }
                chunk.truncate(filled);
                let end = filled < CHUNK_SIZE;
                // A send fails only when the reader was dropped: stop quietly.
                if filled > 0 && tx.send(Ok(chunk)).is_err() {
                    return;
                }
                if let Some(e) = err {
                    let _ = tx.send(Err(e));
                    return;
                }
                if end {
                    return; // dropping tx signals end of stream
                }
            })?;
        Ok(ChunkReader {
            rx: Some(rx),
            recycle,
            cur: Vec::new(),
            pos: 0,
            done: false,
            thread: Some(thread),
        })
    }
}

impl ChunkReader {
    fn empty() -> ChunkReader {
        let (recycle, _) = sync_channel(1);
        ChunkReader {
            rx: None,
            recycle,
            cur: Vec::new(),
            pos: 0,
            done: true,
            thread: None,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if let Some(avail) = self.cur.get(self.pos..) {
                if !avail.is_empty() {
                    let n = avail.len().min(buf.len());
                    if let (Some(d), Some(s)) = (buf.get_mut(..n), avail.get(..n)) {
                        d.copy_from_slice(s);
                    }
                    self.pos += n;
                    return Ok(n);
                }
            }
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            let Some(rx) = self.rx.as_ref() else {
                return Ok(0);
            };
            match rx.recv() {
                Ok(Ok(chunk)) => {
                    let old = std::mem::replace(&mut self.cur, chunk);
                    self.pos = 0;
                    if old.capacity() > 0 {
                        let _ = self.recycle.try_send(old);
                    }
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
    }
}

impl Drop for ChunkReader {
    fn drop(&mut self) {
        // Drop the receiver first so a decompressor blocked on a full channel
        // wakes up with a send error and exits; then wait for it.
        self.rx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
