//! `--dut-cpus`: the DUT on CPUs of its own, the generator on the others.
//!
//! By default every process of a run (the DUT, the generator peers, the
//! monitor, the bench itself) shares every CPU, as on the 2-core machine
//! the scenarios were written for. On a larger machine that hides what a
//! daemon does with the cores it is given: the generator takes CPU from
//! it, and a daemon that sizes its thread pool by the CPUs it may use sees
//! them all. With `--dut-cpus LIST`, each DUT process is started with its
//! affinity set to LIST (`sched_setaffinity(2)` between fork and exec, so
//! its threads and children inherit it, and tesserad's default thread
//! count follows it), and the bench process, with its generator and
//! monitor threads, runs on the CPUs it was allowed that are not in LIST.
//! The kernel's own record of the DUT's mask (`Cpus_allowed_list` in
//! `/proc/PID/status`) is checked after every start.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// The most CPUs a list may name (`cpu_set_t` holds 1024).
const MAX_CPU: usize = 1024;

/// Parses a CPU list as `taskset -c` and the kernel write it: `0,1`,
/// `0-3,8`, `2-15`. Sorted, without repeats; never empty.
pub fn parse_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let num = |t: &str| -> Result<usize, String> {
            let n: usize = t
                .trim()
                .parse()
                .map_err(|_| format!("CPU list {s:?}: {t:?} is not a CPU number"))?;
            if n >= MAX_CPU {
                return Err(format!("CPU list {s:?}: CPU {n} is beyond {}", MAX_CPU - 1));
            }
            Ok(n)
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("CPU list {s:?}: range {part:?} runs backwards"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    // Every part added at least one CPU, so the list is never empty.
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The kernel's form of a sorted list (`Cpus_allowed_list`): ranges of
/// consecutive CPUs joined by commas, `0-1`, `0,2-3`.
pub fn format_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

fn to_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < MAX_CPU) {
        // SAFETY: `c` is below the set's size (1024 bits).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

/// The CPUs thread `tid` may run on (0: the calling thread).
fn affinity_of(tid: libc::pid_t) -> std::io::Result<Vec<usize>> {
    // SAFETY: as in `to_set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: every `c` is below the set's size (1024 bits).
    Ok((0..MAX_CPU)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

fn set_affinity(tid: libc::pid_t, cpus: &[usize]) -> std::io::Result<()> {
    let set = to_set(cpus);
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs this thread may run on now.
pub fn allowed() -> std::io::Result<Vec<usize>> {
    affinity_of(0)
}

/// Sets every thread of this process to `cpus` (threads made later
/// inherit it from the one that makes them).
fn set_process(cpus: &[usize]) -> std::io::Result<()> {
    for e in std::fs::read_dir("/proc/self/task")? {
        let tid: libc::pid_t = match e?.file_name().to_str().and_then(|s| s.parse().ok()) {
            Some(t) => t,
            None => continue,
        };
        match set_affinity(tid, cpus) {
            Ok(()) => {}
            // A thread that ended since the listing.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Where a run's processes go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Every DUT process.
    pub dut: Vec<usize>,
    /// The bench with its generator and monitor: the allowed CPUs not in
    /// `dut`. Empty when `dut` takes them all; then the bench shares them.
    pub generator: Vec<usize>,
    /// The mask the bench had before, restored by [`Placement::restore`].
    before: Vec<usize>,
}

impl Placement {
    /// Checks `dut` against the CPUs this process may use, and moves this
    /// process (the generator's side) to the rest.
    pub fn apply(dut: &[usize]) -> Result<Placement, String> {
        let before = allowed().map_err(|e| format!("sched_getaffinity: {e}"))?;
        if let Some(c) = dut.iter().find(|c| !before.contains(c)) {
            return Err(format!(
                "--dut-cpus: CPU {c} is not one this process may use ({})",
                format_list(&before)
            ));
        }
        let generator: Vec<usize> = before
            .iter()
            .copied()
            .filter(|c| !dut.contains(c))
            .collect();
        if !generator.is_empty() {
            set_process(&generator).map_err(|e| format!("sched_setaffinity: {e}"))?;
        }
        Ok(Placement {
            dut: dut.to_vec(),
            generator,
            before,
        })
    }

    /// Gives this process its former CPUs back.
    pub fn restore(&self) {
        if !self.generator.is_empty() {
            let _ = set_process(&self.before);
        }
    }

    /// For the report: `DUT CPUs: 0-1; the generator on 2-15`.
    pub fn describe(&self) -> String {
        if self.generator.is_empty() {
            format!(
                "DUT CPUs: {}; the generator shares them (no CPU left for it alone)",
                format_list(&self.dut)
            )
        } else {
            format!(
                "DUT CPUs: {}; the generator on {}",
                format_list(&self.dut),
                format_list(&self.generator)
            )
        }
    }
}

/// Makes `cmd`'s process start on `cpus` only.
pub fn pin_command(cmd: &mut Command, cpus: &[usize]) {
    let set = to_set(cpus);
    // SAFETY: the closure runs between fork and exec; it calls only
    // sched_setaffinity(2), a system call, on a set copied in before the
    // fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The kernel's `Cpus_allowed_list` of a process, as it stands now.
pub fn allowed_list_of(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_print_as_the_kernel_does() {
        assert_eq!(parse_list("0,1").unwrap(), vec![0, 1]);
        assert_eq!(parse_list("2-4,0").unwrap(), vec![0, 2, 3, 4]);
        assert_eq!(parse_list(" 3 , 3,1-2").unwrap(), vec![1, 2, 3]);
        assert_eq!(format_list(&[0, 1]), "0-1");
        assert_eq!(format_list(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(format_list(&[5]), "5");
        for s in ["0-1", "0,2-4,7", "5", "2-15"] {
            assert_eq!(format_list(&parse_list(s).unwrap()), s);
        }
    }

    #[test]
    fn bad_lists_say_what_is_wrong() {
        assert!(parse_list("").unwrap_err().contains("not a CPU number"));
        assert!(parse_list("3-1").unwrap_err().contains("backwards"));
        assert!(parse_list("a").unwrap_err().contains("not a CPU number"));
        assert!(parse_list("0,99999").unwrap_err().contains("beyond"));
    }

    /// A pinned child runs where it was put: the kernel's record of a
    /// `sleep` started through `pin_command` names the one CPU asked for.
    #[test]
    fn a_pinned_child_has_the_mask() {
        let mine = allowed().expect("affinity");
        let want = vec![*mine.last().expect("a CPU")];
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        pin_command(&mut cmd, &want);
        let mut child = cmd.spawn().expect("spawn sleep");
        let got = allowed_list_of(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(got.as_deref(), Some(format_list(&want).as_str()));
        // This process's own mask is untouched.
        assert_eq!(allowed().expect("affinity"), mine);
    }

    #[test]
    fn a_cpu_outside_the_mask_is_refused() {
        let err = Placement::apply(&[MAX_CPU - 1]).unwrap_err();
        assert!(err.contains("--dut-cpus: CPU 1023"), "{err}");
    }
}
