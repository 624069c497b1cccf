//! Running `tshark` on a pcap and reading selected fields back, so tests
//! can compare a third-party dissector's view with what we encoded.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Separator between repeated occurrences of a field in one frame.
pub const AGG: char = '|';

/// Returns true when tshark can run. When it cannot, prints why and returns
/// false, unless `TESSERA_REQUIRE_TOOLS=1`, in which case it panics.
pub fn available() -> bool {
    let ok = Command::new("tshark")
        .arg("-v")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        let msg =
            "tshark not found or not runnable: skipping this test (install the `tshark` package)";
        if std::env::var("TESSERA_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("{msg}; TESSERA_REQUIRE_TOOLS=1 makes this a failure");
        }
        // Written to the stderr handle directly: libtest captures only the
        // print macros, and a skip must be visible in a passing run.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {msg}");
    }
    ok
}

/// A scratch pcap path unique to this process and `tag`.
pub fn temp_pcap(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tessera-{tag}-{}.pcap", std::process::id()))
}

/// Common options: no name resolution; no TCP sequence analysis (the brief
/// asks for it off: our captures have no retransmissions to find); verify
/// IPv4 and TCP checksums so a bad one shows up as an expert error.
fn base_args(pcap: &Path) -> Vec<String> {
    [
        "-n",
        "-r",
        pcap.to_str().expect("utf-8 temp path"),
        "-o",
        "tcp.analyze_sequence_numbers:FALSE",
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run(args: &[String]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("tshark output is UTF-8")
}

/// One row per frame matching `filter`; one column per field; each column
/// split into its occurrences in frame order (empty when absent).
pub fn fields(pcap: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<Vec<String>>> {
    let mut args = base_args(pcap);
    args.extend(
        [
            "-Y",
            filter,
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "occurrence=a",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    args.push("-E".into());
    args.push(format!("aggregator={AGG}"));
    for f in fields {
        args.push("-e".into());
        args.push((*f).to_string());
    }
    run(&args)
        .lines()
        .map(|line| {
            let mut cols: Vec<Vec<String>> = line
                .split('\t')
                .map(|c| {
                    if c.is_empty() {
                        Vec::new()
                    } else {
                        c.split(AGG).map(str::to_string).collect()
                    }
                })
                .collect();
            cols.resize(fields.len(), Vec::new());
            cols
        })
        .collect()
}

/// Frames tshark flags as malformed or with an expert item of severity
/// "error" (bad checksums, bad lengths, ...): `(frame number, summary)`.
pub fn problems(pcap: &Path) -> Vec<String> {
    let mut args = base_args(pcap);
    args.extend(
        [
            "-Y",
            "_ws.malformed || _ws.expert.severity == \"Error\"",
            "-T",
            "fields",
            "-e",
            "frame.number",
            "-e",
            "_ws.expert.message",
            "-e",
            "_ws.col.Info",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    run(&args).lines().map(str::to_string).collect()
}

/// Number of frames in the capture, as tshark counts them.
pub fn frame_count(pcap: &Path) -> usize {
    let mut args = base_args(pcap);
    args.extend(
        ["-T", "fields", "-e", "frame.number"]
            .iter()
            .map(|s| s.to_string()),
    );
    run(&args).lines().count()
}
