//! The calling thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`, POSIX
//! `clock_gettime(2)`).
//!
//! Why a thread's CPU time and not the wall clock: on a shared machine a
//! thread the OS preempted has not done the work the wall clock charges
//! it for. The RIB's export pacer, the virtual-router schedulers and the
//! CPU-time benchmarks all read this one clock, so it lives here, in the
//! crate every other one depends on. `std` has no per-thread CPU clock,
//! and `cpu-time` (the maintained crate for it) would add a dependency
//! to the lowest crate for one system call.

use std::time::Duration;

/// CPU time the calling thread has used, or `None` where the OS has no
/// per-thread CPU clock (Linux always has one).
pub fn thread_cpu_time() -> Option<Duration> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given, which
    // lives for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(t.tv_sec).ok()?;
    let nanos = u32::try_from(t.tv_nsec).ok()?;
    Some(Duration::new(secs, nanos))
}

/// [`thread_cpu_time`] in nanoseconds, 0 without the clock (saturating
/// after 584 years): the form the virtual-router schedulers take as
/// their clock.
pub fn thread_cpu_ns() -> u64 {
    thread_cpu_time().map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_counts_this_threads_work_only() {
        let t0 = thread_cpu_time().expect("CLOCK_THREAD_CPUTIME_ID");
        // A sleeping thread uses no CPU: the clock barely moves.
        std::thread::sleep(Duration::from_millis(50));
        let t1 = thread_cpu_time().expect("CLOCK_THREAD_CPUTIME_ID");
        assert!(t1 >= t0);
        assert!(t1 - t0 < Duration::from_millis(40), "{:?}", t1 - t0);
        // Work moves it, and never backwards.
        let mut x = 0u64;
        while thread_cpu_time().expect("clock") - t1 < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let ns = thread_cpu_ns();
        assert!(ns >= u64::try_from((t1 + Duration::from_millis(5)).as_nanos()).unwrap_or(0));
        // Another thread's work is not ours.
        let before = thread_cpu_time().expect("clock");
        let other = std::thread::spawn(|| {
            let s = thread_cpu_time().expect("clock");
            let mut y = 0u64;
            while thread_cpu_time().expect("clock") - s < Duration::from_millis(20) {
                y = std::hint::black_box(y.wrapping_add(1));
            }
            y
        });
        let _ = other.join();
        let after = thread_cpu_time().expect("clock");
        assert!(
            after - before < Duration::from_millis(15),
            "{:?}",
            after - before
        );
        assert!(x > 0);
    }
}
