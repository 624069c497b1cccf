//! The dataplane feed's frame decoder (`fib::feed::read_batch`, best-route
//! changes with their multipath next hops) on any bytes: it must not
//! panic, and what it accepts re-encodes to bytes that decode the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    while let Ok(batch) = fib::feed::read_batch(&mut r) {
        let mut w = Vec::new();
        fib::feed::encode(&batch, &mut w);
        assert_eq!(fib::feed::read_batch(&mut &w[..]), Ok(batch));
    }
});
