//! A flow hash over the 5-tuple, shared by software RSS (crate `io`,
//! which core takes a frame) and the cluster fabric's flow affinity (crate
//! `elements`, which intermediate a flow uses).

/// A 32-bit hash of the frame's flow: IPv4/IPv6 source and destination
/// address, protocol, and TCP/UDP/SCTP ports (not for fragments). Frames
/// that are not IP hash to 0. One 802.1Q tag is skipped.
pub fn flow_hash(frame: &[u8]) -> u32 {
    let be16 = |at: usize| {
        frame
            .get(at..)
            .and_then(|b| b.first_chunk::<2>())
            .map(|b| u16::from_be_bytes(*b))
    };
    let Some(mut et) = be16(12) else { return 0 };
    let mut l3 = 14;
    if et == 0x8100 {
        let Some(inner) = be16(16) else { return 0 };
        et = inner;
        l3 = 18;
    }
    let Some(ip) = frame.get(l3..) else { return 0 };
    let (mut h, proto, l4) = match et {
        0x0800 => {
            let Some(h4) = ip.first_chunk::<20>() else {
                return 0;
            };
            let ihl = usize::from(h4[0] & 0xf) * 4;
            let frag = u16::from_be_bytes([h4[6], h4[7]]) & 0x3fff != 0;
            let addrs = u64::from_be_bytes([
                h4[12], h4[13], h4[14], h4[15], h4[16], h4[17], h4[18], h4[19],
            ]);
            (
                mix(addrs, 0),
                h4[9],
                if frag { None } else { ip.get(ihl..) },
            )
        }
        0x86dd => {
            let Some(h6) = ip.first_chunk::<40>() else {
                return 0;
            };
            let mut h = 0u64;
            for c in h6.get(8..).unwrap_or_default().chunks_exact(8) {
                let w = c.first_chunk::<8>().copied().unwrap_or_default();
                h = mix(u64::from_be_bytes(w), h);
            }
            (h, h6[6], ip.get(40..))
        }
        _ => return 0,
    };
    if let (6 | 17 | 132, Some(p)) = (proto, l4) {
        if let Some(b) = p.first_chunk::<4>() {
            h = mix(u64::from(u32::from_be_bytes(*b)), h);
        }
    }
    let h = mix(u64::from(proto), h);
    (h ^ (h >> 32)) as u32
}

/// One round of a multiply-xorshift mixer (the finaliser of SplitMix64).
fn mix(v: u64, seed: u64) -> u64 {
    let mut z = v ^ seed.rotate_left(23) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
