//! `src/gen/apipb.rs` is what tonic-build makes of `proto/*.proto`. It is
//! checked in, so that building tesserad needs no protoc, and its first
//! line is a stamp: a hash of the `.proto` files it was made from and a
//! hash of the code below the stamp.
//!
//! - `stamp_matches_the_proto_files_and_the_code` (always runs) fails when
//!   a `.proto` file changed without regenerating, or when the generated
//!   code was edited by hand.
//! - `checked_in_code_matches_the_proto_files` (feature `regen`) runs
//!   tonic-build itself and compares; with `TESSERA_REGEN_PROTO=1` it
//!   rewrites the file and its stamp:
//!   `TESSERA_REGEN_PROTO=1 cargo test -p api --features regen --test generated`
//!   (needs protoc: Debian's protobuf-compiler, which scripts/test installs).
//!
//! The suite runs the stamp check only: tonic-build and what it brings
//! (prost-build, prettyplease, petgraph and a second build of syn) cost
//! about 80 CPU-s of a cold build for a check that the stamp makes.

use std::path::PathBuf;

const PROTOS: [&str; 2] = ["proto/gobgp.proto", "proto/attribute.proto"];
const STAMP: &str = "// tessera-stamp: proto ";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// FNV-1a, 64 bits: stable across Rust releases (std's hasher is not
/// promised to be), and enough to notice a change; nothing adversarial.
fn fnv64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in p.iter().chain(&[0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn protos_hash() -> u64 {
    let files: Vec<Vec<u8>> = PROTOS
        .iter()
        .map(|p| std::fs::read(root().join(p)).expect("a .proto file"))
        .collect();
    let parts: Vec<&[u8]> = files.iter().map(Vec::as_slice).collect();
    fnv64(&parts)
}

/// The stamp line for `body` (the generated code) made from today's
/// `.proto` files.
fn stamp(body: &str) -> String {
    format!(
        "{STAMP}{:016x}, code {:016x}; regenerate with TESSERA_REGEN_PROTO=1 cargo test -p api --features regen --test generated\n",
        protos_hash(),
        fnv64(&[body.as_bytes()])
    )
}

fn checked_in() -> (String, String) {
    let path = root().join("src/gen/apipb.rs");
    let text = std::fs::read_to_string(&path).expect("src/gen/apipb.rs");
    match text.split_once('\n') {
        Some((first, body)) if first.starts_with(STAMP) => (format!("{first}\n"), body.to_string()),
        _ => (String::new(), text),
    }
}

#[test]
fn stamp_matches_the_proto_files_and_the_code() {
    if std::env::var_os("TESSERA_REGEN_PROTO").is_some() {
        // The other test is rewriting the file beside this one; a second
        // run without the variable checks what it wrote.
        eprintln!("TESSERA_REGEN_PROTO is set: the stamp is checked on the next run");
        return;
    }
    let (line, body) = checked_in();
    assert!(
        !line.is_empty(),
        "src/gen/apipb.rs has no stamp line: run TESSERA_REGEN_PROTO=1 cargo test -p api --features regen --test generated"
    );
    assert_eq!(
        line,
        stamp(&body),
        "proto/ changed since src/gen/apipb.rs was generated, or the generated code was edited: \
         run TESSERA_REGEN_PROTO=1 cargo test -p api --features regen --test generated"
    );
}

#[test]
fn the_stamp_notices_a_one_byte_change() {
    let (_, body) = checked_in();
    let mut edited = body.clone().into_bytes();
    let i = edited.len() / 2;
    edited[i] ^= 1;
    let edited = String::from_utf8_lossy(&edited).into_owned();
    assert_ne!(stamp(&body), stamp(&edited));
    // Moving a byte from one .proto file to the next changes the hash too.
    assert_ne!(fnv64(&[b"ab", b"c"]), fnv64(&[b"a", b"bc"]));
}

#[cfg(feature = "regen")]
#[test]
fn checked_in_code_matches_the_proto_files() {
    let out = std::env::temp_dir().join(format!("tessera-apipb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("temp dir");
    let protos: Vec<PathBuf> = PROTOS.iter().map(|p| root().join(p)).collect();
    let r = tonic_build::configure()
        .build_client(true)
        .build_server(true)
        // The client and server need tonic, which only the `server`
        // feature brings (the fuzz targets build without it).
        .client_mod_attribute("apipb", "#[cfg(feature = \"server\")]")
        .server_mod_attribute("apipb", "#[cfg(feature = \"server\")]")
        .out_dir(&out)
        .compile_protos(&protos, &[root().join("proto")]);
    let fresh = r.map(|()| std::fs::read_to_string(out.join("apipb.rs")));
    let _ = std::fs::remove_dir_all(&out);
    let body = fresh
        .expect("tonic-build (protoc from Debian's protobuf-compiler)")
        .expect("apipb.rs generated");
    let fresh = format!("{}{body}", stamp(&body));
    let path = root().join("src/gen/apipb.rs");
    if std::env::var_os("TESSERA_REGEN_PROTO").is_some() {
        std::fs::write(&path, &fresh).expect("write src/gen/apipb.rs");
    }
    let checked_in = std::fs::read_to_string(&path).expect("src/gen/apipb.rs");
    assert!(
        checked_in == fresh,
        "src/gen/apipb.rs differs from what proto/ generates: run \
         TESSERA_REGEN_PROTO=1 cargo test -p api --features regen --test generated"
    );
}
