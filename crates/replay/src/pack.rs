//! Packing routes into UPDATEs by attribute set (RFC 4271 §4.3: one UPDATE
//! carries one set of path attributes and any number of NLRI), as a real
//! speaker dumping its Adj-RIB-Out would. IPv4 unicast prefixes go in the
//! NLRI field with a NEXT_HOP attribute; IPv6 unicast prefixes go in an
//! MP_REACH_NLRI built per message (RFC 4760 §3).

use crate::error::ReplayError;
use crate::feed::{Feed, FeedParams, MAX_MESSAGE};
use base::{Prefix, Prefix4};
use bgp_wire::consts::{attr_flags, attr_type};
use bgp_wire::emit::UpdateWriter;
use bgp_wire::{Nlri, ParseCtx, HEADER_LEN};
use std::collections::HashMap;

/// One attribute set and the prefixes that share it.
struct Group {
    attrs: Vec<u8>,
    v6: bool,
    prefixes: Vec<Prefix>,
}

/// Groups one peer's routes by encoded attribute bytes, then frames them.
pub(crate) struct Packer {
    pub(crate) params: FeedParams,
    /// Separate indexes per family: the same attribute bytes frame
    /// differently (NEXT_HOP vs MP_REACH_NLRI).
    index4: HashMap<Vec<u8>, usize>,
    index6: HashMap<Vec<u8>, usize>,
    groups: Vec<Group>,
    /// Attributes of the route being added; callers fill it through
    /// [`Packer::scratch`] and then call [`Packer::add`].
    scratch: Vec<u8>,
}

impl Packer {
    pub(crate) fn new(params: FeedParams) -> Packer {
        Packer {
            params,
            index4: HashMap::new(),
            index6: HashMap::new(),
            groups: Vec::new(),
            scratch: Vec::with_capacity(256),
        }
    }

    /// The cleared attribute buffer for the next route.
    pub(crate) fn scratch(&mut self) -> &mut Vec<u8> {
        self.scratch.clear();
        &mut self.scratch
    }

    /// Adds `prefix` with the attributes now in the scratch buffer (for
    /// IPv4 they include NEXT_HOP; for IPv6 they must not include any
    /// MP_REACH_NLRI, which is built per message).
    pub(crate) fn add(&mut self, prefix: Prefix) {
        let v6 = matches!(prefix, Prefix::V6(_));
        let index = if v6 {
            &mut self.index6
        } else {
            &mut self.index4
        };
        // Look up by slice so that only a new attribute set allocates.
        let gi = match index.get(self.scratch.as_slice()) {
            Some(&gi) => gi,
            None => {
                let gi = self.groups.len();
                self.groups.push(Group {
                    attrs: self.scratch.clone(),
                    v6,
                    prefixes: Vec::new(),
                });
                index.insert(self.scratch.clone(), gi);
                gi
            }
        };
        if let Some(g) = self.groups.get_mut(gi) {
            g.prefixes.push(prefix);
        }
    }

    /// Adds an IPv4 prefix (synthetic workloads).
    pub(crate) fn add4(&mut self, prefix: Prefix4) {
        self.add(Prefix::V4(prefix));
    }

    pub(crate) fn finish(self) -> Result<Feed, ReplayError> {
        let mut feed = Feed {
            attr_sets: self.groups.len(),
            ..Feed::default()
        };
        let nh6 = self.params.next_hop6();
        let mut nlri = Vec::with_capacity(MAX_MESSAGE);
        let mut msg = Vec::with_capacity(MAX_MESSAGE);
        for g in &self.groups {
            // Header, withdrawn length, attribute length, attributes, and
            // for IPv6 the MP_REACH_NLRI header (4 octets of TLV header,
            // AFI 2, SAFI 1, next-hop length 1, next hop 16, reserved 1).
            let mp = if g.v6 { 4 + 3 + 1 + 16 + 1 } else { 0 };
            let fixed = HEADER_LEN + 2 + 2 + g.attrs.len() + mp;
            let room = MAX_MESSAGE
                .checked_sub(fixed)
                .filter(|r| *r >= 17)
                .ok_or(ReplayError::Encode)?;
            let mut rest = g.prefixes.as_slice();
            while !rest.is_empty() {
                nlri.clear();
                let mut n = 0usize;
                for p in rest {
                    let e = Nlri::new(*p);
                    if nlri.len() + e.encoded_len() > room {
                        break;
                    }
                    e.encode(&mut nlri);
                    n += 1;
                }
                rest = rest.get(n..).unwrap_or(&[]);
                msg.clear();
                let mut w = UpdateWriter::new(&mut msg);
                let attrs = w.attributes();
                attrs.extend_from_slice(&g.attrs);
                if g.v6 {
                    let vlen = u16::try_from(3 + 1 + 16 + 1 + nlri.len())
                        .map_err(|_| ReplayError::Encode)?;
                    attrs.push(attr_flags::OPTIONAL | attr_flags::EXTENDED_LENGTH);
                    attrs.push(attr_type::MP_REACH_NLRI);
                    attrs.extend_from_slice(&vlen.to_be_bytes());
                    attrs.extend_from_slice(&[0, 2, 1, 16]);
                    attrs.extend_from_slice(&nh6.octets());
                    attrs.push(0);
                    attrs.extend_from_slice(&nlri);
                } else {
                    w.announce_encoded(&nlri);
                }
                // Sized above to fit MAX_MESSAGE; an extended-message
                // context only bounds the length field.
                w.finish(ParseCtx::legacy().with_extended_message(true))
                    .map_err(|_| ReplayError::Encode)?;
                feed.push_msg(&msg, n as u32, 0, None);
                feed.has_v6 |= g.v6;
            }
        }
        Ok(feed)
    }
}

/// Appends one attribute TLV, choosing the extended-length form when the
/// value needs it (RFC 4271 §4.3).
pub(crate) fn put_attr(out: &mut Vec<u8>, flags: u8, type_code: u8, value: &[u8]) {
    let flags = flags & !attr_flags::EXTENDED_LENGTH;
    match u8::try_from(value.len()) {
        Ok(l) => out.extend_from_slice(&[flags, type_code, l]),
        Err(_) => {
            let l = value.len().min(usize::from(u16::MAX)) as u16;
            out.extend_from_slice(&[flags | attr_flags::EXTENDED_LENGTH, type_code]);
            out.extend_from_slice(&l.to_be_bytes());
        }
    }
    out.extend_from_slice(value.get(..usize::from(u16::MAX)).unwrap_or(value));
}
