//! The Debian package (`scripts/deb`): built from the binaries under test,
//! installed with dpkg into a fresh root, its man pages render without a
//! groff warning, and the systemd unit's command lines (ExecStartPre, the
//! config check, then ExecStart) start tesserad from the installed files in
//! fresh mount and network namespaces, where `tessera show status` from
//! the package answers. Needs root (dpkg --root, unshare).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Removes the scratch directory, also when the test fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{cmd:?} failed:\n{out}");
    out
}

/// tesserad sits next to tessera in the target dir; else build it.
fn bin_dir() -> PathBuf {
    let tessera = PathBuf::from(env!("CARGO_BIN_EXE_tessera"));
    if !tessera.with_file_name("tesserad").exists() {
        run(Command::new(env!("CARGO")).args(["build", "-q", "-p", "tesserad"]));
    }
    tessera.parent().unwrap_or(Path::new(".")).to_path_buf()
}

/// The value of `key=` in the unit's [Service] section.
fn unit_line(unit: &str, key: &str) -> String {
    unit.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in the unit"))
        .to_string()
}

#[test]
fn deb_installs_and_its_unit_command_line_starts_tesserad() {
    let root = env!("CARGO_MANIFEST_DIR").to_string() + "/../..";
    let dir = std::env::temp_dir().join(format!("tessera-deb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _clean = Scratch(dir.clone());

    // Build.
    let out = run(Command::new(format!("{root}/scripts/deb"))
        .args(["--profile", "dev", "--bin-dir"])
        .arg(bin_dir())
        .arg("--out")
        .arg(&dir));
    // The path is the last line of stdout (dpkg-deb talks on stderr).
    let deb = PathBuf::from(
        out.lines()
            .rfind(|l| l.ends_with(".deb") && !l.contains(' '))
            .unwrap_or(""),
    );
    assert!(deb.exists(), "no package in:\n{out}");
    let info = run(Command::new("dpkg-deb").arg("--info").arg(&deb));
    for want in [
        "Package: tessera",
        "Architecture:",
        "Depends: libc6",
        "conffiles",
    ] {
        assert!(info.contains(want), "dpkg-deb --info lacks {want}:\n{info}");
    }

    // Install into a fresh root (its own dpkg database).
    let r = dir.join("root");
    for d in [
        "var/lib/dpkg/info",
        "var/lib/dpkg/updates",
        "var/lib/dpkg/triggers",
    ] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("var/lib/dpkg/status"), "").unwrap();
    run(Command::new("dpkg")
        .arg(format!("--root={}", r.display()))
        .args(["--force-script-chrootless", "--force-depends", "-i"])
        .arg(&deb));
    let status = run(Command::new("dpkg")
        .arg(format!("--root={}", r.display()))
        .args(["-s", "tessera"]));
    assert!(status.contains("Status: install ok installed"), "{status}");
    for f in [
        "usr/sbin/tesserad",
        "usr/bin/tessera",
        "lib/systemd/system/tesserad.service",
        "etc/tessera/tesserad.toml",
    ] {
        assert!(r.join(f).exists(), "{f} not installed");
    }

    // Every man page renders without a warning, and the three named in
    // the unit's Documentation= are there.
    let mut pages = 0;
    for sec in ["man1", "man5", "man8"] {
        for e in std::fs::read_dir(r.join("usr/share/man").join(sec)).unwrap() {
            let p = e.unwrap().path();
            let o = Command::new("sh")
                .arg("-c")
                .arg("zcat \"$0\" | groff -man -ww -z 2>&1")
                .arg(&p)
                .output()
                .unwrap();
            let warn = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success() && warn.trim().is_empty(),
                "{}: {warn}",
                p.display()
            );
            pages += 1;
        }
    }
    assert!(pages >= 3, "{pages} man pages");
    for p in [
        "man8/tesserad.8.gz",
        "man1/tessera.1.gz",
        "man5/tesserad.toml.5.gz",
    ] {
        assert!(r.join("usr/share/man").join(p).exists(), "no {p}");
    }
    let page5 = run(Command::new("sh")
        .arg("-c")
        .arg("zcat \"$0\"")
        .arg(r.join("usr/share/man/man5/tesserad.toml.5.gz")));
    assert!(page5.contains("syslog_socket") && page5.contains("remote_as"));

    // The unit's command lines, from the installed unit, with the
    // installed files: check the config, start, answer, stop.
    let unit = std::fs::read_to_string(r.join("lib/systemd/system/tesserad.service")).unwrap();
    let rs = r.display().to_string();
    let fix = |l: String| {
        l.replace("/usr/sbin/", &format!("{rs}/usr/sbin/"))
            .replace("/etc/tessera/", &format!("{rs}/etc/tessera/"))
    };
    let pre = fix(unit_line(&unit, "ExecStartPre"));
    let start = fix(unit_line(&unit, "ExecStart"));
    let script = format!(
        "set -e\n\
         mount -t tmpfs tmpfs /run\nmkdir -p /run/tessera\nip link set lo up\n\
         {pre}\n\
         {start} 2>{log} &\n\
         i=0; while [ ! -S /run/tessera/tesserad.sock ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n\
         {rs}/usr/bin/tessera show status\n\
         kill -TERM $!\nwait $! || true\n",
        log = dir.join("tesserad.err").display()
    );
    let out = run(Command::new("timeout")
        .args(["60", "unshare", "--mount", "--net", "--fork", "sh", "-c"])
        .arg(&script));
    assert!(
        out.contains("192.0.2.1"),
        "show status from the installed tessera lacks the router id:\n{out}\n{}",
        std::fs::read_to_string(dir.join("tesserad.err")).unwrap_or_default()
    );
}
