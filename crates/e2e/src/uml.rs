//! A Linux kernel as a test peer, where the test machine's own kernel
//! lacks a feature: a User-mode Linux guest (Debian's `user-mode-linux`,
//! `linux.uml`) whose one interface is a tap device in a namespace of the
//! test.
//!
//! Why: the 2-vCPU test VM's kernel is built without modules and without
//! ESP or GCM, so the kernel's XFRM cannot be tested against there. The
//! UML kernel is an ordinary Linux kernel (Debian builds ESP, GCM and
//! XFRM as modules) running as a process: what it does on the wire is the
//! kernel's own code, no mock.
//!
//! The guest's root is the host's `/`, read-only (`hostfs`), so its init
//! script runs the host's `sh`, `ip` and `ping`. Its modules load on
//! demand from `/usr/lib/uml/modules/<version>` through a `modprobe -d`
//! wrapper in the work directory (the host has no `/lib/modules` for the
//! guest's version). The guest's console goes to a log file. Dropping the
//! [`Guest`] stops it (SIGTERM, which UML turns into a clean halt, then
//! SIGKILL to its process group, which also reaches its helper
//! processes), also when a test fails.
//!
//! On hosts whose XSAVE area is larger than Debian's UML 6.1 knows (CPUs
//! with AVX-512, protection keys or AMX), UML cannot set a guest process's
//! FPU state through ptrace and every guest process dies at once. There
//! the guest runs under a seccomp filter that makes UML fall back to the
//! FXSAVE area, and with glibc's AVX code paths turned off inside it
//! ([`Guest::boot`]; measured on an Intel Xeon with AMX).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The UML kernel binary (Debian package `user-mode-linux`).
pub const KERNEL: &str = "linux.uml";
/// Where the package keeps the guest's modules, one directory per version.
pub const MODULES: &str = "/usr/lib/uml/modules";
/// What the guest's console shows when the caller's script has ended.
pub const SCRIPT_ENDED: &str = "guest: script ended";

/// A running UML guest.
pub struct Guest {
    child: Child,
    log: PathBuf,
    /// The guest's process group (its pid): UML's helper processes are
    /// in it too.
    pgid: i32,
}

/// Makes sure `/dev/net/tun` exists (a minimal `/dev` may lack the node
/// although the kernel has TUN/TAP): `ip tuntap add` and the guest's tap
/// open it.
pub fn ensure_tun() {
    let p = Path::new("/dev/net/tun");
    if p.exists() {
        return;
    }
    let _ = std::fs::create_dir_all("/dev/net");
    let ok = Command::new("mknod")
        .args(["/dev/net/tun", "c", "10", "200"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok && p.exists(),
        "no /dev/net/tun and mknod could not make it"
    );
}

/// The guest's kernel version: the one directory under [`MODULES`].
fn modules_version() -> String {
    let mut v: Vec<String> = std::fs::read_dir(MODULES)
        .unwrap_or_else(|e| panic!("{MODULES}: {e} (Debian package user-mode-linux)"))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v.pop()
        .unwrap_or_else(|| panic!("no module directory under {MODULES}"))
}

/// Bytes of the FPU state Debian's UML (6.1) hands to the host kernel:
/// `struct _xstate` (the 512-byte legacy area, the 64-byte XSAVE header
/// and the 256 bytes of AVX's upper halves).
const UML_XSTATE: u32 = 832;

/// Whether this CPU's XSAVE area (CPUID leaf 0xD, sub-leaf 0, EBX: the
/// size for the features enabled in XCR0) is larger than what UML 6.1
/// knows. UML saves and restores each guest process's FPU state with
/// `PTRACE_GETREGSET`/`PTRACE_SETREGSET` of `NT_X86_XSTATE` and an
/// 832-byte buffer, but the host kernel takes a set only with a buffer of
/// its whole XSAVE size. Where the CPU has AVX-512, protection keys or AMX
/// (an Intel Xeon with AMX: 11,008 bytes), every guest process dies at its
/// first switch ("ptrace set fp regs failed, errno = 14", then "Attempted
/// to kill init"), and the guest never runs its script.
fn xstate_larger_than_uml_knows() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        #[allow(unused_unsafe)]
        // SAFETY: CPUID exists on every x86-64 CPU.
        let r = unsafe { std::arch::x86_64::__cpuid_count(0xd, 0) };
        r.ebx > UML_XSTATE
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A seccomp filter for the UML process and its children: `ptrace`'s
/// `PTRACE_GETREGSET` and `PTRACE_SETREGSET` of `NT_X86_XSTATE` fail with
/// EIO, everything else is allowed. UML probes XSAVE support once at boot
/// with such a `PTRACE_GETREGSET`; when it fails, UML uses
/// `PTRACE_GETFPREGS`/`PTRACE_SETFPREGS` (the 512-byte FXSAVE area, the
/// same on every host) instead. The guest's syscalls are emulated by UML
/// (`PTRACE_SYSEMU` skips seccomp), so only UML's own calls are filtered.
fn no_xstate_regset_filter() -> Vec<libc::sock_filter> {
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const PTRACE_GETREGSET: u32 = 0x4204;
    const PTRACE_SETREGSET: u32 = 0x4205;
    const NT_X86_XSTATE: u32 = 0x202;
    // Offsets in `struct seccomp_data`: nr, arch, then args[] from 16
    // (low words first on little-endian x86-64).
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const ARG0: u32 = 16;
    const ARG2: u32 = 32;
    let ld = |k: u32| libc::sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let ret = |k: u32| libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    // Jumps count the instructions skipped after the jump itself.
    vec![
        ld(ARCH),                                        // 0
        jeq(AUDIT_ARCH_X86_64, 0, 8),                    // 1: else allow
        ld(NR),                                          // 2
        jeq(libc::SYS_ptrace as u32, 0, 6),              // 3: else allow
        ld(ARG0),                                        // 4
        jeq(PTRACE_GETREGSET, 1, 0),                     // 5: to 7
        jeq(PTRACE_SETREGSET, 0, 3),                     // 6: else allow
        ld(ARG2),                                        // 7
        jeq(NT_X86_XSTATE, 0, 1),                        // 8: else allow
        ret(libc::SECCOMP_RET_ERRNO | libc::EIO as u32), // 9
        ret(libc::SECCOMP_RET_ALLOW),                    // 10
    ]
}

impl Guest {
    /// Boots a guest in namespace `ns` on tap `tap` (which must exist
    /// there: `ip tuntap add TAP mode tap`), its interface named `vec0`,
    /// and runs `script` (sh) as its init after a preamble (`PATH`,
    /// `/proc`, `/sys`, the module loader, `lo` up). The guest powers off
    /// when the script ends. `dir` is the test's work directory (the
    /// script, the module wrapper, UML's own files and `log` go there).
    pub fn boot(ns: &str, tap: &str, dir: &Path, script: &str, log: &str) -> Guest {
        let ver = modules_version();
        let fxsave_only = xstate_larger_than_uml_knows();
        // Only the FXSAVE area (x87, SSE) is saved and restored then (see
        // `no_xstate_regset_filter`), and glibc's AVX and AVX-512 string
        // functions misbehave in the guest: with the filter alone, `ip`
        // printed "%s%s%s" and misparsed `dir in`. So they are turned off
        // there. Its init and the module loader (which the guest kernel
        // starts with an environment of its own) both set this.
        let tunables = if fxsave_only {
            "export GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX,-AVX2,-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX_VNNI,-EVEX,-FMA,-FMA4,-XSAVE,-XSAVEC\n"
        } else {
            ""
        };
        let root = dir.join("uml-modroot");
        let libmod = root.join("lib/modules");
        std::fs::create_dir_all(&libmod).expect("module root");
        let link = libmod.join(&ver);
        if !link.exists() {
            std::os::unix::fs::symlink(Path::new(MODULES).join(&ver), &link).expect("module link");
        }
        let wrapper = dir.join("uml-modprobe");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\n{tunables}exec /usr/sbin/modprobe -d {} \"$@\"\n",
                root.display()
            ),
        )
        .expect("modprobe wrapper");
        let init = dir.join("uml-init.sh");
        std::fs::write(
            &init,
            format!(
                "#!/bin/sh\nexport PATH=/usr/sbin:/usr/bin:/sbin:/bin\n{tunables}\
                 mount -t proc proc /proc\nmount -t sysfs sys /sys\n\
                 echo {} > /proc/sys/kernel/modprobe\nip link set lo up\n\
                 {script}\n\
                 echo '{SCRIPT_ENDED}'\n\
                 poweroff -f 2>/dev/null || halt -f 2>/dev/null || echo o > /proc/sysrq-trigger\n",
                wrapper.display()
            ),
        )
        .expect("guest init");
        for f in [&wrapper, &init] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755))
                .unwrap_or_else(|e| panic!("chmod {}: {e}", f.display()));
        }
        let uml_dir = dir.join("uml-dir");
        std::fs::create_dir_all(&uml_dir).expect("uml dir");
        let log = dir.join(log);
        let out = std::fs::File::create(&log).expect("guest log");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns, KERNEL])
            .args([
                "mem=160M".to_string(),
                "root=/dev/root".to_string(),
                "rootfstype=hostfs".to_string(),
                "rootflags=/".to_string(),
                "ro".to_string(),
                format!("init={}", init.display()),
                "con=null".to_string(),
                "con0=fd:0,fd:1".to_string(),
                "umid=tessera-test".to_string(),
                format!("uml_dir={}", uml_dir.display()),
                format!("vec0:transport=tap,ifname={tap}"),
            ])
            .env("TMPDIR", dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .process_group(0);
        if fxsave_only {
            let filter = no_xstate_regset_filter();
            // SAFETY: between fork and exec the closure only makes two
            // prctl calls on memory it owns (`filter`, moved in).
            unsafe {
                cmd.pre_exec(move || {
                    let prog = libc::sock_fprog {
                        len: filter.len() as u16,
                        filter: filter.as_ptr().cast_mut(),
                    };
                    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                        || libc::prctl(
                            libc::PR_SET_SECCOMP,
                            libc::SECCOMP_MODE_FILTER,
                            &prog as *const libc::sock_fprog,
                        ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{KERNEL}: {e} (Debian package user-mode-linux)"));
        let pgid = child.id() as i32;
        Guest { child, log, pgid }
    }

    /// The guest's console so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (bounded) until the console shows `what`; fails the test
    /// with the console otherwise, at once when the guest's script has
    /// ended without it.
    pub fn wait_log(&self, what: &str, secs: u64) {
        crate::wait_until(
            Duration::from_secs(secs),
            &format!("`{what}` on the UML guest's console"),
            || self.log(),
            || {
                let log = self.log();
                if log.contains(what) {
                    return Ok(Some(()));
                }
                if log.contains(SCRIPT_ENDED) {
                    panic!("the UML guest's script ended before `{what}`:\n{log}");
                }
                Ok(None)
            },
        )
    }

    /// Waits (bounded) for the guest to power off; whether it did.
    pub fn wait_exit(&mut self, secs: u64) -> bool {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            // SAFETY: kill has no memory preconditions.
            unsafe { libc::kill(self.pgid, libc::SIGTERM) };
            if !self.wait_exit(10) {
                // SAFETY: as above.
                unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
                let _ = self.child.wait();
            }
        }
        // Helper processes that outlived the halt; after a clean halt they
        // left with it and the group kill finds nothing (ESRCH).
        // SAFETY: as above.
        unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
    }
}
