//! A shutdown request is answered by every stripe or node (the master
//! does not stop after the first), in both locked modes with both
//! lockings, and the threads end.

use bgp_speaker::pipeline::{Locks, Mode};
use testkit::inproc::{FakePeer, InProc};

#[test]
fn shutdown_answered_by_every_stripe() {
    for mode in [
        Mode::PerPeer(Locks::Stripes),
        Mode::WorkerPool(2, Locks::Stripes),
        Mode::PerPeer(Locks::Fine),
        Mode::WorkerPool(2, Locks::Fine),
    ] {
        let parts = mode.shards();
        let ip = InProc::start(mode, &[FakePeer::nth(0)]).expect("start");
        ip.up(0);
        let answers = ip
            .call_all(|st| {
                st.request_shutdown();
                st.part.index
            })
            .expect("every stripe answers");
        assert_eq!(answers, (0..parts).collect::<Vec<_>>(), "{mode:?}");
        ip.shutdown();
    }
}
