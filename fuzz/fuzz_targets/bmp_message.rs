//! The BMP decoder (RFC 7854 §4, RFC 9069, RFC 8671) on any bytes: a
//! stream of messages; each Route Monitoring and Peer Up re-encoded from
//! its decoded parts must decode to the same message, of the same length.
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
        // Padding and the V flag are rewritten from the decoded values,
        // so compare decoded forms: decode(encode(decode(x))) == decode(x).
        let Ok((back, used)) = Message::decode(&out) else {
            panic!("re-encoded message does not decode");
        };
        assert_eq!(used, out.len());
        assert_eq!(used, orig.len());
        assert_eq!(back, m);
    }
});
