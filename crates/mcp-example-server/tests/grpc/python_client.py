"""A client of MCP's gRPC transport written with Google's generated stubs
(mcp-grpc-transport-proto) and grpcio: lists the tools of the server at
ADDR, calls one, runs an input round, and provokes four refusals. Prints
what it saw as one JSON object.

Usage: python python_client.py HOST:PORT"""
import json
import sys

import grpc
from google.protobuf import json_format, struct_pb2
from grpc_status import rpc_status
from mcp_grpc_transport_proto import mcp_messages_pb2 as m
from mcp_grpc_transport_proto import mcp_pb2_grpc

VERSION = (("mcp-protocol-version", "2026-07-28"),)


def struct(value):
    s = struct_pb2.Struct()
    s.update(value)
    return s


META = struct({
    "io.modelcontextprotocol/clientInfo": {"name": "python-grpc-stubs", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
})


def call(name, arguments=None, **fields):
    request = m.CallToolRequest.Request(name=name, arguments=struct(arguments or {}))
    return m.CallToolRequest(common=m.RequestFields(metadata=META, **fields), request=request)


def refusal(rpc):
    """The gRPC code and the JSON-RPC error code of a failed call."""
    try:
        rpc()
    except grpc.RpcError as error:
        status = rpc_status.from_call(error)
        code = None
        if status is not None:
            for detail in status.details:
                carried = struct_pb2.Struct()
                if detail.Unpack(carried):
                    code = json_format.MessageToDict(carried).get("code")
        return {"grpc": error.code().name, "code": code}
    return None


def main():
    stub = mcp_pb2_grpc.McpStub(grpc.insecure_channel(sys.argv[1]))
    out = {}
    tools = stub.ListTools(m.ListToolsRequest(common=m.RequestFields(metadata=META)), metadata=VERSION)
    out["tools"] = [t.name for t in tools.tools]

    added = stub.CallTool(call("add", {"a": 19, "b": 23}), metadata=VERSION + (("mcp-tool-name", "add"),))
    out["sum"] = json_format.MessageToDict(added.structured_content)

    first = stub.CallTool(call("ask_name"), metadata=VERSION)
    out["firstRound"] = m.ResultType.Name(first.common.result_type)
    out["asked"] = first.common.input_requests["name"].elicit_request.message
    answer = m.InputResponse(elicit_result=m.ElicitResult(type=m.ElicitResult.TYPE_ACCEPT, content=struct({"name": "Python"})))
    retry = call("ask_name", input_responses={"name": answer}, request_state=first.common.request_state)
    out["greeting"] = stub.CallTool(retry, metadata=VERSION).content[0].text.text

    out["unknownTool"] = refusal(lambda: stub.CallTool(call("no_such_tool"), metadata=VERSION))
    out["wrongVersion"] = refusal(lambda: stub.CallTool(call("add", {"a": 1, "b": 2}), metadata=(("mcp-protocol-version", "2025-06-18"),)))
    out["wrongRoute"] = refusal(lambda: stub.CallTool(call("add", {"a": 1, "b": 2}), metadata=VERSION + (("mcp-tool-name", "echo"),)))
    out["noVersion"] = refusal(lambda: stub.ListTools(m.ListToolsRequest(common=m.RequestFields(metadata=META))))["grpc"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
