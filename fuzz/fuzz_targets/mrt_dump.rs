//! The `bgpdump -m` and `--json` formatters (`mrt::bgpdump`), which read BGP
//! attributes their own way to match bgpdump's quirks: every record the
//! reader frames is formatted both ways. Any panic, overflow or hang is a
//! bug; the output must also be valid UTF-8 for the JSON form's strings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mrt::bgpdump::{Dumper, RecordInfo};
use mrt::MrtReader;

fuzz_target!(|data: &[u8]| {
    let mut text = Dumper::new();
    let mut json = Dumper::json();
    let mut out = Vec::new();
    let mut r = MrtReader::new(data);
    while let Some(rec) = r.next_raw() {
        let Ok(rec) = rec else { continue };
        let info = RecordInfo::from_header(&rec.header);
        out.clear();
        text.record(&info, rec.body, &mut out);
        json.record(&info, rec.body, &mut out);
        std::hint::black_box(&out);
    }
});
