//! Build script: generates the Rust types of the OpenAPI v2 and v3 protobuf documents
//! (proto/openapiv2.proto, proto/openapiv3.proto) with prost-build. protoc comes from the
//! PROTOC environment variable (.cargo/config.toml points it at scripts/protoc).

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=proto/openapiv2.proto");
    println!("cargo:rerun-if-changed=proto/openapiv3.proto");
    prost_build::Config::new().compile_protos(
        &["proto/openapiv2.proto", "proto/openapiv3.proto"],
        &["proto"],
    )
}
