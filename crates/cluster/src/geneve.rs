//! The GENEVE base header and its option TLVs (RFC 8926 §3.4, §3.5).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Virtual Network Identifier (VNI)       |    Reserved   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Variable-Length Options                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! option (RFC 8926 §3.5):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Option Class         |      Type     |R|R|R| Length  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Variable-Length Option Data                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Opt Len and the option Length count 4-byte words, excluding the
//! 8-byte base header and the 4-byte option header respectively.

use crate::FabricError;

/// IANA UDP port of GENEVE (RFC 8926 §7.1).
pub const GENEVE_PORT: u16 = 6081;
/// Protocol Type of an Ethernet payload: Transparent Ethernet Bridging.
pub const PROTO_TEB: u16 = 0x6558;
/// The fixed base header.
pub const BASE_LEN: usize = 8;
/// Most option bytes a header can announce (6-bit Opt Len, in words).
pub const MAX_OPTIONS_LEN: usize = 63 * 4;
/// Most data bytes one option can hold (5-bit Length, in words).
pub const MAX_OPTION_DATA: usize = 31 * 4;
/// The critical bit of an option's Type (RFC 8926 §3.5).
pub const TYPE_CRITICAL: u8 = 0x80;

/// A parsed GENEVE header: fields, options and payload, borrowed.
#[derive(Copy, Clone, Debug)]
pub struct Geneve<'a> {
    h: &'a [u8; BASE_LEN],
    options: &'a [u8],
    payload: &'a [u8],
}

impl<'a> Geneve<'a> {
    /// Parses the header at the start of a UDP payload. RFC 8926 §3.4:
    /// version 0 only ("packets containing unknown versions MUST be
    /// dropped"); the options must lie inside the packet.
    pub fn parse(b: &'a [u8]) -> Result<Geneve<'a>, FabricError> {
        let h = b.first_chunk::<BASE_LEN>().ok_or(FabricError::Short)?;
        if h[0] >> 6 != 0 {
            return Err(FabricError::BadVersion);
        }
        let opt_len = usize::from(h[0] & 0x3f) * 4;
        let rest = b.get(BASE_LEN..).ok_or(FabricError::Short)?;
        let (options, payload) = if opt_len <= rest.len() {
            rest.split_at(opt_len)
        } else {
            return Err(FabricError::OptionsOverrun);
        };
        Ok(Geneve {
            h,
            options,
            payload,
        })
    }
    /// The O bit: a control (OAM) packet.
    pub fn oam(&self) -> bool {
        self.h[1] & 0x80 != 0
    }
    /// The C bit: critical options are present.
    pub fn critical(&self) -> bool {
        self.h[1] & 0x40 != 0
    }
    /// Protocol Type (an EtherType).
    pub fn protocol(&self) -> u16 {
        u16::from_be_bytes([self.h[2], self.h[3]])
    }
    /// The 24-bit Virtual Network Identifier.
    pub fn vni(&self) -> u32 {
        u32::from_be_bytes([0, self.h[4], self.h[5], self.h[6]])
    }
    /// Header length: base plus options.
    pub fn header_len(&self) -> usize {
        BASE_LEN + self.options.len()
    }
    /// The option bytes.
    pub fn options(&self) -> Options<'a> {
        Options { rest: self.options }
    }
    /// What follows the options.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }
}

/// One option TLV.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GeneveOption<'a> {
    /// Option Class.
    pub class: u16,
    /// Type, critical bit included.
    pub kind: u8,
    /// The option data (Length × 4 bytes).
    pub data: &'a [u8],
}

impl GeneveOption<'_> {
    /// RFC 8926 §3.5: the receiver must drop a packet with a critical
    /// option it does not understand.
    pub fn is_critical(&self) -> bool {
        self.kind & TYPE_CRITICAL != 0
    }
}

/// The options of a header, in order; an option whose Length runs past
/// the options area ends the walk with [`FabricError::OptionOverrun`].
#[derive(Clone, Debug)]
pub struct Options<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Options<'a> {
    type Item = Result<GeneveOption<'a>, FabricError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let Some((h, tail)) = self.rest.split_first_chunk::<4>() else {
            self.rest = &[];
            return Some(Err(FabricError::OptionOverrun));
        };
        let len = usize::from(h[3] & 0x1f) * 4;
        if len > tail.len() {
            self.rest = &[];
            return Some(Err(FabricError::OptionOverrun));
        }
        let (data, rest) = tail.split_at(len);
        self.rest = rest;
        Some(Ok(GeneveOption {
            class: u16::from_be_bytes([h[0], h[1]]),
            kind: h[2],
            data,
        }))
    }
}

/// Writes a base header into `out[..8]`: `opt_words` option words,
/// the O and C bits, protocol and VNI. `None` when `out` is short or a
/// field is out of range.
pub fn write_base(
    out: &mut [u8],
    opt_words: usize,
    oam: bool,
    critical: bool,
    protocol: u16,
    vni: u32,
) -> Option<()> {
    if opt_words > 63 || vni > 0x00ff_ffff {
        return None;
    }
    let h = out.first_chunk_mut::<BASE_LEN>()?;
    let v = vni.to_be_bytes();
    let p = protocol.to_be_bytes();
    *h = [
        opt_words as u8,
        (u8::from(oam) << 7) | (u8::from(critical) << 6),
        p[0],
        p[1],
        v[1],
        v[2],
        v[3],
        0,
    ];
    Some(())
}

/// Writes an option header into `out[..4]`; `data_words` is 0..=31.
pub fn write_option_header(out: &mut [u8], class: u16, kind: u8, data_words: usize) -> Option<()> {
    if data_words > 31 {
        return None;
    }
    let h = out.first_chunk_mut::<4>()?;
    let c = class.to_be_bytes();
    *h = [c[0], c[1], kind, data_words as u8];
    Some(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn base_header_fields_and_options_walk() {
        // RFC 8926 header: 2 option words, O=0 C=1, TEB, VNI 0x123456,
        // then one option of class 0x0102, type 0x83, 1 data word.
        let b = [
            0x02, 0x40, 0x65, 0x58, 0x12, 0x34, 0x56, 0x00, 0x01, 0x02, 0x83, 0x01, 0xaa, 0xbb,
            0xcc, 0xdd, 0xee,
        ];
        let g = Geneve::parse(&b).expect("parses");
        assert!(!g.oam() && g.critical());
        assert_eq!(
            (g.protocol(), g.vni(), g.header_len()),
            (PROTO_TEB, 0x123456, 16)
        );
        assert_eq!(g.payload(), &[0xee]);
        let o: Vec<_> = g.options().collect();
        assert_eq!(
            o,
            vec![Ok(GeneveOption {
                class: 0x0102,
                kind: 0x83,
                data: &[0xaa, 0xbb, 0xcc, 0xdd]
            })]
        );
        assert!(o[0].as_ref().is_ok_and(|o| o.is_critical()));
        let mut w = [0u8; 8];
        write_base(&mut w, 2, false, true, PROTO_TEB, 0x123456).expect("fits");
        assert_eq!(&w, &b[..8]);
    }

    #[test]
    fn refuses_version_overrun_and_bad_tlv() {
        assert_eq!(Geneve::parse(&[0u8; 7]).unwrap_err(), FabricError::Short);
        let mut b = [0u8; 8];
        b[0] = 0x40;
        assert_eq!(Geneve::parse(&b).unwrap_err(), FabricError::BadVersion);
        b[0] = 0x01;
        assert_eq!(Geneve::parse(&b).unwrap_err(), FabricError::OptionsOverrun);
        // One option word whose TLV claims 2 data words.
        let b = [0x01, 0, 0x65, 0x58, 0, 0, 0, 0, 0xff, 0xf1, 0x80, 0x02];
        let g = Geneve::parse(&b).expect("base parses");
        assert_eq!(
            g.options().collect::<Vec<_>>(),
            vec![Err(FabricError::OptionOverrun)]
        );
    }
}
