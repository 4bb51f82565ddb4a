//! MCP over gRPC, on Google's reference proto (`proto/` of this crate,
//! from `mcp-grpc-transport-proto` 0.2.0): the service
//! `model_context_protocol.Mcp`, one unary RPC per request kind (list and
//! read resources, list templates, list and get prompts, list and call
//! tools, complete). The specification has no gRPC binding; this proto is
//! the de-facto one.
//!
//! [`client::connect`] is the client transport, [`service::serve`] (or
//! [`service::service`] in a tonic router of your own) serves a
//! [`Server`](crate::Server). [`convert`] maps MCP's JSON to the proto's
//! messages, [`status`] JSON-RPC errors to gRPC statuses (with the table),
//! [`json`] JSON values to protobuf `Struct`s; [`proto`] is the generated
//! code.

#[cfg(feature = "client")]
pub mod client;
pub mod convert;
#[cfg(feature = "server")]
mod incoming;
pub mod json;
#[cfg(feature = "server")]
pub mod service;
pub mod status;

/// The largest message a call may send or receive by default: 4 MiB, as
/// gRPC's own default.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// The metadata key of the protocol version.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The metadata key naming a call's tool.
pub const TOOL_NAME_HEADER: &str = "mcp-tool-name";
/// The metadata key naming a read's resource.
pub const RESOURCE_URI_HEADER: &str = "mcp-resource-uri";

/// The messages and the service of Google's MCP proto, as tonic and prost
/// generate them.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("model_context_protocol");
}

/// The compiled descriptors of the proto (a `FileDescriptorSet`): for gRPC
/// reflection, and to check the vendored files against their source.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/mcp_descriptors.bin"));

#[cfg(test)]
mod tests {
    use prost::Message;
    use prost_types::{FileDescriptorProto, FileDescriptorSet};

    use super::*;

    /// A descriptor without what compilers fill in differently (JSON names,
    /// source positions).
    fn comparable(mut file: FileDescriptorProto) -> FileDescriptorProto {
        fn strip(message: &mut prost_types::DescriptorProto) {
            for field in &mut message.field {
                field.json_name = None;
            }
            message.nested_type.iter_mut().for_each(strip);
        }
        file.source_code_info = None;
        file.message_type.iter_mut().for_each(strip);
        file
    }

    /// The vendored files compile to the descriptors of the wheel they were
    /// written from (`scripts/grpc/proto_from_wheel.py`).
    #[test]
    fn grpc_proto_is_the_wheels() {
        let script = "import base64, mcp_grpc_transport_proto.mcp_messages_pb2 as m, mcp_grpc_transport_proto.mcp_pb2 as s\n\
                      for f in (m, s): print(base64.b64encode(f.DESCRIPTOR.serialized_pb).decode())";
        let out = std::process::Command::new(test_support::grpc_python()).args(["-c", script]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let theirs: Vec<FileDescriptorProto> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD.decode(line).unwrap();
                comparable(FileDescriptorProto::decode(bytes.as_slice()).unwrap())
            })
            .collect();
        let ours = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
        assert_eq!(theirs.len(), 2);
        for file in theirs {
            let name = file.name.clone().unwrap();
            let mine = ours.file.iter().find(|f| f.name.as_deref() == Some(name.as_str())).unwrap();
            let mine = comparable(mine.clone());
            for (a, b) in mine.message_type.iter().zip(&file.message_type) {
                assert_eq!(a, b, "{name}: message {:?}", a.name);
            }
            assert_eq!(mine, file, "{name}");
        }
    }
}
