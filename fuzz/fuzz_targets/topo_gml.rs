//! The GML topology parser (`topo::format::gml::parse`) on any text
//! (non-UTF-8 decoded lossily). It must return a consistent graph (links
//! between existing nodes, no self-loops, no pair twice, AS numbers unique)
//! or a `FILE:LINE: message` error with the line inside the text, never
//! panic. The checks are `topo::fuzz_support::check_gml`, which the topo
//! unit tests also run on mutated fixtures.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    topo::fuzz_support::check_gml(data);
});
