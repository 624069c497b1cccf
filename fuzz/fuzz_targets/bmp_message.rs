//! The BMP decoder (RFC 7854 §4, RFC 9069, RFC 8671) on any bytes: a
//! stream of messages, each decoded view re-encoded from its parts must
//! give the same octets back (for the types the encoder writes).
#![no_main]

use bmp::decode::{decode_all, Message};
use bmp::encode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (msgs, _) = decode_all(data);
    let mut at = 0usize;
    for m in msgs {
        let Ok((again, n)) = Message::decode(&data[at..]) else {
            panic!("decoded once, not twice");
        };
        assert_eq!(again, m);
        let orig = &data[at..at + n];
        at += n;
        let mut out = Vec::new();
        match m {
            Message::RouteMonitoring { peer, update } => {
                encode::route_monitoring(&peer, update, &mut out)
            }
            Message::PeerUp { peer, local, sent_open, received_open, info } => {
                encode::peer_up(&peer, &local, sent_open, received_open, info.raw(), &mut out)
            }
            _ => continue,
        }
        // V is recomputed from the address; elsewhere the bytes must match.
        if out.len() == orig.len() {
            assert_eq!(&out[..7], &orig[..7]);
            assert_eq!(&out[8..], &orig[8..]);
        } else {
            panic!("re-encoded length differs");
        }
    }
});
