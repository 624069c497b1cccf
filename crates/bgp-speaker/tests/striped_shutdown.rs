//! A shutdown request is answered by every stripe (the master does not
//! stop after the first), in both striped modes, and the threads end.

use bgp_speaker::pipeline::Mode;
use bgp_speaker::striped::STRIPES;
use testkit::inproc::{FakePeer, InProc};

#[test]
fn shutdown_answered_by_every_stripe() {
    for mode in [Mode::PerPeer, Mode::WorkerPool(2)] {
        let ip = InProc::start(mode, &[FakePeer::nth(0)]).expect("start");
        ip.up(0);
        let answers = ip
            .call_all(|st| {
                st.request_shutdown();
                st.part.index
            })
            .expect("every stripe answers");
        assert_eq!(answers, (0..STRIPES).collect::<Vec<_>>(), "{mode:?}");
        ip.shutdown();
    }
}
