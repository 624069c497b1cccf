//! Property tests of the fabric codec: what the writer builds decodes to
//! the same frames and metadata; arbitrary bytes and mutated valid
//! packets never panic the decoder and, when they decode, respect its
//! documented bounds. The same walk runs in `fuzz/fuzz_targets/cluster_fabric.rs`.

use cluster::fabric::{
    clear_transit, decode, encode_becn, Becn, Message, Meta, PacketWriter, HDR_MAX, MAX_FRAMES,
};
use cluster::pack::Packer;
use proptest::prelude::*;

#[path = "support/walk.rs"]
mod walk;

fn frame() -> impl Strategy<Value = (u8, u8, Vec<u8>)> {
    (
        any::<u8>(),
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 0..200),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn data_round_trips(
        frames in prop::collection::vec(frame(), 1..40),
        degree in 1usize..40,
        cap in 60usize..2000,
        egress in any::<u16>(),
        source in any::<u16>(),
        flags in any::<u8>(),
        vni in 0u32..0x0100_0000,
    ) {
        let mut buf = vec![0u8; HDR_MAX + 2000];
        let mut w = PacketWriter::new(&mut buf, degree, cap);
        let mut pushed = Vec::new();
        for (p, q, f) in &frames {
            if !w.push(*p, *q, f) {
                break;
            }
            pushed.push((*p, *q, f.clone()));
        }
        prop_assert!(pushed.len() <= degree.min(MAX_FRAMES));
        let meta = Meta { egress, source, flags };
        match w.finish(vni, meta) {
            None => prop_assert!(pushed.is_empty()),
            Some(r) => {
                prop_assert!(r.len() <= cap);
                let Ok(Message::Data(d)) = decode(&buf[r]) else {
                    return Err(TestCaseError::fail("not data"));
                };
                prop_assert_eq!(d.meta, meta);
                prop_assert_eq!(d.vni, vni);
                let got: Vec<_> = d.frames().map(|f| (f.port, f.queue, f.bytes.to_vec())).collect();
                prop_assert_eq!(got, pushed);
            }
        }
    }

    #[test]
    fn becn_round_trips(egress in any::<u16>(), source in any::<u16>(), flags in any::<u8>(),
                        port in any::<u8>(), queue in any::<u8>(), value in any::<u32>()) {
        let b = Becn { meta: Meta { egress, source, flags }, port, queue, value };
        let mut out = [0u8; 32];
        let n = encode_becn(&mut out, 1, &b).expect("fits");
        let Ok(Message::Becn(d)) = decode(&out[..n]) else {
            return Err(TestCaseError::fail("not becn"));
        };
        prop_assert_eq!(d, b);
    }

    #[test]
    fn packer_delivers_every_frame_once_in_order(
        pushes in prop::collection::vec((0u16..3, 0u16..3, frame()), 0..100),
        degree in 1usize..30,
    ) {
        let mut p: Packer<Vec<u8>> = Packer::new(3, 0, 0, degree, 1472, 1000);
        let mut want: Vec<Vec<(u8, u8, Vec<u8>)>> = vec![Vec::new(); 9];
        for (nh, eg, (port, q, f)) in &pushes {
            p.push(*nh, *eg, *port, *q, f.clone()).expect("room");
            want[usize::from(*nh * 3 + *eg)].push((*port, *q, f.clone()));
        }
        let mut got: Vec<Vec<(u8, u8, Vec<u8>)>> = vec![Vec::new(); 9];
        let mut buf = vec![0u8; HDR_MAX + 1500];
        while let Some(g) = p.pull(&mut buf, |_| ()) {
            prop_assert!(g.frames <= degree);
            prop_assert!(g.range.len() <= 1472);
            let Ok(Message::Data(d)) = decode(&buf[g.range.clone()]) else {
                return Err(TestCaseError::fail("not data"));
            };
            prop_assert_eq!(d.meta.egress, g.egress);
            let k = usize::from(g.next_hop * 3 + g.egress);
            got[k].extend(d.frames().map(|f| (f.port, f.queue, f.bytes.to_vec())));
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..300)) {
        walk::walk(&b);
    }

    #[test]
    fn mutated_packets_never_panic(
        frames in prop::collection::vec(frame(), 1..5),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        cut in any::<usize>(),
    ) {
        let mut buf = vec![0u8; HDR_MAX + 2000];
        let mut w = PacketWriter::new(&mut buf, 29, 1472);
        for (p, q, f) in &frames {
            w.push(*p, *q, f);
        }
        let r = w.finish(0, Meta { egress: 1, source: 0, flags: 1 }).expect("frames");
        let mut pkt = buf[r].to_vec();
        for (i, v) in edits {
            let n = pkt.len();
            pkt[i % n] = v;
        }
        pkt.truncate(cut % (pkt.len() + 1));
        walk::walk(&pkt);
        let _ = clear_transit(&mut pkt);
    }
}

/// The fuzz seeds are valid messages (so the fuzzer starts from packets
/// that reach the deep checks).
#[test]
fn fuzz_seeds_decode() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/seeds/cluster_fabric"
    );
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("seed dir") {
        let p = e.expect("entry").path();
        let b = std::fs::read(&p).expect("seed");
        let m = decode(&b).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        match (p.file_name().and_then(|s| s.to_str()), m) {
            (Some("becn"), Message::Becn(b)) => assert_eq!(b.value, 0xdead_beef),
            (Some("data_two_frames"), Message::Data(d)) => assert_eq!(d.len(), 2),
            (Some("data_one_frame"), Message::Data(d)) => assert_eq!(d.len(), 1),
            (Some("data_neighbour"), Message::Data(d)) => {
                assert_eq!(d.meta.flags, cluster::fabric::FLAG_NEIGHBOUR);
                let f = d.frames().next().expect("one frame");
                let (frame, nbr) = cluster::fabric::split_neighbour(f.bytes).expect("trailer");
                assert_eq!((frame.len(), nbr), (34, &[198u8, 18, 2, 2][..]));
            }
            (name, m) => panic!("{name:?}: {m:?}"),
        }
        n += 1;
    }
    assert_eq!(n, 4);
}
