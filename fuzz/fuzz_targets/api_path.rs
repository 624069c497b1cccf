//! A gRPC client's path (GoBGP's `apipb.Path`, protobuf bytes) as tesserad
//! reads it for AddPath/AddPathStream: any bytes either fail to decode or
//! give a route or an error, never a panic; the attributes inside the
//! `Any`s are fed the same bytes too.
#![no_main]

use api::apipb;
use api::convert::route_of;
use libfuzzer_sys::fuzz_target;
use prost::Message;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = apipb::Path::decode(data) {
        let _ = route_of(&p);
    }
    // The same bytes as every attribute and as the NLRI.
    for name in [
        "OriginAttribute",
        "AsPathAttribute",
        "NextHopAttribute",
        "MpReachNLRIAttribute",
        "MultiExitDiscAttribute",
        "LocalPrefAttribute",
        "CommunitiesAttribute",
    ] {
        let any = prost_types::Any {
            type_url: format!("type.googleapis.com/apipb.{name}"),
            value: data.to_vec(),
        };
        let p = apipb::Path {
            nlri: Some(prost_types::Any {
                type_url: "type.googleapis.com/apipb.IPAddressPrefix".into(),
                value: data.to_vec(),
            }),
            pattrs: vec![any],
            ..Default::default()
        };
        let _ = route_of(&p);
    }
});
