//! A core that switches between the main graph and virtual routers
//! ([`super::vr`]) when a reload adds the first `[[dataplane.vr]]` or
//! removes the last one, without a restart.
//!
//! ```text
//!            VR set not empty (VrWorker builds: answered Ok)
//!   main  ------------------------------------------------->  VRs
//!  graph  <-------------------------------------------------  (demux,
//!            empty VR set (devices back: answered Ok)          schedulers)
//! ```
//!
//! The core's devices move between the two at a batch boundary: the main
//! [`GraphWorker`] is built once, at start (so that going back cannot
//! fail), and keeps its graph, its neighbours and its views of the main
//! FIB while the VRs have the devices; the main FIB thread is fed all the
//! while. Frames queued inside the side that hands over are dropped with
//! its batches (as with any graph replacement). A VR set that does not
//! build leaves the devices where they were and is answered with the
//! error. The per-core counters go on from each other's totals.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use io::IoError;
use pkt::Device;

use super::common::{LoopConfig, WorkerCounters};
use super::graph_engine::{GraphPort, GraphWorker};
use super::vr::{VrJob, VrWorker};

/// Runs `main` (the core's main graph, linked) or the VRs of `job` until
/// `stop`, switching as the commands of `job.cmds` say.
pub(super) fn serve<D: Device<Error = IoError>>(
    ports: &[GraphPort],
    mut main: GraphWorker<D>,
    job: VrJob,
    lc: LoopConfig,
    stop: &AtomicBool,
) -> Result<WorkerCounters, IoError> {
    let VrJob { vrs, cmds, core } = job;
    let mut vr: Option<VrWorker<D>> = None;
    if !vrs.is_empty() {
        let devs = main.take_devices();
        match VrWorker::new(ports, devs, lc, vrs, Arc::clone(&core)) {
            Ok(w) => vr = Some(w),
            Err((devs, _)) => {
                main.put_devices(devs);
                return Err(IoError::Config("the VRs' graphs do not build"));
            }
        }
    }
    loop {
        match vr.as_mut() {
            None => {
                let mut next = None;
                let asked = main.run_until(lc, stop, || match cmds.try_recv() {
                    Ok(c) => {
                        next = Some(c);
                        true
                    }
                    Err(_) => false,
                })?;
                if !asked {
                    return Ok(main.counters());
                }
                let Some(cmd) = next else { continue };
                if cmd.vrs.is_empty() {
                    // No VRs, and none before: nothing to do.
                    let _ = cmd.reply.send(Ok(()));
                    continue;
                }
                let devs = main.take_devices();
                match VrWorker::new(ports, devs, lc, cmd.vrs, Arc::clone(&core)) {
                    Ok(w) => {
                        vr = Some(w);
                        let _ = cmd.reply.send(Ok(()));
                    }
                    Err((devs, e)) => {
                        main.put_devices(devs);
                        let _ = cmd.reply.send(Err(e));
                    }
                }
            }
            Some(w) => {
                let Some(cmd) = w.run(lc, stop, &cmds, main.swaps())? else {
                    return Ok(w.counters());
                };
                // The last VR went: the devices go back to the main graph.
                let devs = w.take_devices();
                vr = None;
                main.put_devices(devs);
                let _ = cmd.reply.send(Ok(()));
            }
        }
    }
}
