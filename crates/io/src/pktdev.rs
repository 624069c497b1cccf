//! Adapter from this crate's byte-frame devices to `pkt::Device`, the
//! batch source/sink that crate `graph` drives: RX copies each frame from
//! the kernel ring into a buffer of the core's `pkt::Pool` (copy mode
//! copies in the kernel too; sharing the pool as the UMEM would save this
//! copy and is future work), TX copies the packet into a ring slot and
//! recycles the buffer at once, kicking the kernel every `kn` frames.

use crate::device::{Batch as Kb, FrameRx, FrameTx};
use pkt::{Batch, Device, Pool};

/// Any [`FrameRx`] + [`FrameTx`] device as a `pkt::Device`.
pub struct PktDevice<D> {
    name: String,
    dev: D,
    batch: Kb,
    stats: pkt::DevStats,
    /// The last I/O error, kept because `pkt::Device` calls do not return
    /// errors (the frame is dropped and counted).
    last_error: Option<crate::IoError>,
}

impl<D: FrameRx + FrameTx> PktDevice<D> {
    pub fn new(name: &str, dev: D, batch: Kb) -> Self {
        PktDevice {
            name: name.to_string(),
            dev,
            batch,
            stats: pkt::DevStats::default(),
            last_error: None,
        }
    }

    pub fn inner(&self) -> &D {
        &self.dev
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    pub fn into_inner(self) -> D {
        self.dev
    }

    /// The most recent I/O error, if any (counted in the stats as drops).
    pub fn last_error(&self) -> Option<crate::IoError> {
        self.last_error
    }
}

impl<D: FrameRx + FrameTx> Device for PktDevice<D> {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let want = max.min(batch.room()).min(self.batch.kp);
        let mut n = 0;
        let mut nobuf = 0;
        let r = self.dev.rx_batch(want, |f| match pool.alloc_from(f) {
            Some(p) => {
                if batch.push(p).is_ok() {
                    n += 1;
                }
            }
            None => nobuf += 1,
        });
        if let Err(e) = r {
            self.last_error = Some(e);
        }
        self.stats.rx += n as u64;
        self.stats.rx_nobuf += nobuf;
        n
    }

    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        let mut sent = 0;
        let mut dropped = 0usize;
        for p in batch.iter() {
            match self.dev.tx_push(p.data()) {
                Ok(true) => sent += 1,
                Ok(false) => break,
                Err(e) => {
                    // Too large or a failed kick: this frame cannot go.
                    self.last_error = Some(e);
                    dropped += 1;
                    sent += 1;
                }
            }
            if self.dev.tx_pending() >= self.batch.kn {
                if let Err(e) = self.dev.tx_flush() {
                    self.last_error = Some(e);
                }
            }
        }
        // Sent (and unsendable) packets leave the batch; their buffers go
        // back to the pool as they drop.
        batch.drain_front(sent);
        self.stats.tx += (sent - dropped) as u64;
        self.stats.tx_dropped += dropped as u64;
        sent - dropped
    }

    fn flush(&mut self) {
        if let Err(e) = self.dev.tx_flush() {
            self.last_error = Some(e);
        }
    }

    fn stats(&self) -> pkt::DevStats {
        self.stats
    }
}
