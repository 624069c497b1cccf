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
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Self {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        if let Some(d) = self.0.get_mut(off..off + 4) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        if let Some(d) = self.0.get_mut(off..off + 8) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
        self
    }
}

fn bpf(cmd: i64, attr: &mut Attr, op: Op) -> Result<OwnedFd, IoError> {
    let fd = bpf_raw(cmd, attr, op)?;
    // SAFETY: the commands used with this helper return a new descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bpf_raw(cmd: i64, attr: &mut Attr, op: Op) -> Result<RawFd, IoError> {
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

/// One eBPF instruction (`struct bpf_insn`).
#[repr(C)]
#[derive(Copy, Clone)]
struct Insn {
    code: u8,
    regs: u8, // dst in the low nibble, src in the high nibble
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | (dst & 0xf),
        off,
        imm,
    }
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

impl XdpProgram {
    /// Loads the redirect program for interface `ifname` with room for
    /// `queues` sockets (one per RX queue) and attaches it in `mode`.
    pub fn attach(ifname: &str, mode: XdpMode, queues: u32) -> Result<Arc<Self>, IoError> {
        if queues == 0 || queues > 1024 {
            return Err(IoError::Config("queues must be in 1..=1024"));
        }
        let ifindex = sys::ifindex(ifname)?;
        let map = bpf(
            BPF_MAP_CREATE,
            Attr::new()
                .u32(0, BPF_MAP_TYPE_XSKMAP)
                .u32(4, 4)
                .u32(8, 4)
                .u32(12, queues),
            Op::BpfMapCreate,
        )?;
        let insns = program(map.as_raw_fd());
        let license = b"Dual MIT/GPL\0";
        let name = b"tessera_xsk\0";
        let mut attr = Attr::new();
        attr.u32(0, BPF_PROG_TYPE_XDP)
            .u32(4, insns.len() as u32)
            .u64(8, insns.as_ptr() as u64)
            .u64(16, license.as_ptr() as u64)
            .u32(68, BPF_XDP);
        if let Some(d) = attr.0.get_mut(48..48 + name.len()) {
            d.copy_from_slice(name);
        }
        let prog = bpf(BPF_PROG_LOAD, &mut attr, Op::BpfProgLoad)?;
        let flags = match mode {
            XdpMode::Skb => XDP_FLAGS_SKB_MODE,
            XdpMode::Driver => XDP_FLAGS_DRV_MODE,
        };
        let link = bpf(
            BPF_LINK_CREATE,
            Attr::new()
                .u32(0, prog.as_raw_fd() as u32)
                .u32(4, ifindex)
                .u32(8, BPF_XDP)
                .u32(12, flags),
            Op::BpfLinkCreate,
        )?;
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
