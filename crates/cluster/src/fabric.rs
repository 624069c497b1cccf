//! The cluster option and the two fabric messages built on it: a data
//! packet carrying one or more inner Ethernet frames for one egress node
//! (packed, seed 004 §2.3.3), and a BECN control message (seed 004 ch. 5,
//! for the congestion controllers). Wire format and byte diagrams:
//! `docs/cluster-fabric.md`.
//!
//! ```text
//! option header: class 0xFFF1 (experimental), type 0xC5 (critical), Length = 2 + entries
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Ver  | Kind  |     Count     |          Egress node          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Source node          |     Flags     |   Reserved    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! data (Kind 0), Count entries, the frames back to back in the payload:
//! |  Egress port  |  Queue tag    |         Frame length          |
//! BECN (Kind 1), Count = 1, no payload, O bit set:
//! |  Egress port  |  Queue tag    |           Reserved            |
//! |                         Value (u32)                           |
//! ```
//!
//! Intermediates read only this option (never the inner frames): the
//! egress node says where the packet goes next.

use std::ops::Range;

use crate::geneve::{self, Geneve, BASE_LEN, MAX_OPTION_DATA, PROTO_TEB, TYPE_CRITICAL};
use crate::FabricError;

/// Our Option Class, from the experimental range (RFC 8926 §7.2:
/// 0xFF00-0xFFFF are for Experimental Use).
pub const OPTION_CLASS: u16 = 0xFFF1;
/// Our option Type: critical (a GENEVE endpoint that does not know it
/// must drop the packet rather than deliver a packed payload as one
/// frame), type number 0x45.
pub const OPTION_TYPE: u8 = TYPE_CRITICAL | 0x45;
/// Format version in the option.
pub const VERSION: u8 = 0;
/// Bytes of the option's fixed part (two words).
pub const FIXED_LEN: usize = 8;
/// Most frames one data packet carries: the option data is at most 124
/// bytes, 8 of them fixed, 4 per frame.
pub const MAX_FRAMES: usize = (MAX_OPTION_DATA - FIXED_LEN) / 4;
/// Fabric header bytes (GENEVE base + option header + fixed part) before
/// the per-frame entries.
pub const HDR_FIXED: usize = BASE_LEN + 4 + FIXED_LEN;
/// The largest fabric header: [`HDR_FIXED`] + 4 × [`MAX_FRAMES`].
pub const HDR_MAX: usize = HDR_FIXED + 4 * MAX_FRAMES;
/// Flag: sent to an intermediate (VLB phase 1). An intermediate forwards
/// only packets with this flag, and clears it, so no packet crosses the
/// fabric more than twice.
pub const FLAG_TRANSIT: u8 = 0x01;
/// Flag: every inner frame ends with its neighbour at the egress, the
/// address the egress resolves (ARP/ND) on the frame's egress port: 4
/// bytes after an IPv4 frame, 16 after an IPv6 one (by the inner
/// EtherType); all zero for "the frame's destination" (a destination on
/// the egress port's subnet). Set by an ingress that did the whole lookup
/// (tesserad), so the egress forwards by the tag and never looks up.
pub const FLAG_NEIGHBOUR: u8 = 0x02;

/// Length of the neighbour trailer ([`FLAG_NEIGHBOUR`]) after an inner
/// frame, by its EtherType: 4 (IPv4), 16 (IPv6), else none.
pub fn neighbour_len(frame: &[u8]) -> usize {
    match frame.get(12..14) {
        Some([0x08, 0x00]) => 4,
        Some([0x86, 0xdd]) => 16,
        _ => 0,
    }
}

/// Splits an inner frame of a [`FLAG_NEIGHBOUR`] datagram into the frame
/// proper and its neighbour trailer ([`neighbour_len`] bytes, empty for a
/// frame that is not IP). `None` when the trailer would leave less than
/// an Ethernet header.
pub fn split_neighbour(frame: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = neighbour_len(frame);
    let len = frame.len().checked_sub(n).filter(|&l| l >= 14)?;
    Some(frame.split_at(len))
}

const KIND_DATA: u8 = 0;
const KIND_BECN: u8 = 1;

/// The fixed part of the option.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The node that transmits the frames on its external port (data), or
    /// the node the notification is for (BECN).
    pub egress: u16,
    /// The node that built the packet (the ingress, or the congested node
    /// for a BECN).
    pub source: u16,
    /// [`FLAG_TRANSIT`] and future flags.
    pub flags: u8,
}

/// A backward explicit congestion notification: queue `(port, queue)` of
/// node `meta.source` is congested; `value` is the controller's signal (a
/// price in fixed point, or 0 for "halve" under AIMD).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Becn {
    /// Addressing.
    pub meta: Meta,
    /// The congested egress port at the source.
    pub port: u8,
    /// The congested queue on that port.
    pub queue: u8,
    /// The controller's value.
    pub value: u32,
}

/// One decoded fabric message.
#[derive(Clone, Debug)]
pub enum Message<'a> {
    /// Inner frames for `meta.egress`.
    Data(Data<'a>),
    /// A congestion notification.
    Becn(Becn),
}

/// A data packet: metadata, per-frame entries and payload, borrowed.
#[derive(Clone, Debug)]
pub struct Data<'a> {
    /// The fixed part.
    pub meta: Meta,
    /// The GENEVE VNI (the cluster id).
    pub vni: u32,
    entries: &'a [u8],
    payload: &'a [u8],
    flags_at: usize,
}

/// One inner frame of a data packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The egress node's external port.
    pub port: u8,
    /// The queue tag on that port (seed 004's index tag).
    pub queue: u8,
    /// The Ethernet frame.
    pub bytes: &'a [u8],
}

impl<'a> Data<'a> {
    /// How many frames the packet carries (1..=[`MAX_FRAMES`]).
    pub fn len(&self) -> usize {
        self.entries.len() / 4
    }
    /// Never true: a data packet has at least one frame.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// The frames, in packing order. [`decode`] checked that their
    /// lengths add up to the payload, so this yields exactly
    /// [`Data::len`] frames.
    pub fn frames(&self) -> Frames<'a> {
        Frames {
            entries: self.entries,
            payload: self.payload,
        }
    }
    /// Offset of the flags byte in the datagram ([`clear_transit`]).
    pub fn flags_offset(&self) -> usize {
        self.flags_at
    }
}

/// Iterator over the frames of a [`Data`].
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    entries: &'a [u8],
    payload: &'a [u8],
}

impl<'a> Iterator for Frames<'a> {
    type Item = Frame<'a>;
    fn next(&mut self) -> Option<Frame<'a>> {
        let (e, rest) = self.entries.split_first_chunk::<4>()?;
        self.entries = rest;
        let n = usize::from(u16::from_be_bytes([e[2], e[3]]));
        let n = n.min(self.payload.len());
        let (bytes, tail) = self.payload.split_at(n);
        self.payload = tail;
        Some(Frame {
            port: e[0],
            queue: e[1],
            bytes,
        })
    }
}

/// Decodes a fabric datagram (the UDP payload). Checks, in order: the
/// GENEVE header; that our option is present, well-formed and alone of
/// the critical options (an unknown critical option is dropped, RFC 8926
/// §3.5); for data, protocol TEB, 1..=[`MAX_FRAMES`] entries filling the
/// option exactly, and frame lengths that add up to the payload.
pub fn decode(b: &[u8]) -> Result<Message<'_>, FabricError> {
    let g = Geneve::parse(b)?;
    let mut ours = None;
    let mut at = BASE_LEN;
    for o in g.options() {
        let o = o?;
        if o.class == OPTION_CLASS && o.kind == OPTION_TYPE {
            if ours.is_some() {
                return Err(FabricError::DuplicateOption);
            }
            ours = Some((o.data, at + 4));
        } else if o.is_critical() {
            return Err(FabricError::UnknownCritical);
        }
        at += 4 + o.data.len();
    }
    let (data, data_at) = ours.ok_or(FabricError::NoClusterOption)?;
    let (fixed, entries) = data
        .split_first_chunk::<FIXED_LEN>()
        .ok_or(FabricError::BadOption)?;
    if fixed[0] >> 4 != VERSION {
        return Err(FabricError::BadOptionVersion);
    }
    let count = usize::from(fixed[1]);
    let meta = Meta {
        egress: u16::from_be_bytes([fixed[2], fixed[3]]),
        source: u16::from_be_bytes([fixed[4], fixed[5]]),
        flags: fixed[6],
    };
    match fixed[0] & 0x0f {
        KIND_DATA => {
            if g.protocol() != PROTO_TEB {
                return Err(FabricError::BadProtocol);
            }
            if count == 0 || count > MAX_FRAMES || entries.len() != 4 * count {
                return Err(FabricError::BadCount);
            }
            let total: usize = entries
                .chunks_exact(4)
                .map(|e| match e {
                    [_, _, a, b] => usize::from(u16::from_be_bytes([*a, *b])),
                    _ => 0,
                })
                .sum();
            if total != g.payload().len() {
                return Err(FabricError::LengthMismatch);
            }
            Ok(Message::Data(Data {
                meta,
                vni: g.vni(),
                entries,
                payload: g.payload(),
                flags_at: data_at + 6,
            }))
        }
        KIND_BECN => match entries {
            [port, queue, _, _, v0, v1, v2, v3] if count == 1 => Ok(Message::Becn(Becn {
                meta,
                port: *port,
                queue: *queue,
                value: u32::from_be_bytes([*v0, *v1, *v2, *v3]),
            })),
            _ => Err(FabricError::BadCount),
        },
        _ => Err(FabricError::BadKind),
    }
}

/// Clears [`FLAG_TRANSIT`] in a data datagram, in place: what an
/// intermediate does before forwarding it to the egress. Re-decodes, so
/// any bytes are safe.
pub fn clear_transit(b: &mut [u8]) -> Result<(), FabricError> {
    let at = match decode(b)? {
        Message::Data(d) => d.flags_offset(),
        Message::Becn(_) => return Err(FabricError::BadKind),
    };
    let f = b.get_mut(at).ok_or(FabricError::Short)?;
    *f &= !FLAG_TRANSIT;
    Ok(())
}

fn write_fixed(out: &mut [u8], kind: u8, count: usize, m: Meta) -> Option<()> {
    let f = out.first_chunk_mut::<FIXED_LEN>()?;
    let e = m.egress.to_be_bytes();
    let s = m.source.to_be_bytes();
    *f = [
        (VERSION << 4) | kind,
        u8::try_from(count).ok()?,
        e[0],
        e[1],
        s[0],
        s[1],
        m.flags,
        0,
    ];
    Some(())
}

/// Encodes a BECN into `out`; returns its length (24 bytes), or `None`
/// when `out` is shorter.
pub fn encode_becn(out: &mut [u8], vni: u32, b: &Becn) -> Option<usize> {
    const LEN: usize = HDR_FIXED + 8;
    let o = out.get_mut(..LEN)?;
    // RFC 8926 §3.4: O marks a control message, C a critical option.
    geneve::write_base(o, (4 + FIXED_LEN + 8) / 4, true, true, PROTO_TEB, vni)?;
    let o = o.get_mut(BASE_LEN..)?;
    geneve::write_option_header(o, OPTION_CLASS, OPTION_TYPE, (FIXED_LEN + 8) / 4)?;
    let o = o.get_mut(4..)?;
    write_fixed(o, KIND_BECN, 1, b.meta)?;
    let body = o.get_mut(FIXED_LEN..FIXED_LEN + 8)?;
    let v = b.value.to_be_bytes();
    body.copy_from_slice(&[b.port, b.queue, 0, 0, v[0], v[1], v[2], v[3]]);
    Some(LEN)
}

/// Builds one data packet in place: frames are copied to their final
/// place at once, the header is written in front of them by
/// [`PacketWriter::finish`], so nothing moves twice.
///
/// `buf` must hold [`HDR_MAX`] bytes of headroom plus the payload; `cap`
/// is the largest datagram the fabric carries (fabric MTU less the IP and
/// UDP headers).
#[derive(Debug)]
pub struct PacketWriter<'b> {
    buf: &'b mut [u8],
    entries: [[u8; 4]; MAX_FRAMES],
    n: usize,
    payload: usize,
    limit: usize,
    cap: usize,
}

impl<'b> PacketWriter<'b> {
    /// A writer of at most `degree` frames (clamped to 1..=[`MAX_FRAMES`])
    /// and `cap` datagram bytes.
    pub fn new(buf: &'b mut [u8], degree: usize, cap: usize) -> Self {
        PacketWriter {
            buf,
            entries: [[0; 4]; MAX_FRAMES],
            n: 0,
            payload: 0,
            limit: degree.clamp(1, MAX_FRAMES),
            cap,
        }
    }

    /// Whether a frame of `len` bytes would fit now.
    pub fn fits(&self, len: usize) -> bool {
        self.n < self.limit
            && len <= usize::from(u16::MAX)
            && HDR_FIXED + 4 * (self.n + 1) + self.payload + len <= self.cap
            && HDR_MAX + self.payload + len <= self.buf.len()
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.n
    }

    /// Appends a frame; `false` (and nothing written) when it does not fit.
    pub fn push(&mut self, port: u8, queue: u8, frame: &[u8]) -> bool {
        if !self.fits(frame.len()) {
            return false;
        }
        let at = HDR_MAX + self.payload;
        let Some(dst) = self.buf.get_mut(at..at + frame.len()) else {
            return false;
        };
        dst.copy_from_slice(frame);
        let l = (frame.len() as u16).to_be_bytes();
        if let Some(e) = self.entries.get_mut(self.n) {
            *e = [port, queue, l[0], l[1]];
        }
        self.n += 1;
        self.payload += frame.len();
        true
    }

    /// Writes the header in front of the frames; returns the datagram's
    /// range in `buf`, or `None` when no frame was pushed.
    pub fn finish(self, vni: u32, meta: Meta) -> Option<Range<usize>> {
        if self.n == 0 {
            return None;
        }
        let hlen = HDR_FIXED + 4 * self.n;
        let start = HDR_MAX - hlen;
        let h = self.buf.get_mut(start..HDR_MAX)?;
        let words = (4 + FIXED_LEN + 4 * self.n) / 4;
        geneve::write_base(h, words, false, true, PROTO_TEB, vni)?;
        let o = h.get_mut(BASE_LEN..)?;
        geneve::write_option_header(o, OPTION_CLASS, OPTION_TYPE, words - 1)?;
        let o = o.get_mut(4..)?;
        write_fixed(o, KIND_DATA, self.n, meta)?;
        let mut rest = o.get_mut(FIXED_LEN..)?;
        for e in self.entries.iter().take(self.n) {
            let (d, r) = rest.split_first_chunk_mut::<4>()?;
            *d = *e;
            rest = r;
        }
        Some(start..HDR_MAX + self.payload)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        Meta {
            egress: 2,
            source: 1,
            flags: FLAG_TRANSIT,
        }
    }

    #[test]
    fn the_neighbour_trailer_splits_by_ethertype() {
        let mut v4 = vec![0u8; 14 + 20];
        v4[12..14].copy_from_slice(&[0x08, 0x00]);
        v4.extend_from_slice(&[198, 18, 2, 2]);
        let (f, n) = split_neighbour(&v4).expect("fits");
        assert_eq!((f.len(), n), (34, &[198u8, 18, 2, 2][..]));
        let mut v6 = vec![0u8; 14 + 40 + 16];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(
            split_neighbour(&v6).map(|(f, n)| (f.len(), n.len())),
            Some((54, 16))
        );
        let arp = [0u8; 42];
        assert_eq!(
            split_neighbour(&arp).map(|(f, n)| (f.len(), n.len())),
            Some((42, 0))
        );
        // A trailer that would eat into the Ethernet header.
        let mut short = vec![0u8; 16];
        short[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(split_neighbour(&short), None);
        assert_eq!(split_neighbour(&[0u8; 5]), None);
    }

    #[test]
    fn one_frame_golden_bytes() {
        let mut buf = [0u8; HDR_MAX + 64];
        let mut w = PacketWriter::new(&mut buf, 1, 1472);
        assert!(w.push(3, 7, &[0xab; 4]));
        assert!(!w.push(3, 7, &[0xcd; 4]), "degree 1 is one frame");
        let r = w.finish(0x000abc, meta()).expect("one frame");
        let pkt = &buf[r];
        assert_eq!(
            pkt,
            &[
                0x04, 0x40, 0x65, 0x58, 0x00, 0x0a, 0xbc, 0x00, // GENEVE, 4 option words, C
                0xff, 0xf1, 0xc5, 0x03, // our option, 3 data words
                0x00, 0x01, 0x00, 0x02, // ver 0 kind data, 1 frame, egress 2
                0x00, 0x01, 0x01, 0x00, // source 1, TRANSIT
                0x03, 0x07, 0x00, 0x04, // port 3, queue 7, 4 bytes
                0xab, 0xab, 0xab, 0xab,
            ][..]
        );
        let Ok(Message::Data(d)) = decode(pkt) else {
            panic!("data expected")
        };
        assert_eq!((d.meta, d.vni, d.len()), (meta(), 0xabc, 1));
    }

    #[test]
    fn packs_up_to_degree_and_cap() {
        let mut buf = [0u8; 2048];
        let mut w = PacketWriter::new(&mut buf, 3, 1472);
        for i in 0..3u8 {
            assert!(w.push(i, i + 10, &[i; 60]));
        }
        assert!(!w.fits(60));
        let r = w.finish(0, meta()).expect("frames");
        let Ok(Message::Data(d)) = decode(&buf[r]) else {
            panic!("data")
        };
        let f: Vec<_> = d.frames().collect();
        assert_eq!(f.len(), 3);
        assert_eq!((f[2].port, f[2].queue, f[2].bytes), (2, 12, &[2u8; 60][..]));
        // The cap counts the header: 20 + 4 + 60 = 84 fits in 84, not 83.
        let mut w = PacketWriter::new(&mut buf, 29, 84);
        assert!(w.push(0, 0, &[0; 60]));
        let mut w = PacketWriter::new(&mut buf, 29, 83);
        assert!(!w.push(0, 0, &[0; 60]));
    }

    #[test]
    fn becn_round_trip_and_clear_transit() {
        let b = Becn {
            meta: meta(),
            port: 1,
            queue: 2,
            value: 0xdead_beef,
        };
        let mut out = [0u8; 64];
        let n = encode_becn(&mut out, 5, &b).expect("fits");
        let Ok(Message::Becn(d)) = decode(&out[..n]) else {
            panic!("becn")
        };
        assert_eq!(d, b);
        assert!(Geneve::parse(&out[..n]).expect("geneve").oam());
        assert_eq!(clear_transit(&mut out[..n]), Err(FabricError::BadKind));

        let mut buf = [0u8; 512];
        let mut w = PacketWriter::new(&mut buf, 4, 1472);
        assert!(w.push(0, 0, &[1, 2, 3]));
        let r = w.finish(0, meta()).expect("frame");
        clear_transit(&mut buf[r.clone()]).expect("data");
        let Ok(Message::Data(d)) = decode(&buf[r]) else {
            panic!("data")
        };
        assert_eq!(d.meta.flags, 0);
    }

    #[test]
    fn refuses_what_it_must() {
        let mut buf = [0u8; 512];
        let mut w = PacketWriter::new(&mut buf, 4, 1472);
        assert!(w.push(0, 0, &[1, 2, 3]));
        let r = w.finish(0, meta()).expect("frame");
        let good = buf[r].to_vec();
        // Payload one byte short / long.
        assert_eq!(
            decode(&good[..good.len() - 1]).unwrap_err(),
            FabricError::LengthMismatch
        );
        let mut long = good.clone();
        long.push(0);
        assert_eq!(decode(&long).unwrap_err(), FabricError::LengthMismatch);
        // Another critical option, unknown to us.
        let mut c = good.clone();
        c[8..10].copy_from_slice(&[0x01, 0x02]);
        assert_eq!(decode(&c).unwrap_err(), FabricError::UnknownCritical);
        // Same option, non-critical, unknown class: no cluster option.
        c[10] = 0x45;
        assert_eq!(decode(&c).unwrap_err(), FabricError::NoClusterOption);
        // Wrong protocol, version, kind, count.
        let mut p = good.clone();
        p[2] = 0x08;
        p[3] = 0x00;
        assert_eq!(decode(&p).unwrap_err(), FabricError::BadProtocol);
        let mut v = good.clone();
        v[12] = 0x10;
        assert_eq!(decode(&v).unwrap_err(), FabricError::BadOptionVersion);
        v[12] = 0x02;
        assert_eq!(decode(&v).unwrap_err(), FabricError::BadKind);
        let mut k = good.clone();
        k[13] = 2;
        assert_eq!(decode(&k).unwrap_err(), FabricError::BadCount);
    }
}
