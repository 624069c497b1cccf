//! The emit half of the codec, for every encoder of BGP messages in the
//! workspace (the RIB's UPDATE packer, the replay client's workloads):
//! message framing ([`begin_message`], [`finish_message`],
//! [`set_message_len`]), one NLRI entry ([`put_prefix`]) and
//! [`UpdateWriter`], which lays out an UPDATE section by section.

use base::Prefix;

use crate::consts::msg_type;
use crate::ctx::ParseCtx;
use crate::error::EncodeError;
pub use crate::header::{begin_message, finish_message, set_message_len};
pub use crate::nlri::put_prefix;
use crate::nlri::Nlri;
use crate::util::patch_u16;

/// Octets one NLRI entry takes.
#[inline]
pub fn prefix_len_on_wire(p: &Prefix, add_path: bool) -> usize {
    1 + p.nlri_octets() + if add_path { 4 } else { 0 }
}

/// Where an [`UpdateWriter`] is in the message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Section {
    Withdrawn,
    Attributes,
    Nlri,
}

/// Builds one UPDATE in place at the end of a buffer: withdrawn routes,
/// then path attributes (as encoded bytes), then NLRI, in that order; the
/// two length fields and the message length are patched as sections
/// close. A section may be left empty.
///
/// ```
/// use bgp_wire::emit::UpdateWriter;
/// use bgp_wire::{Message, Nlri, ParseCtx};
///
/// let ctx = ParseCtx::modern();
/// let mut buf = Vec::new();
/// let mut w = UpdateWriter::new(&mut buf);
/// w.withdraw(&Nlri::new("198.18.0.0/24".parse().unwrap()));
/// w.attributes().extend_from_slice(&[0x40, 1, 1, 0]); // ORIGIN IGP
/// w.announce(&Nlri::new("198.18.1.0/24".parse().unwrap()));
/// w.finish(ctx).unwrap();
/// let (m, len) = Message::parse(&buf, ctx).unwrap();
/// assert_eq!(len, buf.len());
/// let Message::Update(u) = m else { panic!() };
/// assert_eq!(u.withdrawn().count(), 1);
/// assert_eq!(u.nlri().count(), 1);
/// ```
#[derive(Debug)]
pub struct UpdateWriter<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    /// Offset of the Withdrawn Routes Length field.
    withdrawn_len_at: usize,
    /// Offset of the Total Path Attribute Length field, once opened.
    attrs_len_at: usize,
    section: Section,
}

impl<'a> UpdateWriter<'a> {
    /// Starts an UPDATE at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> UpdateWriter<'a> {
        let start = begin_message(out, msg_type::UPDATE);
        let withdrawn_len_at = out.len();
        out.extend_from_slice(&[0, 0]);
        UpdateWriter {
            out,
            start,
            withdrawn_len_at,
            attrs_len_at: withdrawn_len_at,
            section: Section::Withdrawn,
        }
    }

    fn close_withdrawn(&mut self) {
        if self.section == Section::Withdrawn {
            let n = self.out.len() - self.withdrawn_len_at - 2;
            patch_u16(
                self.out,
                self.withdrawn_len_at,
                n.min(usize::from(u16::MAX)) as u16,
            );
            self.attrs_len_at = self.out.len();
            self.out.extend_from_slice(&[0, 0]);
            self.section = Section::Attributes;
        }
    }

    fn close_attributes(&mut self) {
        self.close_withdrawn();
        if self.section == Section::Attributes {
            let n = self.out.len() - self.attrs_len_at - 2;
            patch_u16(
                self.out,
                self.attrs_len_at,
                n.min(usize::from(u16::MAX)) as u16,
            );
            self.section = Section::Nlri;
        }
    }

    /// Adds a withdrawn route (IPv4 unicast field). Ignored once the
    /// attributes are open (the sections are in wire order).
    pub fn withdraw(&mut self, n: &Nlri) {
        if self.section == Section::Withdrawn {
            n.encode(self.out);
        }
    }

    /// The buffer to append encoded path attributes to; closes the
    /// withdrawn section. Nothing may be appended once NLRI were added.
    pub fn attributes(&mut self) -> &mut Vec<u8> {
        self.close_withdrawn();
        self.out
    }

    /// Adds an announced route (IPv4 unicast NLRI field); closes the
    /// attributes.
    pub fn announce(&mut self, n: &Nlri) {
        self.close_attributes();
        n.encode(self.out);
    }

    /// Appends NLRI entries already encoded (the IPv4 unicast NLRI field);
    /// closes the attributes.
    pub fn announce_encoded(&mut self, nlri: &[u8]) {
        self.close_attributes();
        self.out.extend_from_slice(nlri);
    }

    /// Octets the message has so far (to stay under the size limit).
    pub fn len(&self) -> usize {
        self.out.len() - self.start
    }

    /// Whether nothing but the header is written yet (never: the header
    /// and the withdrawn length are written at once).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes every section and patches the message length. On a
    /// message longer than `ctx` allows the partial message is removed
    /// and an error returned.
    pub fn finish(mut self, ctx: ParseCtx) -> Result<(), EncodeError> {
        self.close_attributes();
        finish_message(self.out, self.start, ctx)
    }
}
