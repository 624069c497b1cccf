//! `src/gen/apipb.rs` is what tonic-build makes of `proto/*.proto` today:
//! it is checked in so that building tesserad needs no protoc, and this
//! test fails when the two drift apart. `TESSERA_REGEN_PROTO=1 cargo test
//! -p api --test generated` rewrites it. Needs protoc (Debian package
//! protobuf-compiler, which scripts/test installs).

use std::path::PathBuf;

#[test]
fn checked_in_code_matches_the_proto_files() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("tessera-apipb-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("temp dir");
    let r = tonic_build::configure()
        .build_client(true)
        .build_server(true)
        // The client and server need tonic, which only the `server`
        // feature brings (the fuzz targets build without it).
        .client_mod_attribute("apipb", "#[cfg(feature = \"server\")]")
        .server_mod_attribute("apipb", "#[cfg(feature = \"server\")]")
        .out_dir(&out)
        .compile_protos(
            &[
                root.join("proto/gobgp.proto"),
                root.join("proto/attribute.proto"),
            ],
            &[root.join("proto")],
        );
    let fresh = r.map(|()| std::fs::read_to_string(out.join("apipb.rs")));
    let _ = std::fs::remove_dir_all(&out);
    let fresh = fresh
        .expect("tonic-build (protoc from Debian's protobuf-compiler)")
        .expect("apipb.rs generated");
    let path = root.join("src/gen/apipb.rs");
    if std::env::var_os("TESSERA_REGEN_PROTO").is_some() {
        std::fs::write(&path, &fresh).expect("write src/gen/apipb.rs");
    }
    let checked_in = std::fs::read_to_string(&path).expect("src/gen/apipb.rs");
    assert!(
        checked_in == fresh,
        "src/gen/apipb.rs differs from what proto/ generates: run \
         TESSERA_REGEN_PROTO=1 cargo test -p api --test generated"
    );
}
