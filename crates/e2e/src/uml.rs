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

impl Guest {
    /// Boots a guest in namespace `ns` on tap `tap` (which must exist
    /// there: `ip tuntap add TAP mode tap`), its interface named `vec0`,
    /// and runs `script` (sh) as its init after a preamble (`PATH`,
    /// `/proc`, `/sys`, the module loader, `lo` up). The guest powers off
    /// when the script ends. `dir` is the test's work directory (the
    /// script, the module wrapper, UML's own files and `log` go there).
    pub fn boot(ns: &str, tap: &str, dir: &Path, script: &str, log: &str) -> Guest {
        let ver = modules_version();
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
                "#!/bin/sh\nexec /usr/sbin/modprobe -d {} \"$@\"\n",
                root.display()
            ),
        )
        .expect("modprobe wrapper");
        let init = dir.join("uml-init.sh");
        std::fs::write(
            &init,
            format!(
                "#!/bin/sh\nexport PATH=/usr/sbin:/usr/bin:/sbin:/bin\n\
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
        let child = Command::new("ip")
            .args(["netns", "exec", ns, KERNEL])
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
            .process_group(0)
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
