//! AS_PATH and AS4_PATH (RFC 4271 §4.3, RFC 5065 §3, RFC 6793 §3).
//!
//! ```text
//! +--------------+--------------+-------------------------------------+
//! | Seg. type (1)| Seg. len (1) | len AS numbers, 2 or 4 octets each  |  repeated
//! +--------------+--------------+-------------------------------------+
//! type: 1 AS_SET, 2 AS_SEQUENCE, 3 AS_CONFED_SEQUENCE, 4 AS_CONFED_SET
//! ```
//! AS_PATH carries 2-octet ASNs unless both speakers negotiated 4-octet
//! ASNs; AS4_PATH always carries 4-octet ASNs.

use base::Asn;

use crate::util::{u16_at, u32_at};

/// Path segment types.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SegmentType {
    /// AS_SET (1): unordered; counts as one AS in the path length.
    Set = 1,
    /// AS_SEQUENCE (2): ordered, most recent AS first.
    Sequence = 2,
    /// RFC 5065.
    ConfedSequence = 3,
    /// RFC 5065.
    ConfedSet = 4,
}

impl SegmentType {
    /// The segment type for a wire value, `None` if unknown.
    pub const fn from_u8(v: u8) -> Option<SegmentType> {
        match v {
            1 => Some(SegmentType::Set),
            2 => Some(SegmentType::Sequence),
            3 => Some(SegmentType::ConfedSequence),
            4 => Some(SegmentType::ConfedSet),
            _ => None,
        }
    }
    /// Whether this is a confederation segment (RFC 5065).
    pub const fn is_confed(self) -> bool {
        matches!(self, SegmentType::ConfedSequence | SegmentType::ConfedSet)
    }
}

/// A validated, borrowed AS path.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AsPathView<'a> {
    bytes: &'a [u8],
    as_len: u8,
}

/// One borrowed segment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AsSegmentView<'a> {
    /// The segment type.
    pub kind: SegmentType,
    asns: &'a [u8],
    as_len: u8,
}

impl<'a> AsSegmentView<'a> {
    /// Number of ASNs in the segment.
    pub fn len(&self) -> usize {
        self.asns.len() / self.as_len as usize
    }
    /// Whether the segment holds no ASN.
    pub fn is_empty(&self) -> bool {
        self.asns.is_empty()
    }
    /// The ASNs in wire order.
    pub fn asns(&self) -> impl Iterator<Item = Asn> + 'a {
        let four = self.as_len == 4;
        self.asns
            .chunks_exact(self.as_len as usize)
            .filter_map(move |c| {
                if four {
                    u32_at(c, 0).map(Asn)
                } else {
                    u16_at(c, 0).map(|a| Asn(u32::from(a)))
                }
            })
    }
}

/// Iterator over the segments of a validated path.
#[derive(Clone, Debug)]
pub struct AsSegmentIter<'a> {
    rest: &'a [u8],
    as_len: u8,
}

/// Splits one segment off `b`: (type, ASN octets, rest).
fn split_segment(b: &[u8], as_len: usize) -> Option<(SegmentType, &[u8], &[u8])> {
    let (&t, r) = b.split_first()?;
    let (&n, r) = r.split_first()?;
    let kind = SegmentType::from_u8(t)?;
    let l = n as usize * as_len;
    Some((kind, r.get(..l)?, r.get(l..)?))
}

impl<'a> Iterator for AsSegmentIter<'a> {
    type Item = AsSegmentView<'a>;
    fn next(&mut self) -> Option<Self::Item> {
        let (kind, asns, rest) = split_segment(self.rest, self.as_len as usize)?;
        self.rest = rest;
        Some(AsSegmentView {
            kind,
            asns,
            as_len: self.as_len,
        })
    }
}

impl<'a> AsPathView<'a> {
    /// Validates the segment structure (RFC 7606 §7.2: unknown segment
    /// type, overrun, or a lone trailing octet make the path malformed).
    /// Empty segments are accepted and kept.
    pub fn parse(bytes: &'a [u8], four_octet: bool) -> Option<AsPathView<'a>> {
        let as_len = if four_octet { 4 } else { 2 };
        let mut b = bytes;
        while !b.is_empty() {
            b = split_segment(b, as_len)?.2;
        }
        Some(AsPathView {
            bytes,
            as_len: as_len as u8,
        })
    }

    /// The attribute value octets as received.
    pub fn raw(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether ASNs are 4 octets wide.
    pub fn is_four_octet(&self) -> bool {
        self.as_len == 4
    }

    /// The segments in wire order.
    pub fn segments(&self) -> AsSegmentIter<'a> {
        AsSegmentIter {
            rest: self.bytes,
            as_len: self.as_len,
        }
    }

    /// Path length for route selection (RFC 4271 §9.1.2.2 a, RFC 5065 §5.3):
    /// a set counts one, confederation segments count nothing.
    pub fn path_len(&self) -> usize {
        self.segments().map(|s| seg_count(s.kind, s.len())).sum()
    }

    /// The last ASN of the last AS_SEQUENCE segment, if the path ends in one.
    pub fn origin_asn(&self) -> Option<Asn> {
        let last = self.segments().last()?;
        if last.kind != SegmentType::Sequence {
            return None;
        }
        last.asns().last()
    }

    /// An owned copy.
    pub fn to_owned(&self) -> AsPath {
        AsPath {
            segments: self
                .segments()
                .map(|s| AsSegment {
                    kind: s.kind,
                    asns: s.asns().collect(),
                })
                .collect(),
        }
    }
}

fn seg_count(kind: SegmentType, n: usize) -> usize {
    match kind {
        SegmentType::Sequence => n,
        SegmentType::Set => usize::from(n > 0),
        _ => 0,
    }
}

/// An owned segment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AsSegment {
    /// The segment type.
    pub kind: SegmentType,
    /// The ASNs in wire order.
    pub asns: Vec<Asn>,
}

/// An owned AS path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AsPath {
    /// The segments in wire order.
    pub segments: Vec<AsSegment>,
}

impl AsPath {
    /// A path of one AS_SEQUENCE.
    pub fn from_sequence(asns: Vec<Asn>) -> AsPath {
        AsPath {
            segments: vec![AsSegment {
                kind: SegmentType::Sequence,
                asns,
            }],
        }
    }

    /// See [`AsPathView::path_len`].
    pub fn path_len(&self) -> usize {
        self.segments
            .iter()
            .map(|s| seg_count(s.kind, s.asns.len()))
            .sum()
    }

    /// Appends the attribute value. Segments of more than 255 ASNs are split
    /// (RFC 4271 §9.2.2.1 leaves it to the sender); with 2-octet encoding,
    /// ASNs above 65535 become AS_TRANS (RFC 6793 §4.2.2).
    pub fn encode(&self, four_octet: bool, out: &mut Vec<u8>) {
        for s in &self.segments {
            if s.asns.is_empty() {
                out.extend_from_slice(&[s.kind as u8, 0]);
                continue;
            }
            for chunk in s.asns.chunks(255) {
                out.push(s.kind as u8);
                out.push(chunk.len() as u8);
                for a in chunk {
                    if four_octet {
                        out.extend_from_slice(&a.0.to_be_bytes());
                    } else {
                        out.extend_from_slice(&a.to_u16_or_trans().to_be_bytes());
                    }
                }
            }
        }
    }
}

/// Reconstructs the real path from a 2-octet AS_PATH and an AS4_PATH
/// (RFC 6793 §4.2.3): if AS_PATH is shorter than AS4_PATH, AS4_PATH is
/// ignored; otherwise the leading (len(AS_PATH) - len(AS4_PATH)) ASNs of
/// AS_PATH are prepended to AS4_PATH. Confederation segments in AS4_PATH are
/// dropped (RFC 6793 §6). Lengths count sets as one and confederation
/// segments as zero. The caller should only merge when AGGREGATOR, if
/// present, carries AS_TRANS (RFC 6793 §4.2.3).
pub fn merge_as4_path(as_path: &AsPath, as4_path: &AsPath) -> AsPath {
    let as4: Vec<&AsSegment> = as4_path
        .segments
        .iter()
        .filter(|s| !s.kind.is_confed())
        .collect();
    let n2 = as_path.path_len();
    let n4: usize = as4.iter().map(|s| seg_count(s.kind, s.asns.len())).sum();
    if n2 < n4 {
        return as_path.clone();
    }
    let mut keep = n2 - n4;
    let mut out: Vec<AsSegment> = Vec::new();
    for s in &as_path.segments {
        let leading_confed = out.iter().all(|o| o.kind.is_confed());
        match s.kind {
            SegmentType::ConfedSequence | SegmentType::ConfedSet => {
                if keep > 0 || leading_confed {
                    out.push(s.clone());
                }
            }
            SegmentType::Sequence => {
                if keep == 0 {
                    break;
                }
                let take = keep.min(s.asns.len());
                out.push(AsSegment {
                    kind: s.kind,
                    asns: s.asns.get(..take).unwrap_or(&[]).to_vec(),
                });
                keep -= take;
            }
            SegmentType::Set => {
                if keep == 0 {
                    break;
                }
                out.push(s.clone());
                keep = keep.saturating_sub(usize::from(!s.asns.is_empty()));
            }
        }
    }
    for s in as4 {
        match out.last_mut() {
            Some(last) if last.kind == SegmentType::Sequence && s.kind == SegmentType::Sequence => {
                last.asns.extend_from_slice(&s.asns)
            }
            _ => out.push(s.clone()),
        }
    }
    AsPath { segments: out }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(v: &[u32]) -> AsSegment {
        AsSegment {
            kind: SegmentType::Sequence,
            asns: v.iter().map(|&a| Asn(a)).collect(),
        }
    }

    #[test]
    fn parse_two_and_four_octet() {
        let b2 = [2, 3, 0, 1, 0, 2, 0x5b, 0xa0, 1, 2, 0, 9, 0, 10];
        let p = AsPathView::parse(&b2, false).unwrap();
        let segs: Vec<_> = p.segments().collect();
        assert_eq!(segs.len(), 2);
        assert_eq!(
            segs[0].asns().collect::<Vec<_>>(),
            vec![Asn(1), Asn(2), Asn::TRANS]
        );
        assert_eq!(segs[1].kind, SegmentType::Set);
        assert_eq!(p.path_len(), 4);
        assert_eq!(p.origin_asn(), None);
        let mut out = Vec::new();
        p.to_owned().encode(false, &mut out);
        assert_eq!(out, b2);
        // Read as 4-octet, the first segment overruns.
        assert!(AsPathView::parse(&b2[..8], true).is_none());
        let b4 = [2, 1, 0, 3, 0x0d, 0x40];
        let p = AsPathView::parse(&b4, true).unwrap();
        assert_eq!(p.origin_asn(), Some(Asn(200_000)));
    }

    #[test]
    fn malformed_paths() {
        assert!(
            AsPathView::parse(&[5, 1, 0, 1], false).is_none(),
            "bad type"
        );
        assert!(AsPathView::parse(&[2, 2, 0, 1], false).is_none(), "overrun");
        assert!(
            AsPathView::parse(&[2, 1, 0, 1, 2], false).is_none(),
            "lone octet"
        );
        assert!(AsPathView::parse(&[], false).is_some(), "empty path (iBGP)");
    }

    #[test]
    fn long_segments_are_split() {
        let p = AsPath::from_sequence((0..300).map(Asn).collect());
        let mut out = Vec::new();
        p.encode(true, &mut out);
        let v = AsPathView::parse(&out, true).unwrap();
        let lens: Vec<_> = v.segments().map(|s| s.len()).collect();
        assert_eq!(lens, vec![255, 45]);
        assert_eq!(v.path_len(), 300);
    }

    #[test]
    fn merge_rfc6793() {
        // AS_PATH: 100 23456 23456 300 ; AS4_PATH: 200000 200001 300
        let p2 = AsPath {
            segments: vec![seq(&[100, 23456, 23456, 300])],
        };
        let p4 = AsPath {
            segments: vec![seq(&[200_000, 200_001, 300])],
        };
        let m = merge_as4_path(&p2, &p4);
        assert_eq!(
            m,
            AsPath {
                segments: vec![seq(&[100, 200_000, 200_001, 300])]
            }
        );
        // AS4_PATH longer than AS_PATH: ignored.
        let p4 = AsPath {
            segments: vec![seq(&[1, 2, 3, 4, 5])],
        };
        assert_eq!(merge_as4_path(&p2, &p4), p2);
        // Confed segments in AS4_PATH are dropped; a set counts as one.
        let p2 = AsPath {
            segments: vec![
                seq(&[10, 23456]),
                AsSegment {
                    kind: SegmentType::Set,
                    asns: vec![Asn(7), Asn(8)],
                },
            ],
        };
        let p4 = AsPath {
            segments: vec![
                AsSegment {
                    kind: SegmentType::ConfedSequence,
                    asns: vec![Asn(65000)],
                },
                seq(&[70_000]),
                AsSegment {
                    kind: SegmentType::Set,
                    asns: vec![Asn(7), Asn(8)],
                },
            ],
        };
        let m = merge_as4_path(&p2, &p4);
        assert_eq!(m.segments[0], seq(&[10, 70_000]));
        assert_eq!(m.segments[1].kind, SegmentType::Set);
        assert_eq!(m.path_len(), 3);
    }
}
