//! Counts records and RIB entries of an MRT file: `mrt_count FILE [--inline]`
//! (`--inline` decompresses on the reading thread).

use mrt::{Body, MrtReader, ReaderOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: mrt_count FILE [--inline]");
        std::process::exit(2);
    };
    let threaded = args.next().as_deref() != Some("--inline");
    let mut r = match MrtReader::open_with(&path, ReaderOptions { threaded }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let (mut records, mut entries) = (0u64, 0u64);
    while let Some(x) = r.next_record() {
        match x {
            Ok(rec) => {
                records += 1;
                if let Body::Rib(rib) = &rec.body {
                    entries += rib.entries().len() as u64;
                }
            }
            Err(e) => eprintln!("{path}: {e}"),
        }
    }
    println!(
        "records {records} rib_entries {entries} counters {:?}",
        r.counters()
    );
}
