//! Test support kept out of the libraries (a dev-dependency only).
//!
//! * [`inproc`]: `bgp-speaker`'s UPDATE pipeline in-process, without
//!   sockets, with fake sessions whose output the caller reads (the
//!   differential test of the pipeline modes, the control-plane tests, the
//!   pipeline benchmark and the `pipeline_modes` example).

pub mod inproc;
