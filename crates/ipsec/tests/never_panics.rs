//! The decapsulation path never panics on arbitrary bytes, and every
//! sealed IP packet opens to itself (the walk the fuzz target runs).

mod support {
    pub mod walk;
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        support::walk::walk(&data);
    }

    #[test]
    fn ip_like_bytes(v6 in any::<bool>(), rest in proptest::collection::vec(any::<u8>(), 0..120)) {
        let mut d = vec![if v6 { 0x60 } else { 0x45 }];
        d.extend(rest);
        support::walk::walk(&d);
    }
}
