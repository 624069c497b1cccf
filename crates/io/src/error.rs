//! The crate's one error type: small, `Copy`, and carrying the `errno` of the
//! system call that failed so that callers can report it without allocating.

use core::fmt;

/// Which system operation failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Socket,
    Bind,
    SetSockOpt,
    GetSockOpt,
    Mmap,
    Poll,
    Send,
    Recv,
    IfIndex,
    BpfMapCreate,
    BpfMapUpdate,
    BpfMapLookup,
    BpfMapDelete,
    BpfProgTestRun,
    BpfProgLoad,
    BpfLinkCreate,
    Setns,
    Open,
    Read,
    Write,
}

/// Everything that can go wrong in `io`. No variant allocates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IoError {
    /// A system call failed; `errno` is the raw OS error number.
    Sys { op: Op, errno: i32 },
    /// The interface name does not exist (or is longer than `IFNAMSIZ`).
    NoSuchInterface,
    /// A configuration value is out of range; the text says which.
    Config(&'static str),
    /// A frame to send is longer than a ring slot.
    FrameTooLarge { len: usize, max: usize },
    /// The kernel handed us something that violates its own ABI (a ring
    /// descriptor outside the mapped area); the frame is skipped.
    BadDescriptor,
    /// A pcap file is malformed; the text says where.
    Pcap(&'static str),
}

impl IoError {
    /// Builds [`IoError::Sys`] from the calling thread's current `errno`.
    pub(crate) fn last(op: Op) -> Self {
        IoError::Sys {
            op,
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        }
    }

    /// The raw OS error number, if this is a system-call failure.
    pub fn errno(self) -> Option<i32> {
        match self {
            IoError::Sys { errno, .. } => Some(errno),
            _ => None,
        }
    }
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Sys { op, errno } => write!(
                f,
                "{op:?} failed: {} (errno {errno})",
                std::io::Error::from_raw_os_error(*errno)
            ),
            IoError::NoSuchInterface => f.write_str("no such network interface"),
            IoError::Config(what) => write!(f, "bad configuration: {what}"),
            IoError::FrameTooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the slot size {max}")
            }
            IoError::BadDescriptor => f.write_str("kernel ring descriptor out of bounds"),
            IoError::Pcap(what) => write!(f, "malformed pcap: {what}"),
        }
    }
}

impl std::error::Error for IoError {}
