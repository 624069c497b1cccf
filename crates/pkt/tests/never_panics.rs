//! Every header decoder in `pkt::hdr` and every checksum helper, fed
//! arbitrary bytes and truncated or corrupted copies of valid frames (made
//! by `pkt::build`): none panics, and what a decoder accepts obeys its
//! documented bounds (length fields never point past the input, payload
//! slices are exactly as long as the header says). The walk itself is in
//! `support/hdr_walk.rs`, shared with `fuzz/fuzz_targets/pkt_headers.rs`.

#[path = "support/hdr_walk.rs"]
mod hdr_walk;

use hdr_walk::{checksum_props, mutate, tagged, valid_frames, walk, Walk};
use pkt::checksum;
use pkt::hdr::arp::Arp;
use pkt::hdr::ether::{parse_l2, Ether, ETH_ARP, ETH_IPV4, ETH_IPV6, ETH_VLAN};
use pkt::hdr::icmp::Icmp;
use pkt::hdr::ip4::Ipv4;
use pkt::hdr::ip6::Ipv6;
use pkt::hdr::l4::{ports, Tcp, Udp};
use pkt::{HdrError, Mac};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
        walk(&b);
        mutate(&b);
    }

    /// Arbitrary bytes behind a plausible Ethernet/IP prefix, so the
    /// deeper decoders see inputs their length checks nearly accept.
    #[test]
    fn plausible_prefixes(
        ety in prop::sample::select(vec![ETH_IPV4, ETH_IPV6, ETH_ARP, ETH_VLAN]),
        first in prop::sample::select(vec![0x45u8, 0x46, 0x4f, 0x44, 0x60, 0x6f, 0x00]),
        rest in proptest::collection::vec(any::<u8>(), 0..120),
    ) {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&ety.to_be_bytes());
        if ety == ETH_VLAN {
            f.extend_from_slice(&[0, 5, 0x08, 0x00]);
        }
        f.push(first);
        f.extend_from_slice(&rest);
        walk(&f);
        mutate(&f);
    }

    #[test]
    fn valid_frames_decode_and_truncations_do_not_panic(
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        a4 in any::<[u8; 4]>(),
        a6 in any::<[u8; 16]>(),
        port in any::<u16>(),
        vid in any::<u16>(),
    ) {
        for (f, has_l4) in valid_frames(&payload, a4, a6, port) {
            for f in [f.clone(), tagged(&f, vid)] {
                let w = walk(&f);
                prop_assert_eq!(&w, &Walk { l2: true, l3: true, l4: has_l4 });
                mutate(&f);
                if has_l4 {
                    let l3 = &f[parse_l2(&f).unwrap().l3..];
                    if let Ok(ip) = Ipv4::parse(l3) {
                        prop_assert!(ip.checksum_ok());
                    }
                }
                for cut in 0..f.len() {
                    walk(&f[..cut]);
                    mutate(&f[..cut]);
                }
            }
        }
    }

    #[test]
    fn corrupted_valid_frames(
        payload in proptest::collection::vec(any::<u8>(), 0..32),
        a4 in any::<[u8; 4]>(),
        a6 in any::<[u8; 16]>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        which in any::<prop::sample::Index>(),
    ) {
        let frames = valid_frames(&payload, a4, a6, 4242);
        let mut f = frames[which.index(frames.len())].0.clone();
        for (i, v) in &edits {
            let n = f.len();
            f[i.index(n)] = *v;
        }
        walk(&f);
        mutate(&f);
    }

    #[test]
    fn checksum_helpers(
        data in proptest::collection::vec(any::<u8>(), 0..300),
        split in any::<prop::sample::Index>(),
        acc in any::<u32>(),
        word in any::<prop::sample::Index>(),
        new in any::<u16>(),
        new32 in any::<u32>(),
        a4 in any::<[u8; 4]>(),
        a6 in any::<[u8; 16]>(),
        len in any::<u16>(),
    ) {
        checksum_props(&data, split.index(data.len() + 1), word.index(1 << 16), new, new32);
        // Any accumulator folds; the pseudo-headers take any input.
        let _ = checksum::finish(checksum::add(u64::from(acc), &data));
        let _ = checksum::finish(checksum::pseudo4(a4, a4, 17, len));
        let _ = checksum::finish(checksum::pseudo6(&a6, &a6, 58, u32::from(len)));
    }

    #[test]
    fn mac_from_str_never_panics(s in ".{0,40}", hex in "[0-9a-fA-F:-]{0,24}") {
        for s in [s.as_str(), hex.as_str()] {
            if let Ok(m) = s.parse::<Mac>() {
                // What parses prints back as six two-digit groups that
                // parse to the same address.
                prop_assert_eq!(m.to_string().parse::<Mac>(), Ok(m));
            }
        }
    }
}

#[test]
fn every_decoder_refuses_the_empty_input() {
    assert_eq!(Ether::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(parse_l2(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(Arp::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(Ipv4::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(Ipv6::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(Icmp::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(Udp::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(Tcp::parse(&[]).unwrap_err(), HdrError::Short);
    assert_eq!(ports(&[]), None);
    assert_eq!(walk(&[]), Walk::default());
}
