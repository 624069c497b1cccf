//! Generates the apipb messages and the GobgpApi server from our .proto
//! files with tonic-build; protoc comes from Debian's protobuf-compiler.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    tonic_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&["proto/gobgp.proto", "proto/attribute.proto"], &["proto"])?;
    Ok(())
}
