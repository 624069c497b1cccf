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

/// A cheap estimate of [`thread_cpu_ns`] for callers that read the
/// clock per decision (the virtual-router schedulers): most readings are
/// a cycle counter ([`cycles_ns`]: `rdtsc` on x86-64 with an invariant
/// TSC, calibrated to nanoseconds once per process), not a system call.
///
/// The estimate is re-anchored on the thread's CPU clock (one
/// `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`) on the first reading, every
/// `sync_every` readings, and on any reading that comes more than
/// [`ThreadCpuClock::GAP_NS`] after the previous one. Such a gap is where
/// the thread may have been preempted (a time slice, a CFS bandwidth
/// throttle): that reading advances by the CPU time the thread actually
/// used since the last anchor, so the time another process took is
/// charged to nobody, as with [`thread_cpu_ns`]. Between anchors the
/// estimate advances by the cycle counter; a gap shorter than `GAP_NS`
/// is counted as CPU time even if the thread was off its CPU (at most
/// `GAP_NS` per reading). At an anchor the estimate never goes back: if
/// it ran ahead of the CPU clock, it holds until the CPU clock catches
/// up (at most one interval's calibration error plus short gaps).
///
/// Read it on one thread only (the thread whose CPU time it estimates):
/// the first reading anchors it, so it may be created on another.
/// Never goes back. Not `Sync` (interior state in `Cell`s).
pub struct ThreadCpuClock {
    sync_every: u32,
    /// Readings left before the next anchor (0: anchor on the next).
    left: std::cell::Cell<u32>,
    /// The thread's CPU clock at the last anchor.
    cpu0: std::cell::Cell<u64>,
    /// The estimate at the last anchor.
    base: std::cell::Cell<u64>,
    /// [`cycles_ns`] at the last anchor and at the last reading.
    t0: std::cell::Cell<u64>,
    prev: std::cell::Cell<u64>,
    /// The last value returned.
    last: std::cell::Cell<u64>,
    /// Anchors taken (system calls), for tests and counters.
    anchors: std::cell::Cell<u64>,
}

impl ThreadCpuClock {
    /// A reading this long after the previous one (cycle counter) is
    /// anchored on the CPU clock: the thread may have been preempted.
    pub const GAP_NS: u64 = 20_000;

    /// A clock anchored on the CPU clock every `sync_every` readings
    /// (at least 1: every reading, the plain CPU clock).
    pub fn new(sync_every: u32) -> Self {
        // Calibrate here, not on the first reading (a hot path).
        let _ = cycles_ns();
        ThreadCpuClock {
            sync_every: sync_every.max(1),
            left: std::cell::Cell::new(0),
            cpu0: std::cell::Cell::new(0),
            base: std::cell::Cell::new(0),
            t0: std::cell::Cell::new(0),
            prev: std::cell::Cell::new(0),
            last: std::cell::Cell::new(0),
            anchors: std::cell::Cell::new(0),
        }
    }

    /// The estimate of this thread's CPU time, nanoseconds.
    pub fn now_ns(&self) -> u64 {
        let t = cycles_ns();
        let gap = t.saturating_sub(self.prev.get());
        self.prev.set(t);
        let left = self.left.get();
        let v = if left == 0 || gap > Self::GAP_NS {
            let cpu = thread_cpu_ns();
            let v = if self.anchors.get() == 0 {
                cpu
            } else {
                // The CPU time used since the last anchor, on top of the
                // estimate there; never back.
                (self.base.get() + cpu.saturating_sub(self.cpu0.get())).max(self.last.get())
            };
            self.anchors.set(self.anchors.get() + 1);
            self.cpu0.set(cpu);
            self.base.set(v);
            self.t0.set(t);
            self.left.set(self.sync_every - 1);
            v
        } else {
            self.left.set(left - 1);
            (self.base.get() + t.saturating_sub(self.t0.get())).max(self.last.get())
        };
        self.last.set(v);
        v
    }

    /// Anchors taken so far (each one a CPU-clock system call).
    pub fn anchors(&self) -> u64 {
        self.anchors.get()
    }
}

/// Nanoseconds of a cheap monotonic counter since an arbitrary origin:
/// the TSC (`rdtsc`) on x86-64 when the CPU reports an invariant TSC
/// (CPUID 0x8000_0007 EDX bit 8; it then ticks at a constant rate in
/// every power state), scaled by a factor measured once per process
/// against [`std::time::Instant`] (a 2 ms spin on the first call);
/// elsewhere, and without an invariant TSC, `Instant` itself (a vDSO
/// read on Linux, no system call). Wall time: it runs on while the
/// thread is preempted (see [`ThreadCpuClock`]).
pub fn cycles_ns() -> u64 {
    let c = calibration();
    match c.tsc_mult {
        Some(mult) => {
            let ticks = rdtsc().wrapping_sub(c.tsc0);
            u64::try_from((u128::from(ticks) * u128::from(mult)) >> 32).unwrap_or(u64::MAX)
        }
        None => u64::try_from(c.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX),
    }
}

struct Calibration {
    epoch: std::time::Instant,
    tsc0: u64,
    /// Nanoseconds per TSC tick, as a 32.32 fixed-point number; `None`:
    /// no usable TSC, `Instant` instead.
    tsc_mult: Option<u64>,
}

fn calibration() -> &'static Calibration {
    static CAL: std::sync::OnceLock<Calibration> = std::sync::OnceLock::new();
    CAL.get_or_init(|| {
        let epoch = std::time::Instant::now();
        let tsc_mult = if invariant_tsc() {
            let i0 = std::time::Instant::now();
            let c0 = rdtsc();
            while i0.elapsed() < Duration::from_millis(2) {
                std::hint::spin_loop();
            }
            let ns = i0.elapsed().as_nanos();
            let ticks = u128::from(rdtsc().wrapping_sub(c0));
            (ns << 32)
                .checked_div(ticks)
                .and_then(|m| u64::try_from(m).ok())
                .filter(|&m| m > 0)
        } else {
            None
        };
        Calibration {
            epoch,
            tsc0: rdtsc(),
            tsc_mult,
        }
    })
}

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC reads a counter; no memory is touched (x86-64 always
    // has it).
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    // SAFETY: CPUID is always available on x86-64; leaf 0x8000_0000
    // says how far the extended leaves go.
    #[allow(unused_unsafe)]
    let (max, edx) = unsafe {
        let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
        let edx = if max >= 0x8000_0007 {
            core::arch::x86_64::__cpuid(0x8000_0007).edx
        } else {
            0
        };
        (max, edx)
    };
    max >= 0x8000_0007 && edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
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
    #[test]
    fn cycles_ns_follows_the_wall_clock() {
        // The first call calibrates (a 2 ms spin): not in the measurement.
        let _ = cycles_ns();
        // Within 5 % of the wall clock over 30 ms in one of five tries
        // (a preemption between the two clocks' readings can spoil one
        // try on a loaded machine; a wrong calibration spoils all).
        let mut seen = Vec::new();
        for _ in 0..5 {
            let c0 = cycles_ns();
            let i0 = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(30));
            let wall = i0.elapsed().as_nanos() as f64;
            let d = cycles_ns().saturating_sub(c0) as f64;
            if d > wall * 0.95 && d < wall * 1.05 {
                return;
            }
            seen.push((d, wall));
        }
        panic!("cycles_ns against the wall clock (ns): {seen:?}");
    }

    #[test]
    fn thread_cpu_clock_tracks_the_cpu_clock_with_few_system_calls() {
        let c = ThreadCpuClock::new(64);
        let first = c.now_ns();
        let cpu_first = thread_cpu_ns();
        // The first reading is an anchor on this thread's CPU clock.
        assert_eq!(c.anchors(), 1);
        assert!(first <= cpu_first, "{first} > {cpu_first}");
        // Busy readings, as a scheduler's: few anchors, never back.
        let mut last = first;
        let n = 64 * 200;
        let mut x = 0u64;
        for _ in 0..n {
            for _ in 0..50 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let v = c.now_ns();
            assert!(v >= last);
            last = v;
        }
        let cpu_end = thread_cpu_ns();
        // One anchor per 64 readings, plus those after a gap (a
        // preemption of this test thread): far fewer than readings.
        assert!(c.anchors() <= 1 + n / 64 + n / 8, "{} anchors", c.anchors());
        // The estimate's advance is the CPU clock's, within 10 % + 2 GAPs.
        let est = (last - first) as f64;
        let cpu = (cpu_end - cpu_first) as f64;
        let slack = 2.0 * ThreadCpuClock::GAP_NS as f64;
        assert!(
            est <= cpu * 1.1 + slack && est >= cpu * 0.9 - slack,
            "{est} ns against {cpu} ns"
        );
        assert!(x > 0);
    }

    #[test]
    fn thread_cpu_clock_does_not_count_a_sleep() {
        // A sleep is a gap: the reading after it is anchored, and the
        // time off the CPU is charged to nobody.
        let c = ThreadCpuClock::new(1_000_000);
        let _ = c.now_ns();
        let before = c.now_ns();
        // The second reading may itself anchor if this thread was
        // preempted between the two (a loaded CI machine): count only
        // the anchors the sleep adds.
        let anchors_before = c.anchors();
        std::thread::sleep(Duration::from_millis(50));
        let after = c.now_ns();
        assert_eq!(
            c.anchors(),
            anchors_before + 1,
            "the reading after the sleep anchors"
        );
        assert!(
            after - before < 10_000_000,
            "{} ns charged for a sleep",
            after - before
        );
        // With no anchor on gaps (the cycle counter alone), the sleep
        // would count: this is what the anchor prevents.
        let w0 = cycles_ns();
        std::thread::sleep(Duration::from_millis(50));
        assert!(cycles_ns() - w0 >= 45_000_000);
    }

    #[test]
    fn thread_cpu_clock_with_sync_every_one_is_the_cpu_clock() {
        let c = ThreadCpuClock::new(0);
        for _ in 0..100 {
            let v = c.now_ns();
            let cpu = thread_cpu_ns();
            assert!(v <= cpu);
        }
        assert_eq!(c.anchors(), 100);
    }
}
