//! CPU time and memory of a local DUT, read from /proc (Linux): user +
//! system CPU seconds from `/proc/PID/stat` (fields 14 and 15, in clock
//! ticks) and the peak resident set size from `/proc/PID/status`
//! (`VmHWM`). Daemons that fork workers (OpenBGPD's session and route
//! engines, FRR's helpers) are covered by summing over the given PIDs
//! and all their descendants.

use std::fs;

/// One reading over a process tree.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ProcSample {
    /// utime + stime, seconds, summed over the processes.
    pub cpu_secs: f64,
    /// Sum of each process's VmHWM (an upper bound on the tree's peak).
    pub peak_rss_kib: u64,
    /// Sum of VmRSS now.
    pub rss_kib: u64,
    /// Processes read.
    pub processes: usize,
}

/// Clock ticks per second for /proc times (USER_HZ).
fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions; it only reads a constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// (ppid, utime + stime ticks) from a /proc/PID/stat line. The command
/// name (field 2) is in parentheses and may contain spaces or ')', so
/// fields are counted from the last ')'.
fn parse_stat(s: &str) -> Option<(u32, u64)> {
    let rest = s.get(s.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    let ppid = f.get(1)?.parse().ok()?;
    let ut: u64 = f.get(11)?.parse().ok()?;
    let st: u64 = f.get(12)?.parse().ok()?;
    Some((ppid, ut + st))
}

/// A `Vm...:   1234 kB` value from /proc/PID/status.
fn status_kib(s: &str, key: &str) -> Option<u64> {
    let line = s.lines().find(|l| l.starts_with(key))?;
    line.get(key.len()..)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `roots` and every process descending from one of them.
pub fn process_tree(roots: &[u32]) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    if let Ok(rd) = fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, _)) = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .as_deref()
                .and_then(parse_stat)
            {
                parent.push((pid, ppid));
            }
        }
    }
    let mut out: Vec<u32> = roots.to_vec();
    let mut k = 0;
    while let Some(&p) = out.get(k) {
        for &(c, pp) in &parent {
            if pp == p && !out.contains(&c) {
                out.push(c);
            }
        }
        k += 1;
    }
    out
}

/// Reads the tree under `roots`; `None` if no process could be read.
pub fn sample(roots: &[u32]) -> Option<ProcSample> {
    let hz = clock_ticks();
    let mut s = ProcSample::default();
    for pid in process_tree(roots) {
        let Some((_, ticks)) = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .as_deref()
            .and_then(parse_stat)
        else {
            continue;
        };
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        s.cpu_secs += ticks as f64 / hz;
        s.peak_rss_kib += status_kib(&status, "VmHWM:").unwrap_or(0);
        s.rss_kib += status_kib(&status, "VmRSS:").unwrap_or(0);
        s.processes += 1;
    }
    (s.processes > 0).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "1234 (bgpd: a) b) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 100 1000 200";
        assert_eq!(parse_stat(line), Some((1, 300)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S"), None);
        let st = "Name:\tbird\nVmHWM:\t   92160 kB\nVmRSS:\t  81920 kB\n";
        assert_eq!(status_kib(st, "VmHWM:"), Some(92160));
        assert_eq!(status_kib(st, "VmSwap:"), None);
    }

    #[test]
    fn this_process_is_readable() {
        let me = std::process::id();
        let s = sample(&[me]).expect("own /proc entry");
        assert!(s.processes >= 1);
        assert!(s.peak_rss_kib > 0 && s.peak_rss_kib >= s.rss_kib / 2);
        // Burn 150 ms of this thread's CPU time (not of wall time: a
        // thread preempted on a loaded machine gets a fraction of it) and
        // see the counter move; the wall bound only stops a runaway loop.
        let cpu0 = base::thread_cpu_time().expect("CLOCK_THREAD_CPUTIME_ID");
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while base::thread_cpu_time().expect("clock") - cpu0 < std::time::Duration::from_millis(150)
            && t0.elapsed() < std::time::Duration::from_secs(60)
        {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        std::hint::black_box(x);
        let s2 = sample(&[me]).expect("own /proc entry");
        assert!(s2.cpu_secs > s.cpu_secs, "{s:?} -> {s2:?}");
        assert!(sample(&[u32::MAX]).is_none());
    }
}
