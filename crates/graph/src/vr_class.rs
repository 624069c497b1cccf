//! The virtual routers' demultiplexer: which VR a received frame belongs
//! to, by 802.1Q VLAN id, ingress port, or destination prefix (the
//! `[[dataplane.vr]]` matches of crate `config`). It runs before the VRs'
//! graphs, on untrusted frames: a frame too short or malformed for its
//! rule kind belongs to no VR (`None`, which the caller counts as a drop
//! by reason), and nothing here panics (fuzz target `vr_classify`).
//!
//! Rules are disjoint by construction ([`VrClassifier::new`] refuses
//! overlapping ones and mixed kinds), so the first match is the only
//! match. The scan is linear: at most a few dozen VRs, each with a few
//! prefixes.
//!
//! Where a frame goes ([`VrClassifier::target`]), by the kind of the
//! rules (one kind per set, so no two kinds ever compete):
//!
//! | kind | data (IPv4, IPv6, other) | ARP request, ND NS | ARP reply, ND NA |
//! |---|---|---|---|
//! | VLAN | the VR of the frame's 802.1Q id; untagged or another id: none | the same (a VLAN is its own layer-2 domain) | the same |
//! | ingress | the VR of the port | the VR of the port | every VR (a VR sends out of ports it does not own) |
//! | prefix | IPv4/IPv6: the VR holding the destination (one tag skipped); other: none | the VR holding the target address, else the first rule's VR (the port addresses, which every VR shares, answer once) | every VR (any VR may have asked) |
//!
//! ```
//! use graph::vr_class::{VrClassifier, VrRule};
//! let c = VrClassifier::new(vec![(VrRule::Ingress(0), 0), (VrRule::Ingress(1), 1)]).unwrap();
//! assert_eq!(c.classify(&[0u8; 60], 1), Some(1));
//! assert_eq!(c.classify(&[0u8; 60], 2), None);
//! ```

use pkt::hdr::arp::{Arp, ARP_REPLY, ARP_REQUEST};
use pkt::hdr::ether::{parse_l2, ETH_ARP, ETH_IPV4, ETH_IPV6};
use pkt::hdr::icmp::{ND_NA, ND_NS};
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

/// The kind of a rule set (every rule of a classifier has one kind).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// [`VrRule::Vlan`].
    Vlan,
    /// [`VrRule::Ingress`].
    Ingress,
    /// [`VrRule::Prefix4`] and [`VrRule::Prefix6`].
    Prefix,
}

/// Where the demultiplexer sends a received frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A neighbour answer (ARP reply, Neighbor Advertisement) under
    /// ingress or prefix rules: to every VR.
    Every,
    /// To this VR (its index in the classifier's rules).
    One(usize),
    /// To no VR: dropped (`no_vr`).
    Nowhere,
}

/// A neighbour-protocol frame (RFC 826 ARP, RFC 4861 ND), untagged or
/// under one 802.1Q tag.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Neigh {
    /// An ARP request for this IPv4 address.
    Ask4([u8; 4]),
    /// A Neighbor Solicitation for this target address.
    Ask6([u8; 16]),
    /// An ARP reply or a Neighbor Advertisement.
    Answer,
}

/// ICMPv6 type offset and ND target offset in the packet after the IPv6
/// fixed header (RFC 4861 4.3, 4.4: type, code, checksum, reserved, then
/// the target address).
const ND_TARGET: usize = 8;

/// Whether `frame` is an ARP request or reply, or a Neighbor Solicitation
/// or Advertisement (ICMPv6 right after the fixed header, as RFC 4861
/// sends them), and for a question its target. Short or other frames:
/// `None`.
pub fn neigh(frame: &[u8]) -> Option<Neigh> {
    let l2 = parse_l2(frame).ok()?;
    let l3 = frame.get(l2.l3..)?;
    match l2.ethertype {
        ETH_ARP => {
            let a = Arp::parse(l3).ok()?;
            match a.oper() {
                ARP_REQUEST => Some(Neigh::Ask4(a.tpa())),
                ARP_REPLY => Some(Neigh::Answer),
                _ => None,
            }
        }
        ETH_IPV6 => {
            let ip = Ipv6::parse(l3).ok()?;
            if ip.next_header() != 58 {
                return None;
            }
            let icmp = ip.payload();
            let target: [u8; 16] = icmp.get(ND_TARGET..ND_TARGET + 16)?.try_into().ok()?;
            match *icmp.first()? {
                ND_NS => Some(Neigh::Ask6(target)),
                ND_NA => Some(Neigh::Answer),
                _ => None,
            }
        }
        _ => None,
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

    /// The kind of the rules (`None`: no rules).
    pub fn kind(&self) -> Option<RuleKind> {
        self.rules.first().map(|(r, _)| match kind(r) {
            0 => RuleKind::Vlan,
            1 => RuleKind::Ingress,
            _ => RuleKind::Prefix,
        })
    }

    /// The VR a VLAN id belongs to.
    pub fn by_vlan(&self, id: u16) -> Option<usize> {
        self.rules
            .iter()
            .find(|(r, _)| *r == VrRule::Vlan(id))
            .map(|(_, v)| *v)
    }

    fn by_addr4(&self, dst: u32) -> Option<usize> {
        self.rules.iter().find_map(|(r, v)| match *r {
            VrRule::Prefix4(p, l) if dst & mask4(l) == p & mask4(l) => Some(*v),
            _ => None,
        })
    }

    fn by_addr6(&self, dst: u128) -> Option<usize> {
        self.rules.iter().find_map(|(r, v)| match *r {
            VrRule::Prefix6(p, l) if dst & mask6(l) == p & mask6(l) => Some(*v),
            _ => None,
        })
    }

    /// Where a frame received on port `in_port` goes, neighbour protocols
    /// included (the table in the module docs). Never panics.
    pub fn target(&self, frame: &[u8], in_port: u16) -> Target {
        let one = |v: Option<usize>| v.map_or(Target::Nowhere, Target::One);
        match self.kind() {
            None => Target::Nowhere,
            // Every frame of a VLAN, neighbour protocols included, is the
            // VLAN's VR's: the VLANs are separate layer-2 domains.
            Some(RuleKind::Vlan) => one(self.classify(frame, in_port)),
            Some(RuleKind::Ingress) => match neigh(frame) {
                Some(Neigh::Answer) => Target::Every,
                _ => one(self.classify(frame, in_port)),
            },
            Some(RuleKind::Prefix) => {
                let first = self.rules.first().map(|(_, v)| *v);
                match neigh(frame) {
                    Some(Neigh::Answer) => Target::Every,
                    Some(Neigh::Ask4(t)) => one(self.by_addr4(u32::from_be_bytes(t)).or(first)),
                    Some(Neigh::Ask6(t)) => one(self.by_addr6(u128::from_be_bytes(t)).or(first)),
                    None => one(self.classify(frame, in_port)),
                }
            }
        }
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
            return self.by_vlan(l2.vlan?);
        }
        let l3 = frame.get(l2.l3..)?;
        match l2.ethertype {
            ETH_IPV4 => self.by_addr4(u32::from_be_bytes(Ipv4::parse(l3).ok()?.dst())),
            ETH_IPV6 => self.by_addr6(u128::from_be_bytes(Ipv6::parse(l3).ok()?.dst())),
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

    fn tag(mut f: Vec<u8>, id: u16) -> Vec<u8> {
        let mut t = vec![0x81, 0x00];
        t.extend_from_slice(&id.to_be_bytes());
        f.splice(12..12, t);
        f
    }

    /// The precedence table of the module docs, kind by kind, with
    /// tagged and untagged frames, ARP and ND questions and answers.
    #[test]
    fn targets_by_kind_with_neighbour_protocols() {
        let udp = build::udp4(M, M, [10, 0, 0, 1], [198, 18, 1, 9], 64, 1, 2, b"x");
        let req = |t: [u8; 4]| build::arp(M, M, 1, M, [198, 18, 0, 2], M, t);
        let rep = build::arp(M, M, 2, M, [198, 18, 0, 2], M, [198, 18, 0, 1]);
        let a6 = |last: u8| {
            let mut a = [0u8; 16];
            a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            a[15] = last;
            a
        };
        let mut other6 = a6(1);
        other6[2] = 0x0e;
        let ns = |t: &[u8; 16]| build::ns6(M, &a6(2), t);
        let na = build::na6(M, M, &a6(2), &a6(1));
        let udp6 = build::udp6(M, M, &a6(2), &a6(9), 64, 1, 2, b"x");

        // VLAN: the tag decides, for neighbour frames too; no tag, none.
        let c = VrClassifier::new(vec![(VrRule::Vlan(10), 0), (VrRule::Vlan(20), 1)]).unwrap();
        assert_eq!(c.kind(), Some(RuleKind::Vlan));
        for f in [&udp, &req([198, 18, 0, 1]), &rep, &ns(&a6(1)), &na, &udp6] {
            assert_eq!(c.target(&tag(f.clone(), 10), 3), Target::One(0));
            assert_eq!(c.target(&tag(f.clone(), 20), 0), Target::One(1));
            assert_eq!(c.target(&tag(f.clone(), 30), 0), Target::Nowhere);
            assert_eq!(c.target(f, 0), Target::Nowhere, "untagged");
        }

        // Ingress: answers to every VR, the rest by port.
        let c = VrClassifier::new(vec![(VrRule::Ingress(0), 0), (VrRule::Ingress(1), 1)]).unwrap();
        assert_eq!(c.target(&rep, 1), Target::Every);
        assert_eq!(c.target(&na, 7), Target::Every);
        assert_eq!(c.target(&req([198, 18, 0, 1]), 1), Target::One(1));
        assert_eq!(c.target(&udp, 0), Target::One(0));
        assert_eq!(c.target(&udp, 2), Target::Nowhere);

        // Prefix: data by destination, questions by target (else the
        // first rule's VR), answers to every VR.
        let c = VrClassifier::new(vec![
            (VrRule::Prefix4(0xc612_0100, 24), 1),
            (VrRule::Prefix4(0xc612_0000, 24), 0),
            (VrRule::Prefix6(u128::from_be_bytes(a6(0)), 64), 0),
        ])
        .unwrap();
        assert_eq!(c.kind(), Some(RuleKind::Prefix));
        assert_eq!(c.target(&udp, 0), Target::One(1));
        assert_eq!(c.target(&tag(udp.clone(), 5), 0), Target::One(1));
        assert_eq!(c.target(&udp6, 0), Target::One(0));
        let far = build::udp4(M, M, [10, 0, 0, 1], [203, 0, 113, 1], 64, 1, 2, b"x");
        assert_eq!(c.target(&far, 0), Target::Nowhere);
        assert_eq!(c.target(&req([198, 18, 0, 1]), 0), Target::One(0));
        assert_eq!(c.target(&req([198, 18, 1, 1]), 0), Target::One(1));
        assert_eq!(
            c.target(&req([203, 0, 113, 1]), 0),
            Target::One(1),
            "first rule's VR"
        );
        assert_eq!(c.target(&tag(req([198, 18, 0, 1]), 9), 0), Target::One(0));
        assert_eq!(c.target(&ns(&a6(1)), 0), Target::One(0));
        assert_eq!(c.target(&ns(&other6), 0), Target::One(1), "first rule's VR");
        assert_eq!(c.target(&rep, 0), Target::Every);
        assert_eq!(c.target(&na, 0), Target::Every);
        assert_eq!(VrClassifier::default().target(&udp, 0), Target::Nowhere);

        // Neighbour frames cut short are not neighbour frames.
        assert_eq!(neigh(&req([1, 2, 3, 4])), Some(Neigh::Ask4([1, 2, 3, 4])));
        assert_eq!(neigh(&ns(&a6(1))), Some(Neigh::Ask6(a6(1))));
        assert_eq!(neigh(&na), Some(Neigh::Answer));
        assert_eq!(neigh(&req([1, 2, 3, 4])[..14 + 27]), None);
        assert_eq!(neigh(&ns(&a6(1))[..14 + 40 + 23]), None);
        assert_eq!(neigh(&udp), None);
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
                if let Target::One(v) = c.target(&frame, port) {
                    proptest::prop_assert!(v <= 1);
                }
            }
        }
    }
}
