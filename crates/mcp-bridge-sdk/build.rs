//! Generates the gRPC code of Google's MCP proto (proto/) when the `grpc`
//! feature is on, with protox (no protoc needed), and keeps the compiled
//! descriptors for the service's reflection and the proto's tests.

fn main() {
    println!("cargo:rerun-if-changed=proto");
    #[cfg(feature = "grpc")]
    if let Err(error) = grpc() {
        // A build script reports its failure by panicking; the message is the proto's error.
        panic!("proto/: {error}");
    }
}

#[cfg(feature = "grpc")]
fn grpc() -> Result<(), Box<dyn std::error::Error>> {
    use protox::prost::Message;

    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = protox::compile(["proto/mcp.proto"], ["proto"])?;
    std::fs::write(out.join("mcp_descriptors.bin"), descriptors.encode_to_vec())?;
    // Sorted maps: the same message always encodes and prints the same way.
    tonic_prost_build::configure().build_transport(true).btree_map(".").compile_fds(descriptors)?;
    Ok(())
}
