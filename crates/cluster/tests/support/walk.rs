//! The decoder walk shared by the property tests and the fuzz target:
//! decode, and check the documented bounds of whatever decodes.

use cluster::fabric::{decode, Message, MAX_FRAMES};
use cluster::geneve::Geneve;

/// Decodes `b` every way the crate offers; panics only if a documented
/// bound is broken.
pub fn walk(b: &[u8]) {
    if let Ok(g) = Geneve::parse(b) {
        assert_eq!(g.header_len() + g.payload().len(), b.len());
        for o in g.options().flatten() {
            assert!(o.data.len() <= 124);
        }
    }
    match decode(b) {
        Ok(Message::Data(d)) => {
            assert!(!d.is_empty() && d.len() <= MAX_FRAMES);
            let n: usize = d.frames().map(|f| f.bytes.len()).sum();
            assert_eq!(d.frames().count(), d.len());
            assert!(n < b.len());
            assert!(d.flags_offset() < b.len());
        }
        Ok(Message::Becn(_)) | Err(_) => {}
    }
    let mut m = b.to_vec();
    let _ = cluster::fabric::clear_transit(&mut m);
}
