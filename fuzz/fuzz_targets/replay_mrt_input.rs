//! `tessera replay --mrt`'s reader (`replay::mrt_input`): the input is an
//! MRT file (any run of records); it is read twice over, as two files of
//! one replay, so kind detection, both readers (RIB dumps: attribute
//! rewriting and packing; update traces: re-encoding and next-hop
//! patching) and the merging of files by peer all see it. Errors are
//! fine; any panic, overflow or hang is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;
use replay::feed::FeedParams;
use replay::mrt_input::{load, InputOptions, ParamsFn};
use std::net::Ipv4Addr;
use std::sync::{Arc, OnceLock};

fuzz_target!(|data: &[u8]| {
    // The readers take paths: one file per fuzzing process.
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("replay-mrt-input-fuzz-{}.mrt", std::process::id()))
    });
    if std::fs::write(path, data).is_err() {
        return;
    }
    let params: ParamsFn = Arc::new(|i| {
        FeedParams::ebgp(base::Asn(65001), Ipv4Addr::from(0x7f00_0002u32 + i as u32))
    });
    let files = [path.clone(), path.clone()];
    if let Ok((w, _)) = load(&files, &InputOptions::default(), &params) {
        std::hint::black_box(w.final_prefixes());
        let order = replay::Order::RoundRobin { batch: 2, window: Some(2) };
        std::hint::black_box(replay::schedule(&w, order).len());
    }
});
