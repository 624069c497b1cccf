//! pcap files as a device: RX replays the frames of a file once, TX appends
//! every frame to another file. Parsing and writing are crate `pkt`'s
//! (`pkt::pcap`); this makes them a `pkt::Device` so the same poll loop and
//! graph drive a file or a real interface. Timestamps of
//! written frames are the frame's index in microseconds, so output is
//! byte-for-byte reproducible for golden tests.

use crate::device::{ring_device, Common, FrameRing};
use crate::error::{IoError, Op};
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

fn io_err(op: Op, e: &std::io::Error) -> IoError {
    IoError::Sys {
        op,
        errno: e.raw_os_error().unwrap_or(libc::EIO),
    }
}

fn pcap_err(e: pkt::pcap::PcapError) -> IoError {
    use pkt::pcap::PcapError as P;
    IoError::Pcap(match e {
        P::Truncated => "truncated",
        P::BadMagic => "bad magic",
        P::NotEthernet => "link type is not Ethernet",
        P::BadRecord => "bad record length",
    })
}

/// A pcap-file device: frames in from one file, frames out to another.
pub struct PcapDevice {
    frames: Vec<Vec<u8>>,
    next: usize,
    out: Option<pkt::pcap::Writer<BufWriter<File>>>,
    pending: usize,
    common: Common,
}

impl PcapDevice {
    /// Reads every frame of `rx` (if given) and creates `tx` (if given).
    pub fn open(rx: Option<&Path>, tx: Option<&Path>) -> Result<Self, IoError> {
        let frames = match rx {
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|e| io_err(Op::Read, &e))?;
                pkt::pcap::read_frames(&bytes).map_err(pcap_err)?
            }
            None => Vec::new(),
        };
        let out = match tx {
            Some(p) => {
                let f = File::create(p).map_err(|e| io_err(Op::Open, &e))?;
                Some(pkt::pcap::Writer::new(BufWriter::new(f)).map_err(|e| io_err(Op::Write, &e))?)
            }
            None => None,
        };
        Ok(PcapDevice {
            frames,
            next: 0,
            out,
            pending: 0,
            common: Common::new("pcap"),
        })
    }

    /// Writes out buffered TX frames and closes the output file, reporting
    /// any write error (dropping the device also flushes, silently).
    pub fn finish(mut self) -> Result<(), IoError> {
        use std::io::Write;
        if let Some(w) = self.out.take() {
            let mut b = w.into_inner();
            b.flush().map_err(|e| io_err(Op::Write, &e))?;
        }
        Ok(())
    }

    /// Frames not yet received.
    pub fn remaining(&self) -> usize {
        self.frames.len().saturating_sub(self.next)
    }
}

ring_device!(PcapDevice);

impl PcapDevice {
    fn fd(&self) -> Option<i32> {
        None
    }
    fn ring_drops(&self) -> Option<u64> {
        None
    }
    fn queues(&self, _out: &mut Vec<pkt::QueueStats>) {}
}

impl FrameRing for PcapDevice {
    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn rx_frames<F: FnMut(&[u8])>(&mut self, max: usize, mut f: F) -> Result<usize, IoError> {
        let mut n = 0;
        while n < max {
            let Some(fr) = self.frames.get(self.next) else {
                break;
            };
            self.next += 1;
            self.common.stats.rx_bytes += fr.len() as u64;
            f(fr);
            n += 1;
        }
        if n == 0 {
            self.common.stats.rx_empty_polls += 1;
        }
        Ok(n)
    }

    fn tx_frame(&mut self, frame: &[u8]) -> Result<bool, IoError> {
        let Some(w) = self.out.as_mut() else {
            // No output file: a sink that counts.
            self.common.stats.tx += 1;
            return Ok(true);
        };
        let i = self.common.stats.tx;
        w.write((i / 1_000_000) as u32, (i % 1_000_000) as u32, frame)
            .map_err(|e| io_err(Op::Write, &e))?;
        self.common.stats.tx += 1;
        self.common.stats.tx_bytes += frame.len() as u64;
        self.pending += 1;
        Ok(true)
    }

    fn tx_kick(&mut self) -> Result<(), IoError> {
        // Frames are buffered in a BufWriter; `finish` (or drop) writes them.
        self.pending = 0;
        Ok(())
    }

    fn tx_queued(&self) -> usize {
        self.pending
    }
}
