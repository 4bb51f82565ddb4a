"""An MCP server over gRPC written with Google's generated stubs
(mcp-grpc-transport-proto) and grpcio, on a free loopback port it prints
first. Tools: shout (echoes the call's metadata), ask (an input round),
plain_error (a status without details), hang (prints "hanging", then
waits)."""
import sys
import time
from concurrent import futures

import grpc
from google.protobuf import json_format, struct_pb2
from mcp_grpc_transport_proto import mcp_messages_pb2 as m
from mcp_grpc_transport_proto import mcp_pb2_grpc


def tool(name, description):
    schema = struct_pb2.Struct()
    schema.update({"type": "object"})
    return m.Tool(name=name, description=description, input_schema=schema)


def text(value):
    content = m.CallToolResponse.Content(text=m.TextContent(text=value))
    return m.CallToolResponse(common=m.ResponseFields(result_type=m.RESULT_TYPE_COMPLETE), content=[content])


class Servicer(mcp_pb2_grpc.McpServicer):
    def version(self, context):
        metadata = dict(context.invocation_metadata())
        if metadata.get("mcp-protocol-version") != "2026-07-28":
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "unsupported protocol version")
        return metadata

    def ListTools(self, request, context):
        self.version(context)
        return m.ListToolsResponse(
            common=m.ResponseFields(result_type=m.RESULT_TYPE_COMPLETE),
            tools=[tool("shout", "Upper-cases a text."), tool("ask", "Asks who is there."),
                   tool("plain_error", "Fails."), tool("hang", "Never answers.")],
        )

    def CallTool(self, request, context):
        metadata = self.version(context)
        name = request.request.name
        arguments = json_format.MessageToDict(request.request.arguments)
        if name == "shout":
            seen = f"version {metadata['mcp-protocol-version']}, tool {metadata.get('mcp-tool-name')}, {metadata.get('authorization')}"
            return text(f"{arguments['text'].upper()} ({seen})")
        if name == "ask":
            answer = request.common.input_responses.get("who")
            if answer is not None and request.common.request_state == "asked-who":
                who = json_format.MessageToDict(answer.elicit_result.content)["name"]
                return text(f"Hi, {who}!")
            field = m.PrimitiveSchemaDefinition(string_schema=m.PrimitiveSchemaDefinition.StringSchema(title="Name"))
            ask = m.InputRequest(elicit_request=m.ElicitRequest(message="Who is there?", requested_schema={"name": field}, required_fields=["name"]))
            common = m.ResponseFields(result_type=m.RESULT_TYPE_INPUT_REQUIRED, input_requests={"who": ask}, request_state="asked-who")
            return m.CallToolResponse(common=common)
        if name == "plain_error":
            context.abort(grpc.StatusCode.INTERNAL, "it broke")
        if name == "hang":
            print("hanging", flush=True)
            time.sleep(600)
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"Unknown tool: {name}")


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    mcp_pb2_grpc.add_McpServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    sys.exit(main())
