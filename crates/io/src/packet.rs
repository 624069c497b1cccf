//! AF_PACKET with TPACKET_V3: one socket bound to one interface, an mmap'd
//! RX ring of blocks and an mmap'd TX ring of fixed frames (kernel
//! `Documentation/networking/packet_mmap.rst`).
//!
//! RX: the kernel fills whole blocks and flips the block status to
//! `TP_STATUS_USER`; we walk the block's packets by `tp_next_offset` and
//! hand the block back (`TP_STATUS_KERNEL`) once its last packet is taken.
//! TX: frames are filled in ring order, marked `TP_STATUS_SEND_REQUEST`,
//! and one `sendto(NULL, 0, MSG_DONTWAIT)` per `kn` frames transmits them.
//!
//! Multi-queue: several sockets on one interface joined to a
//! `PACKET_FANOUT` group (hash mode spreads by flow), one socket per core.
//!
//! VLAN: the kernel takes a received frame's 802.1Q tag out of the frame
//! (`skb_vlan_untag`, or the NIC's offload) before AF_PACKET sees it and
//! reports it in the ring's header (`TP_STATUS_VLAN_VALID`, `tp_vlan_tci`,
//! `tp_vlan_tpid`); we put it back after the MAC addresses, so a frame
//! reads as it was on the wire (as libpcap does). Frames sent keep their
//! tags in the data.
//!
//! Limits: the kernel still runs its own stack on every received frame
//! (AF_PACKET taps, it does not steal), which costs CPU; frames longer than
//! a ring frame are truncated by the kernel (`tp_snaplen < tp_len`) and
//! dropped here.

use crate::device::{ring_device, Common, FrameRing};
use crate::error::IoError;
use crate::sys::{self, Mmap};
use core::sync::atomic::{AtomicU32, Ordering};
use std::os::fd::{AsRawFd, OwnedFd};

// <linux/if_packet.h>
const PACKET_RX_RING: i32 = 5;
const PACKET_STATISTICS: i32 = 6;
const PACKET_VERSION: i32 = 10;
const PACKET_TX_RING: i32 = 13;
const PACKET_FANOUT: i32 = 18;
const PACKET_QDISC_BYPASS: i32 = 20;
const PACKET_IGNORE_OUTGOING: i32 = 23;
const TPACKET_V3: i32 = 2;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_SENDING: u32 = 2;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
const TP_STATUS_VLAN_VALID: u32 = 0x10;
const TP_STATUS_VLAN_TPID_VALID: u32 = 0x40;
/// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where TX data starts.
const TPACKET3_HDR_ALIGNED: usize = 48;
// Offsets inside `struct tpacket_block_desc` (version, offset_to_priv, then
// `struct tpacket_hdr_v1`).
const BD_STATUS: usize = 8;
const BD_NUM_PKTS: usize = 12;
const BD_FIRST_PKT: usize = 16;
// Offsets inside `struct tpacket3_hdr`.
const H_NEXT: usize = 0;
const H_SNAPLEN: usize = 12;
const H_LEN: usize = 16;
const H_STATUS: usize = 20;
const H_MAC: usize = 24;
// `struct tpacket_hdr_variant1` after `tp_net`: rxhash, vlan_tci, vlan_tpid.
const H_VLAN_TCI: usize = 32;
const H_VLAN_TPID: usize = 36;

#[repr(C)]
#[derive(Copy, Clone, Default)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

#[repr(C)]
#[derive(Copy, Clone, Default)]
struct TpacketStatsV3 {
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
}

/// How a fanout group spreads packets over its sockets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FanoutMode {
    /// By flow hash (`PACKET_FANOUT_HASH`): one flow stays on one socket.
    Hash,
    /// Round robin (`PACKET_FANOUT_LB`).
    RoundRobin,
    /// By the CPU the packet arrived on (`PACKET_FANOUT_CPU`).
    Cpu,
    /// By the device's RX queue (`PACKET_FANOUT_QM`).
    QueueMapping,
}

impl FanoutMode {
    fn raw(self) -> u32 {
        match self {
            FanoutMode::Hash => 0,
            FanoutMode::RoundRobin => 1,
            FanoutMode::Cpu => 2,
            FanoutMode::QueueMapping => 5,
        }
    }
}

/// Joins the socket to a fanout group: every socket with the same `group`
/// on the same interface shares the load.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fanout {
    pub group: u16,
    pub mode: FanoutMode,
}

/// Configuration of one [`PacketSocket`].
#[derive(Clone, Debug)]
pub struct PacketConfig {
    pub ifname: String,
    /// RX block size in bytes: a power of two, a multiple of the page size.
    pub block_size: u32,
    pub block_count: u32,
    /// Size of one frame slot (RX and TX); bounds the frame length.
    pub frame_size: u32,
    /// The kernel retires a partly filled RX block after this many ms, so a
    /// slow trickle is not held back waiting for a full block.
    pub block_timeout_ms: u32,
    /// TX ring frames.
    pub tx_frames: u32,
    pub fanout: Option<Fanout>,
    /// Skip the qdisc layer on TX (`PACKET_QDISC_BYPASS`).
    pub qdisc_bypass: bool,
}

impl PacketConfig {
    pub fn new(ifname: &str) -> Self {
        PacketConfig {
            ifname: ifname.to_string(),
            block_size: 1 << 16,
            block_count: 64,
            frame_size: 2048,
            block_timeout_ms: 1,
            tx_frames: 1024,
            fanout: None,
            qdisc_bypass: true,
        }
    }
}

/// An AF_PACKET TPACKET_V3 socket with RX and TX rings on one interface.
pub struct PacketSocket {
    // Field order matters: the mapping must go before the socket closes.
    map: Mmap,
    fd: OwnedFd,
    ifindex: u32,
    rx_block_size: usize,
    rx_blocks: usize,
    rx_cur: usize,
    /// Packets left in the block being read, and the offset of the next.
    rx_left: u32,
    rx_off: usize,
    rx_in_block: bool,
    tx_base: usize,
    tx_frame_size: usize,
    tx_frames: usize,
    tx_frames_per_block: usize,
    tx_block_size: usize,
    tx_cur: usize,
    tx_pending: usize,
    /// Kernel ring drops read so far (`PACKET_STATISTICS` resets on read).
    drops_seen: std::cell::Cell<u64>,
    /// A received frame with its VLAN tag put back (grown once to the
    /// largest such frame; no allocation per packet after that).
    vlan_buf: Vec<u8>,
    common: Common,
}

impl PacketSocket {
    /// Opens, configures and binds the socket.
    pub fn open(cfg: &PacketConfig) -> Result<Self, IoError> {
        let page = 4096u32;
        if !cfg.block_size.is_power_of_two() || cfg.block_size < page {
            return Err(IoError::Config("block_size must be a power of two >= 4096"));
        }
        if !cfg.frame_size.is_power_of_two()
            || cfg.frame_size < 256
            || cfg.frame_size > cfg.block_size
        {
            return Err(IoError::Config(
                "frame_size must be a power of two in 256..=block_size",
            ));
        }
        if cfg.block_count == 0 || cfg.tx_frames == 0 {
            return Err(IoError::Config("block_count and tx_frames must be > 0"));
        }
        let ifindex = sys::ifindex(&cfg.ifname)?;
        // Protocol 0: nothing is queued to the socket before `bind`.
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0)?;
        let raw = fd.as_raw_fd();
        sys::setsockopt(raw, libc::SOL_PACKET, PACKET_VERSION, &TPACKET_V3)?;
        let rx = TpacketReq3 {
            block_size: cfg.block_size,
            block_nr: cfg.block_count,
            frame_size: cfg.frame_size,
            frame_nr: cfg.block_size / cfg.frame_size * cfg.block_count,
            retire_blk_tov: cfg.block_timeout_ms.max(1),
            ..Default::default()
        };
        sys::setsockopt(raw, libc::SOL_PACKET, PACKET_RX_RING, &rx)?;
        // The TX ring reuses the block geometry; V3 TX needs the retire
        // timeout and private area to be zero.
        let tx_fpb = (cfg.block_size / cfg.frame_size) as usize;
        let tx_blocks = (cfg.tx_frames as usize).div_ceil(tx_fpb);
        let tx = TpacketReq3 {
            block_size: cfg.block_size,
            block_nr: tx_blocks as u32,
            frame_size: cfg.frame_size,
            frame_nr: (tx_blocks * tx_fpb) as u32,
            ..Default::default()
        };
        sys::setsockopt(raw, libc::SOL_PACKET, PACKET_TX_RING, &tx)?;
        let rx_len = cfg.block_size as usize * cfg.block_count as usize;
        let tx_len = cfg.block_size as usize * tx_blocks;
        // One mapping: the RX ring first, then the TX ring.
        let map = Mmap::of_fd(&fd, rx_len + tx_len, 0)?;
        if cfg.qdisc_bypass {
            sys::setsockopt(raw, libc::SOL_PACKET, PACKET_QDISC_BYPASS, &1i32)?;
        }
        // Our own transmissions must not come back on our RX ring.
        sys::setsockopt(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32)?;
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { core::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        sys::bind(raw, &sll)?;
        if let Some(f) = cfg.fanout {
            let v: u32 = u32::from(f.group) | (f.mode.raw() << 16);
            sys::setsockopt(raw, libc::SOL_PACKET, PACKET_FANOUT, &v)?;
        }
        Ok(PacketSocket {
            map,
            fd,
            ifindex,
            rx_block_size: cfg.block_size as usize,
            rx_blocks: cfg.block_count as usize,
            rx_cur: 0,
            rx_left: 0,
            rx_off: 0,
            rx_in_block: false,
            tx_base: rx_len,
            tx_frame_size: cfg.frame_size as usize,
            tx_frames: tx_blocks * tx_fpb,
            tx_frames_per_block: tx_fpb,
            tx_block_size: cfg.block_size as usize,
            tx_cur: 0,
            tx_pending: 0,
            drops_seen: std::cell::Cell::new(0),
            vlan_buf: Vec::new(),
            common: Common::new(&cfg.ifname),
        })
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The kernel's counters since the last call (`PACKET_STATISTICS`
    /// resets on read): packets seen and packets dropped for lack of ring
    /// space. The drops also add to what `pkt::Device::rx_ring_drops`
    /// reports.
    pub fn kernel_stats(&self) -> Result<(u32, u32), IoError> {
        let s: TpacketStatsV3 =
            sys::getsockopt(self.fd.as_raw_fd(), libc::SOL_PACKET, PACKET_STATISTICS)?;
        self.drops_seen
            .set(self.drops_seen.get() + u64::from(s.drops));
        Ok((s.packets, s.drops))
    }

    /// Frames the kernel dropped for lack of RX ring space since the
    /// socket was opened.
    fn ring_drops(&self) -> Option<u64> {
        self.kernel_stats().ok()?;
        Some(self.drops_seen.get())
    }

    /// The status word at byte `off` of the mapping, shared with the kernel.
    fn status_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off + 4 <= self.map.len() && off % 4 == 0);
        // SAFETY: every caller passes a 4-aligned offset of a status field
        // inside the mapping (block or frame headers, both 8-aligned); the
        // kernel accesses the word concurrently, hence the atomic view.
        unsafe { &*self.map.ptr().add(off).cast::<AtomicU32>() }
    }

    /// Reads a `u32` header field at `off` (the caller checked bounds).
    fn u32_at(&self, off: usize) -> u32 {
        debug_assert!(off + 4 <= self.map.len());
        // SAFETY: `off + 4` lies inside the mapping (checked by callers);
        // the field was published before the block status we acquired.
        unsafe { self.map.ptr().add(off).cast::<u32>().read_unaligned() }
    }

    fn tx_frame_off(&self, i: usize) -> usize {
        self.tx_base
            + (i / self.tx_frames_per_block) * self.tx_block_size
            + (i % self.tx_frames_per_block) * self.tx_frame_size
    }
}

ring_device!(PacketSocket);

impl PacketSocket {
    fn fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }
    /// Not bound to a queue: the fanout group's hash picks the socket.
    fn queues(&self, _out: &mut Vec<pkt::QueueStats>) {}
}

/// `frame` with the 802.1Q (or `tpid`) tag `tci` inserted after its MAC
/// addresses, into `buf` (`frame` is at least 12 bytes).
fn retag(buf: &mut Vec<u8>, frame: &[u8], tpid: u16, tci: u16) {
    buf.clear();
    buf.extend_from_slice(&frame[..12]);
    buf.extend_from_slice(&tpid.to_be_bytes());
    buf.extend_from_slice(&tci.to_be_bytes());
    buf.extend_from_slice(&frame[12..]);
}

impl FrameRing for PacketSocket {
    fn common(&mut self) -> &mut Common {
        &mut self.common
    }

    fn rx_frames<F: FnMut(&[u8])>(&mut self, max: usize, mut f: F) -> Result<usize, IoError> {
        let mut n = 0;
        while n < max {
            let blk = self.rx_cur * self.rx_block_size;
            if !self.rx_in_block {
                if self.status_at(blk + BD_STATUS).load(Ordering::Acquire) & TP_STATUS_USER == 0 {
                    break;
                }
                self.rx_in_block = true;
                self.rx_left = self.u32_at(blk + BD_NUM_PKTS);
                self.rx_off = self.u32_at(blk + BD_FIRST_PKT) as usize;
            }
            if self.rx_left > 0 {
                let bs = self.rx_block_size;
                let h = self.rx_off;
                if h + TPACKET3_HDR_ALIGNED > bs {
                    // The kernel wrote an offset outside the block: drop the rest.
                    self.common.stats.errors += 1;
                    self.rx_left = 0;
                } else {
                    let snap = self.u32_at(blk + h + H_SNAPLEN) as usize;
                    let len = self.u32_at(blk + h + H_LEN) as usize;
                    let mac = usize::from(self.u32_at(blk + h + H_MAC) as u16);
                    let next = self.u32_at(blk + h + H_NEXT) as usize;
                    if h + mac + snap <= bs && snap == len {
                        // SAFETY: [blk+h+mac, +snap) lies in this block (checked
                        // above), which we own until we reset its status; no
                        // other slice of it is alive.
                        let frame = unsafe {
                            core::slice::from_raw_parts(self.map.ptr().add(blk + h + mac), snap)
                        };
                        self.common.stats.rx_bytes += snap as u64;
                        let status = self.u32_at(blk + h + H_STATUS);
                        if status & TP_STATUS_VLAN_VALID != 0 && frame.len() >= 12 {
                            let tci = self.u32_at(blk + h + H_VLAN_TCI) as u16;
                            let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                                self.u32_at(blk + h + H_VLAN_TPID) as u16
                            } else {
                                0x8100
                            };
                            retag(&mut self.vlan_buf, frame, tpid, tci);
                            f(&self.vlan_buf);
                        } else {
                            f(frame);
                        }
                        n += 1;
                    } else {
                        // Truncated (longer than a frame slot) or malformed.
                        self.common.stats.errors += 1;
                    }
                    self.rx_left -= 1;
                    self.rx_off = h + next;
                }
            }
            if self.rx_left == 0 {
                self.status_at(blk + BD_STATUS)
                    .store(TP_STATUS_KERNEL, Ordering::Release);
                self.rx_in_block = false;
                self.rx_cur = (self.rx_cur + 1) % self.rx_blocks;
            }
        }
        if n == 0 {
            self.common.stats.rx_empty_polls += 1;
        }
        Ok(n)
    }

    fn tx_frame(&mut self, frame: &[u8]) -> Result<bool, IoError> {
        let max = self.tx_frame_size - TPACKET3_HDR_ALIGNED;
        if frame.len() > max {
            return Err(IoError::FrameTooLarge {
                len: frame.len(),
                max,
            });
        }
        let off = self.tx_frame_off(self.tx_cur);
        let st = self.status_at(off + H_STATUS).load(Ordering::Acquire);
        match st {
            TP_STATUS_KERNEL => {}
            TP_STATUS_WRONG_FORMAT => self.common.stats.errors += 1,
            _ => {
                // SEND_REQUEST or SENDING: the kernel still owns the slot.
                debug_assert!(st & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING) != 0);
                self.common.stats.tx_ring_full += 1;
                return Ok(false);
            }
        }
        // SAFETY: the slot [off, off + frame_size) is inside the TX part of
        // the mapping and is ours while its status says available; the data
        // area starts after the aligned header and `frame.len() <= max`.
        unsafe {
            let base = self.map.ptr().add(off);
            core::ptr::copy_nonoverlapping(
                frame.as_ptr(),
                base.add(TPACKET3_HDR_ALIGNED),
                frame.len(),
            );
            base.add(H_LEN).cast::<u32>().write(frame.len() as u32);
            base.add(H_SNAPLEN).cast::<u32>().write(frame.len() as u32);
            base.add(H_NEXT).cast::<u32>().write(0);
        }
        self.status_at(off + H_STATUS)
            .store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.tx_cur = (self.tx_cur + 1) % self.tx_frames;
        self.tx_pending += 1;
        self.common.stats.tx += 1;
        self.common.stats.tx_bytes += frame.len() as u64;
        Ok(true)
    }

    fn tx_kick(&mut self) -> Result<(), IoError> {
        if self.tx_pending == 0 {
            return Ok(());
        }
        self.common.stats.tx_kicks += 1;
        // With MSG_DONTWAIT the kernel sends every SEND_REQUEST frame it
        // finds and returns; frames it could not send stay queued and go
        // with the next kick.
        sys::kick_tx(self.fd.as_raw_fd())?;
        self.tx_pending = 0;
        Ok(())
    }

    fn tx_queued(&self) -> usize {
        self.tx_pending
    }
}

#[cfg(test)]
mod tests {
    use super::retag;

    #[test]
    fn retag_puts_the_tag_after_the_macs() {
        let frame: Vec<u8> = (0u8..20).collect();
        let mut buf = Vec::new();
        retag(&mut buf, &frame, 0x8100, 0x2014);
        assert_eq!(&buf[..12], &frame[..12]);
        assert_eq!(&buf[12..16], &[0x81, 0x00, 0x20, 0x14]);
        assert_eq!(&buf[16..], &frame[12..]);
        retag(&mut buf, &frame[..12], 0x88a8, 7);
        assert_eq!(buf.len(), 16, "reused, not appended");
    }
}
