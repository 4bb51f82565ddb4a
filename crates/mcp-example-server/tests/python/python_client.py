"""The Python `mcp` SDK's client, speaking 2026-07-28 to the server it is
given (a stdio command, or a Streamable HTTP URL); prints what it saw as one
JSON object.

Usage: python_client.py PROGRAM [ARGS...]
       python_client.py http://HOST:PORT/mcp
"""
import asyncio
import json
import sys

from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Python"})


async def main() -> None:
    if sys.argv[1].startswith("http"):
        server = sys.argv[1]
    else:
        server = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    out = {}
    async with Client(server, mode="auto", elicitation_callback=on_elicit) as client:
        out["protocol_version"] = client.protocol_version
        out["server_name"] = client.server_info.name if client.server_info else None
        tools = await client.list_tools()
        out["tools"] = sorted(t.name for t in tools.tools)
        added = await client.call_tool("add", {"a": 20, "b": 22})
        out["add_text"] = added.content[0].text
        out["add_structured"] = added.structured_content
        hello = await client.call_tool("ask_name", {})
        out["ask_name"] = hello.content[0].text
        prompt = await client.get_prompt("greet", {"name": "Ada", "style": "formal"})
        out["prompt"] = prompt.messages[0].content.text
        readme = await client.read_resource("example://readme")
        out["readme"] = readme.contents[0].text
        note = await client.read_resource("note://shopping")
        out["note"] = note.contents[0].text
    print(json.dumps(out))


asyncio.run(main())
