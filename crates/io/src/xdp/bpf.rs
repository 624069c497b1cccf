//! The XDP side of AF_XDP without libbpf, libxdp or clang: an XSKMAP made
//! with `bpf(BPF_MAP_CREATE)`, a six-instruction program loaded with
//! `bpf(BPF_PROG_LOAD)`, and a BPF link (`BPF_LINK_CREATE`) that attaches
//! the single program to the interface.
//!
//! Why a link and not netlink `IFLA_XDP`: a link detaches when its last
//! descriptor closes, so the program goes away with the process even when it
//! is killed, and nothing is pinned (bpffs is not mounted inside
//! `ip netns exec` here). libxdp's multi-program dispatcher is not used:
//! it fails on this kernel, and one program per interface is all we need.

use super::asm::{insn, Insn};
use crate::error::{IoError, Op};
use crate::sys;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

// <linux/bpf.h>
const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_UPDATE_ELEM: i64 = 2;
const BPF_PROG_LOAD: i64 = 5;
const BPF_LINK_CREATE: i64 = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;
// <linux/if_link.h>
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where the kernel runs the XDP program.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// Generic XDP on the `sk_buff` (works on every device).
    Skb,
    /// The driver's native hook (veth has one; AF_XDP still copies).
    Driver,
}

/// `union bpf_attr`, as the prefix we use: 128 zeroed bytes (the kernel
/// requires unknown trailing fields to be zero).
#[repr(C, align(8))]
pub(crate) struct Attr(pub(crate) [u8; 128]);

impl Attr {
    pub(crate) fn new() -> Self {
        Attr([0; 128])
    }
    pub(crate) fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        if let Some(d) = self.0.get_mut(off..off + 4) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
        self
    }
    pub(crate) fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        if let Some(d) = self.0.get_mut(off..off + 8) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
        self
    }
}

pub(crate) fn bpf(cmd: i64, attr: &mut Attr, op: Op) -> Result<OwnedFd, IoError> {
    let fd = bpf_raw(cmd, attr, op)?;
    // SAFETY: the commands used with this helper return a new descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub(crate) fn bpf_raw(cmd: i64, attr: &mut Attr, op: Op) -> Result<RawFd, IoError> {
    // SAFETY: `attr` is a valid, fully initialised bpf_attr prefix of the
    // length passed; pointers inside it point to live buffers of the caller.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut Attr,
            core::mem::size_of::<Attr>(),
        )
    };
    if rc < 0 {
        return Err(IoError::last(op));
    }
    Ok(rc as RawFd)
}

/// `return bpf_redirect_map(&xskmap, ctx->rx_queue_index, XDP_PASS);`
/// A queue with no socket in the map falls back to the kernel stack.
fn program(map_fd: RawFd) -> [Insn; 6] {
    [
        // r2 = *(u32 *)(r1 + offsetof(struct xdp_md, rx_queue_index))
        insn(0x61, 2, 1, 16, 0),
        // r1 = map (ld_imm64, two slots, the map fd patched by the kernel)
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS (the action when the map slot is empty)
        insn(0xb7, 3, 0, 0, XDP_PASS),
        // call bpf_redirect_map
        insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        // exit (r0 holds the action)
        insn(0x95, 0, 0, 0, 0),
    ]
}

/// The XSKMAP, the program and its attachment to one interface. Dropping
/// the last reference detaches the program. Shared by the sockets of the
/// interface's queues through an `Arc` (cloned once per socket).
pub struct XdpProgram {
    ifindex: u32,
    queues: u32,
    map: OwnedFd,
    // Kept open: closing the link detaches the program.
    _prog: OwnedFd,
    _link: OwnedFd,
}

/// `bpf(BPF_MAP_CREATE)`: a map of `ty` with the given key and value
/// sizes, entries and `map_flags`.
pub(crate) fn create_map(
    ty: u32,
    key: u32,
    value: u32,
    entries: u32,
    flags: u32,
) -> Result<OwnedFd, IoError> {
    bpf(
        BPF_MAP_CREATE,
        Attr::new()
            .u32(0, ty)
            .u32(4, key)
            .u32(8, value)
            .u32(12, entries)
            .u32(16, flags),
        Op::BpfMapCreate,
    )
}

/// `bpf(BPF_PROG_LOAD)` of an XDP program. When the verifier refuses it
/// and `TESSERA_BPF_LOG` is set, the load is retried with the verifier's
/// log, which goes to stderr (for whoever changes a program).
pub(crate) fn load_xdp(insns: &[Insn], name: &[u8]) -> Result<OwnedFd, IoError> {
    let license = b"Dual MIT/GPL\0";
    let mut attr = Attr::new();
    attr.u32(0, BPF_PROG_TYPE_XDP)
        .u32(4, insns.len() as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(68, BPF_XDP);
    let n = name.len().min(15);
    if let (Some(d), Some(s)) = (attr.0.get_mut(48..48 + n), name.get(..n)) {
        d.copy_from_slice(s);
    }
    let r = bpf(BPF_PROG_LOAD, &mut attr, Op::BpfProgLoad);
    if r.is_err() && std::env::var_os("TESSERA_BPF_LOG").is_some() {
        let mut log = vec![0u8; 1 << 20];
        attr.u32(24, 2)
            .u32(28, log.len() as u32)
            .u64(32, log.as_mut_ptr() as u64);
        let _ = bpf(BPF_PROG_LOAD, &mut attr, Op::BpfProgLoad);
        let end = log.iter().position(|b| *b == 0).unwrap_or(log.len());
        eprintln!(
            "verifier log:\n{}",
            String::from_utf8_lossy(log.get(..end).unwrap_or(&[]))
        );
    }
    r
}

/// Attaches `prog` to `ifindex` in `mode` through a BPF link.
pub(crate) fn link_xdp(prog: &OwnedFd, ifindex: u32, mode: XdpMode) -> Result<OwnedFd, IoError> {
    let flags = match mode {
        XdpMode::Skb => XDP_FLAGS_SKB_MODE,
        XdpMode::Driver => XDP_FLAGS_DRV_MODE,
    };
    bpf(
        BPF_LINK_CREATE,
        Attr::new()
            .u32(0, prog.as_raw_fd() as u32)
            .u32(4, ifindex)
            .u32(8, BPF_XDP)
            .u32(12, flags),
        Op::BpfLinkCreate,
    )
}

/// An XSKMAP with one slot per RX queue.
pub(crate) fn xskmap(queues: u32) -> Result<OwnedFd, IoError> {
    if queues == 0 || queues > 1024 {
        return Err(IoError::Config("queues must be in 1..=1024"));
    }
    create_map(BPF_MAP_TYPE_XSKMAP, 4, 4, queues, 0)
}

impl XdpProgram {
    /// Loads the redirect program for interface `ifname` with room for
    /// `queues` sockets (one per RX queue) and attaches it in `mode`.
    pub fn attach(ifname: &str, mode: XdpMode, queues: u32) -> Result<Arc<Self>, IoError> {
        Self::attach_with(ifname, mode, queues, |map| {
            load_xdp(&program(map.as_raw_fd()), b"tessera_xsk")
        })
    }

    /// Loads the program `load` makes (given the XSKMAP) and attaches it.
    pub(crate) fn attach_with(
        ifname: &str,
        mode: XdpMode,
        queues: u32,
        load: impl FnOnce(&OwnedFd) -> Result<OwnedFd, IoError>,
    ) -> Result<Arc<Self>, IoError> {
        let map = xskmap(queues)?;
        let ifindex = sys::ifindex(ifname)?;
        let prog = load(&map)?;
        let link = link_xdp(&prog, ifindex, mode)?;
        Ok(Arc::new(XdpProgram {
            ifindex,
            queues,
            map,
            _prog: prog,
            _link: link,
        }))
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn queues(&self) -> u32 {
        self.queues
    }

    /// Points queue `queue`'s map slot at a bound AF_XDP socket.
    pub(crate) fn register(&self, queue: u32, xsk: RawFd) -> Result<(), IoError> {
        if queue >= self.queues {
            return Err(IoError::Config("queue id beyond the XSKMAP size"));
        }
        let key: u32 = queue;
        let val: u32 = xsk as u32;
        bpf_raw(
            BPF_MAP_UPDATE_ELEM,
            Attr::new()
                .u32(0, self.map.as_raw_fd() as u32)
                .u64(8, &key as *const u32 as u64)
                .u64(16, &val as *const u32 as u64),
            Op::BpfMapUpdate,
        )?;
        Ok(())
    }
}
