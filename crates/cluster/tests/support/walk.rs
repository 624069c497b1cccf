//! The decoder walk shared by the property tests and the fuzz target:
//! decode, and check the documented bounds of whatever decodes (the
//! neighbour trailer split of every frame included).

use cluster::fabric::{decode, split_neighbour, Message, MAX_FRAMES};
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
            for f in d.frames() {
                if let Some((frame, nbr)) = split_neighbour(f.bytes) {
                    assert_eq!(frame.len() + nbr.len(), f.bytes.len());
                    assert!(frame.len() >= 14 && matches!(nbr.len(), 0 | 4 | 16));
                }
            }
        }
        Ok(Message::Becn(_)) | Err(_) => {}
    }
    let mut m = b.to_vec();
    let _ = cluster::fabric::clear_transit(&mut m);
}
