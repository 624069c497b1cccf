//! A node's devices for the fabric tests and benchmark: in-memory
//! external ports and the UDP fabric socket behind one `pkt::Device`.

use io::fabric::FabricDevice;
use io::IoError;
use pkt::{Batch, DevStats, Device, MemDevice, Pool};

/// A node's devices: in-memory external ports and the fabric socket.
pub enum Dev {
    /// An external port.
    Mem(MemDevice),
    /// The fabric socket.
    Fab(FabricDevice),
}

impl Device for Dev {
    type Error = IoError;
    fn name(&self) -> &str {
        match self {
            Dev::Mem(d) => d.name(),
            Dev::Fab(d) => d.name(),
        }
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        match self {
            Dev::Mem(d) => d.rx_burst(pool, batch, max),
            Dev::Fab(d) => d.rx_burst(pool, batch, max),
        }
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        match self {
            Dev::Mem(d) => d.tx_burst(batch),
            Dev::Fab(d) => d.tx_burst(batch),
        }
    }
    fn stats(&self) -> DevStats {
        match self {
            Dev::Mem(d) => d.stats(),
            Dev::Fab(d) => d.stats(),
        }
    }
    fn poll_fd(&self) -> Option<i32> {
        match self {
            Dev::Mem(_) => None,
            Dev::Fab(d) => d.poll_fd(),
        }
    }
    fn last_error(&self) -> Option<IoError> {
        match self {
            Dev::Mem(_) => None,
            Dev::Fab(d) => d.last_error(),
        }
    }
}
