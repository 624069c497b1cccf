//! A gRPC client's `AddPeer` (GoBGP's `apipb.AddPeerRequest`, protobuf
//! bytes) as tesserad reads it: any bytes either fail to decode, or give
//! `[[neighbor]]` keys or an error, and those keys are validated against a
//! running configuration (`config::runtime_neighbor`) without a panic.
#![no_main]

use std::sync::OnceLock;

use api::apipb;
use api::convert::neighbor_keys;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fn running() -> &'static config::Config {
    static C: OnceLock<config::Config> = OnceLock::new();
    C.get_or_init(|| {
        config::parse(
            "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n\
             [[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65001\n",
            "fuzz.toml",
        )
        .expect("the fuzz target's configuration")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(r) = apipb::AddPeerRequest::decode(data) else {
        return;
    };
    let Some(p) = r.peer else { return };
    if let Ok(k) = neighbor_keys(&p) {
        let _ = config::runtime_neighbor(running(), &k, "AddPeer");
    }
});
