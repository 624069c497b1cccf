//! Classic libpcap files (the `tcpdump` format, link type Ethernet) for
//! tests: a reader that never panics on garbage and a writer.
//!
//! Format: 24-byte global header (magic `a1b2c3d4` microsecond or
//! `a1b23c4d` nanosecond, either byte order), then per packet a 16-byte
//! record header (seconds, sub-seconds, captured length, original length)
//! and the captured bytes.

/// Link type Ethernet (LINKTYPE_ETHERNET).
pub const LINKTYPE_ETHERNET: u32 = 1;
const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;

/// Why a pcap file did not parse.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PcapError {
    /// Shorter than a header says.
    Truncated,
    /// Not a pcap magic number.
    BadMagic,
    /// A link type other than Ethernet.
    NotEthernet,
    /// A record's captured length exceeds the snap length or 256 KiB.
    BadRecord,
}

impl std::fmt::Display for PcapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            PcapError::Truncated => "truncated pcap",
            PcapError::BadMagic => "not a pcap file",
            PcapError::NotEthernet => "pcap link type is not Ethernet",
            PcapError::BadRecord => "bad pcap record length",
        };
        f.write_str(s)
    }
}
impl std::error::Error for PcapError {}

/// One packet record.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Timestamp seconds.
    pub ts_sec: u32,
    /// Timestamp sub-second part (micro- or nanoseconds as the file says).
    pub ts_frac: u32,
    /// Original length on the wire.
    pub orig_len: u32,
    /// Captured bytes.
    pub data: &'a [u8],
}

/// An iterator over the records of an in-memory pcap file.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
    swap: bool,
    /// True for nanosecond timestamps.
    pub nanos: bool,
    failed: bool,
}

fn u32_at(b: &[u8], off: usize, swap: bool) -> Option<u32> {
    let a: [u8; 4] = b.get(off..off + 4)?.try_into().ok()?;
    let v = u32::from_le_bytes(a);
    Some(if swap { v.swap_bytes() } else { v })
}

impl<'a> Reader<'a> {
    /// Checks the global header.
    pub fn new(file: &'a [u8]) -> Result<Reader<'a>, PcapError> {
        let magic = u32_at(file, 0, false).ok_or(PcapError::Truncated)?;
        let (swap, nanos) = match magic {
            MAGIC_US => (false, false),
            MAGIC_NS => (false, true),
            m if m.swap_bytes() == MAGIC_US => (true, false),
            m if m.swap_bytes() == MAGIC_NS => (true, true),
            _ => return Err(PcapError::BadMagic),
        };
        let link = u32_at(file, 20, swap).ok_or(PcapError::Truncated)?;
        if link & 0xffff != LINKTYPE_ETHERNET {
            return Err(PcapError::NotEthernet);
        }
        Ok(Reader {
            rest: file.get(24..).unwrap_or(&[]),
            swap,
            nanos,
            failed: false,
        })
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Record<'a>, PcapError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        let r = (|| {
            let ts_sec = u32_at(self.rest, 0, self.swap).ok_or(PcapError::Truncated)?;
            let ts_frac = u32_at(self.rest, 4, self.swap).ok_or(PcapError::Truncated)?;
            let caplen = u32_at(self.rest, 8, self.swap).ok_or(PcapError::Truncated)? as usize;
            let orig_len = u32_at(self.rest, 12, self.swap).ok_or(PcapError::Truncated)?;
            if caplen > 256 * 1024 {
                return Err(PcapError::BadRecord);
            }
            let data = self.rest.get(16..16 + caplen).ok_or(PcapError::Truncated)?;
            self.rest = self.rest.get(16 + caplen..).unwrap_or(&[]);
            Ok(Record {
                ts_sec,
                ts_frac,
                orig_len,
                data,
            })
        })();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// Reads every frame of a pcap file.
pub fn read_frames(file: &[u8]) -> Result<Vec<Vec<u8>>, PcapError> {
    Reader::new(file)?
        .map(|r| r.map(|r| r.data.to_vec()))
        .collect()
}

/// Writes a pcap file (microsecond timestamps, little-endian, Ethernet).
#[derive(Debug)]
pub struct Writer<W: std::io::Write> {
    out: W,
}

impl<W: std::io::Write> Writer<W> {
    /// Writes the global header (snaplen 65535).
    pub fn new(mut out: W) -> std::io::Result<Writer<W>> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_US.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&65535u32.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(Writer { out })
    }
    /// Appends one frame with the given timestamp.
    pub fn write(&mut self, ts_sec: u32, ts_usec: u32, frame: &[u8]) -> std::io::Result<()> {
        let len = u32::try_from(frame.len()).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        h[4..8].copy_from_slice(&ts_usec.to_le_bytes());
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(frame)
    }
    /// Returns the sink.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A whole pcap file in memory, frame `i` stamped `i` microseconds after
/// the epoch (deterministic, so golden files compare byte for byte).
pub fn to_bytes<T: AsRef<[u8]>>(frames: &[T]) -> Vec<u8> {
    let mut w = match Writer::new(Vec::new()) {
        Ok(w) => w,
        Err(_) => return Vec::new(),
    };
    for (i, f) in frames.iter().enumerate() {
        // Writing to a Vec cannot fail.
        let _ = w.write(0, i as u32, f.as_ref());
    }
    w.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_errors() {
        let file = to_bytes(&[vec![1u8, 2, 3], vec![4u8; 60]]);
        let frames = read_frames(&file).unwrap();
        assert_eq!(frames, vec![vec![1, 2, 3], vec![4; 60]]);
        assert_eq!(read_frames(&file[..30]), Err(PcapError::Truncated));
        assert_eq!(read_frames(&file[..10]), Err(PcapError::Truncated));
        let mut bad = file.clone();
        bad[0] = 0;
        assert_eq!(read_frames(&bad), Err(PcapError::BadMagic));
        let mut raw = file.clone();
        raw[20] = 101;
        assert_eq!(read_frames(&raw), Err(PcapError::NotEthernet));
        // Big-endian file.
        let mut be = file.clone();
        for w in [0usize, 8, 12, 16, 20, 24, 28, 32, 36] {
            // Global header words and the first record header.
            be[w..w + 4].reverse();
        }
        be[4..6].reverse();
        be[6..8].reverse();
        let first = Reader::new(&be).unwrap().next().unwrap().unwrap();
        assert_eq!(first.data, &[1, 2, 3]);
        assert_eq!(first.ts_frac, 0);
    }
}
