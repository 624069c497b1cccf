//! The virtual routers' demultiplexer: which VR a received frame belongs
//! to, by 802.1Q VLAN id, ingress port, or destination prefix (the
//! `[[dataplane.vr]]` matches of crate `config`). It runs before the VRs'
//! graphs, on untrusted frames: a frame too short or malformed for its
//! rule kind belongs to no VR (`None`, which the caller counts as a drop
//! by reason), and nothing here panics (fuzz target `vr_classify`).
//!
//! Rules are disjoint by construction ([`VrClassifier::new`] refuses
//! overlapping ones), so the first match is the only match. The scan is
//! linear: at most a few dozen VRs, each with a few prefixes.
//!
//! ```
//! use graph::vr_class::{VrClassifier, VrRule};
//! let c = VrClassifier::new(vec![(VrRule::Ingress(0), 0), (VrRule::Ingress(1), 1)]).unwrap();
//! assert_eq!(c.classify(&[0u8; 60], 1), Some(1));
//! assert_eq!(c.classify(&[0u8; 60], 2), None);
//! ```

use pkt::hdr::ether::{parse_l2, ETH_IPV4, ETH_IPV6};
use pkt::hdr::ip4::Ipv4;
use pkt::hdr::ip6::Ipv6;

/// What one VR matches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum VrRule {
    /// Frames carrying this 802.1Q VLAN id.
    Vlan(u16),
    /// Frames received on this port (the runner's device index).
    Ingress(u16),
    /// IPv4 packets to this prefix (address bits, length).
    Prefix4(u32, u8),
    /// IPv6 packets to this prefix (address bits, length).
    Prefix6(u128, u8),
}

/// Why a rule set was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClassError {
    /// Rules `.0` and `.1` (indices into the list) match the same packets.
    Overlap(usize, usize),
    /// Rule `.0` has a prefix length above its family's.
    BadLength(usize),
    /// Rules of different kinds (VLAN, ingress, prefix): a packet could
    /// fit two VRs.
    MixedKinds(usize),
}

impl std::fmt::Display for ClassError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassError::Overlap(a, b) => write!(f, "VR rules {a} and {b} overlap"),
            ClassError::BadLength(a) => write!(f, "VR rule {a}: prefix length too long"),
            ClassError::MixedKinds(a) => {
                write!(f, "VR rule {a} is of another kind than rule 0")
            }
        }
    }
}

impl std::error::Error for ClassError {}

fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len))
    }
}

fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

fn kind(r: &VrRule) -> u8 {
    match r {
        VrRule::Vlan(_) => 0,
        VrRule::Ingress(_) => 1,
        VrRule::Prefix4(..) | VrRule::Prefix6(..) => 2,
    }
}

fn overlap(a: &VrRule, b: &VrRule) -> bool {
    match (*a, *b) {
        (VrRule::Vlan(x), VrRule::Vlan(y)) | (VrRule::Ingress(x), VrRule::Ingress(y)) => x == y,
        (VrRule::Prefix4(x, lx), VrRule::Prefix4(y, ly)) => {
            let m = mask4(lx.min(ly));
            x & m == y & m
        }
        (VrRule::Prefix6(x, lx), VrRule::Prefix6(y, ly)) => {
            let m = mask6(lx.min(ly));
            x & m == y & m
        }
        _ => false,
    }
}

/// Frames to VR indices.
#[derive(Clone, Debug, Default)]
pub struct VrClassifier {
    rules: Vec<(VrRule, usize)>,
    /// Whether any rule needs the layer-3 header (prefix rules).
    by_prefix: bool,
}

impl VrClassifier {
    /// A classifier over `(rule, VR index)` pairs; one VR may have several
    /// rules (several prefixes), rules of different VRs must be disjoint
    /// and of one kind.
    pub fn new(rules: Vec<(VrRule, usize)>) -> Result<VrClassifier, ClassError> {
        for (i, (r, vr)) in rules.iter().enumerate() {
            match *r {
                VrRule::Prefix4(_, l) if l > 32 => return Err(ClassError::BadLength(i)),
                VrRule::Prefix6(_, l) if l > 128 => return Err(ClassError::BadLength(i)),
                _ => {}
            }
            if rules.first().is_some_and(|(f, _)| kind(f) != kind(r)) {
                return Err(ClassError::MixedKinds(i));
            }
            if let Some(j) = rules[..i]
                .iter()
                .position(|(o, ovr)| overlap(o, r) && (ovr != vr || o == r))
            {
                return Err(ClassError::Overlap(j, i));
            }
        }
        let by_prefix = rules.iter().any(|(r, _)| kind(r) == 2);
        Ok(VrClassifier { rules, by_prefix })
    }

    /// The VR of a frame received on port `in_port`, or `None` (no rule
    /// matches, or the frame is too short or malformed for the rules).
    pub fn classify(&self, frame: &[u8], in_port: u16) -> Option<usize> {
        let first = self.rules.first()?;
        if let VrRule::Ingress(_) = first.0 {
            return self
                .rules
                .iter()
                .find(|(r, _)| *r == VrRule::Ingress(in_port))
                .map(|(_, v)| *v);
        }
        let l2 = parse_l2(frame).ok()?;
        if !self.by_prefix {
            let vlan = l2.vlan?;
            return self
                .rules
                .iter()
                .find(|(r, _)| *r == VrRule::Vlan(vlan))
                .map(|(_, v)| *v);
        }
        let l3 = frame.get(l2.l3..)?;
        match l2.ethertype {
            ETH_IPV4 => {
                let dst = u32::from_be_bytes(Ipv4::parse(l3).ok()?.dst());
                self.rules.iter().find_map(|(r, v)| match *r {
                    VrRule::Prefix4(p, l) if dst & mask4(l) == p & mask4(l) => Some(*v),
                    _ => None,
                })
            }
            ETH_IPV6 => {
                let dst = u128::from_be_bytes(Ipv6::parse(l3).ok()?.dst());
                self.rules.iter().find_map(|(r, v)| match *r {
                    VrRule::Prefix6(p, l) if dst & mask6(l) == p & mask6(l) => Some(*v),
                    _ => None,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pkt::build;
    use pkt::Mac;

    const M: Mac = Mac([2, 0, 0, 0, 0, 1]);

    #[test]
    fn vlan_ingress_and_prefix() {
        let c = VrClassifier::new(vec![(VrRule::Vlan(10), 0), (VrRule::Vlan(20), 1)]).unwrap();
        let f = build::udp4(M, M, [10, 0, 0, 1], [198, 18, 0, 1], 64, 1, 2, b"x");
        let tag = |mut f: Vec<u8>, id: u16| {
            let mut t = vec![0x81, 0x00];
            t.extend_from_slice(&id.to_be_bytes());
            f.splice(12..12, t);
            f
        };
        assert_eq!(c.classify(&tag(f.clone(), 20), 0), Some(1));
        assert_eq!(c.classify(&tag(f.clone(), 10), 5), Some(0));
        assert_eq!(c.classify(&tag(f.clone(), 30), 0), None);
        assert_eq!(c.classify(&f, 0), None, "untagged");
        let c = VrClassifier::new(vec![
            (VrRule::Prefix4(0xc612_0000, 24), 0),
            (VrRule::Prefix4(0xc612_0100, 24), 1),
            (VrRule::Prefix6(0x2001_0db8 << 96, 32), 1),
        ])
        .unwrap();
        assert_eq!(c.classify(&f, 0), Some(0));
        assert_eq!(c.classify(&tag(f.clone(), 7), 0), Some(0), "tag skipped");
        let g = build::udp4(M, M, [10, 0, 0, 1], [198, 18, 1, 9], 64, 1, 2, b"x");
        assert_eq!(c.classify(&g, 0), Some(1));
        let h = build::udp4(M, M, [10, 0, 0, 1], [198, 18, 2, 9], 64, 1, 2, b"x");
        assert_eq!(c.classify(&h, 0), None);
        // The IP packet ends at 14 + 20 + 8 + 1 = 43 (padding after):
        // any shorter cut is malformed and belongs to no VR.
        for n in 0..43 {
            assert_eq!(c.classify(&f[..n], 0), None, "truncated to {n}");
        }
        assert_eq!(c.classify(&f[..43], 0), Some(0));
    }

    #[test]
    fn refuses_overlaps_and_mixes() {
        assert_eq!(
            VrClassifier::new(vec![(VrRule::Vlan(1), 0), (VrRule::Vlan(1), 1)]).unwrap_err(),
            ClassError::Overlap(0, 1)
        );
        assert_eq!(
            VrClassifier::new(vec![
                (VrRule::Prefix4(0xc612_0000, 15), 0),
                (VrRule::Prefix4(0xc612_0400, 24), 1)
            ])
            .unwrap_err(),
            ClassError::Overlap(0, 1)
        );
        assert_eq!(
            VrClassifier::new(vec![(VrRule::Vlan(1), 0), (VrRule::Ingress(1), 1)]).unwrap_err(),
            ClassError::MixedKinds(1)
        );
        assert_eq!(
            VrClassifier::new(vec![(VrRule::Prefix4(0, 33), 0)]).unwrap_err(),
            ClassError::BadLength(0)
        );
        // Two prefixes of one VR may nest (the same VR either way).
        assert!(VrClassifier::new(vec![
            (VrRule::Prefix4(0xc612_0000, 16), 0),
            (VrRule::Prefix4(0xc612_0400, 24), 0)
        ])
        .is_ok());
    }

    proptest::proptest! {
        #[test]
        fn never_panics(frame in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), port: u16) {
            for rules in [
                vec![(VrRule::Vlan(1), 0), (VrRule::Vlan(2), 1)],
                vec![(VrRule::Ingress(0), 0)],
                vec![(VrRule::Prefix4(0, 1), 0), (VrRule::Prefix6(0, 0), 1)],
            ] {
                let c = VrClassifier::new(rules).unwrap();
                let _ = c.classify(&frame, port);
            }
        }
    }
}
