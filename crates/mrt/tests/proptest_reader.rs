//! Arbitrary input never panics the reader, and any body the decoder
//! accepts re-encodes to exactly the same bytes.

use mrt::{fuzz_support, Body, MrtReader};
use proptest::prelude::*;

fn framed(t: u16, s: u16, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + body.len());
    v.extend_from_slice(&7u32.to_be_bytes());
    v.extend_from_slice(&t.to_be_bytes());
    v.extend_from_slice(&s.to_be_bytes());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        fuzz_support::decode_records(&data);
        let mut r = MrtReader::new(&data[..]);
        let mut fatal = 0;
        while let Some(x) = r.next_record() {
            if let Err(e) = x {
                if e.is_fatal() { fatal += 1; }
            }
        }
        prop_assert!(fatal <= 1);
    }

    #[test]
    fn accepted_bodies_reencode_exactly(
        t in prop::sample::select(vec![12u16, 13, 16, 17]),
        s in 0u16..14,
        body in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let data = framed(t, s, &body);
        fuzz_support::decode_records(&data);
        let mut r = MrtReader::new(&data[..]);
        if let Some(Ok(rec)) = r.next_record() {
            let mut out = Vec::new();
            rec.encode(&mut out).unwrap();
            prop_assert_eq!(&out, &data);
            let extra = if rec.header.microseconds.is_some() { 4 } else { 0 };
            let again = Body::parse(t, s, &out[12 + extra..]).unwrap().unwrap();
            prop_assert_eq!(again, rec.body);
        }
    }
}

/// Decompressed bytes of a small shared file (real records to mutate).
fn shared(name: &str) -> Vec<u8> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt")
        .join(name);
    assert!(p.is_file(), "shared MRT data missing: {}", p.display());
    let mut r = MrtReader::open(&p).unwrap();
    let mut w = mrt::MrtWriter::new(Vec::new());
    while let Some(x) = r.next_raw() {
        let x = x.unwrap();
        w.write_raw(&x.header, x.body).unwrap();
    }
    w.finish().unwrap()
}

fn corpus() -> &'static Vec<u8> {
    static C: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        let mut v = shared("bview.ipv4_unicast_add_path.gz");
        v.extend(shared("bview.ipv6_unicast_add_path.gz"));
        v.extend(
            shared("routeviews.route-views.jinx.updates.1401493500.bz2")
                .into_iter()
                .take(20_000),
        );
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// Real records with a few bytes overwritten: never panics; every record
    /// that still decodes re-encodes to its exact bytes.
    #[test]
    fn mutated_real_records(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut data = corpus().clone();
        for (i, b) in edits {
            let i = i.index(data.len());
            data[i] = b;
        }
        fuzz_support::decode_records(&data);
        let mut r = MrtReader::new(&data[..]);
        let mut out = Vec::new();
        while let Some(x) = r.next_record() {
            let Ok(rec) = x else { continue };
            out.clear();
            rec.encode(&mut out).unwrap();
            let start = rec.offset as usize;
            prop_assert_eq!(&out[..], &data[start..start + out.len()]);
        }
    }
}
