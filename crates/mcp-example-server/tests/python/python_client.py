"""The Python `mcp` SDK's client, speaking 2026-07-28 to the server it is
given (a stdio command, or a Streamable HTTP URL); prints what it saw as one
JSON object.

Usage: python_client.py [--listen] PROGRAM [ARGS...]
       python_client.py [--listen] http://HOST:PORT/mcp
--listen also opens a listen stream and waits for the update of a note.
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
    argv = [a for a in sys.argv[1:] if a != "--listen"]
    if argv[0].startswith("http"):
        server = argv[0]
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:])
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
        if "--listen" in sys.argv:
            # A listen stream, and the update a tool call causes on it.
            async with client.listen(resource_subscriptions=["note://shopping"]) as sub:
                await client.call_tool("set_note", {"name": "shopping", "text": "eggs"})
                event = await asyncio.wait_for(anext(sub), 10)
                out["updated"] = getattr(event, "uri", type(event).__name__)
            again = await client.read_resource("note://shopping")
            out["note_after"] = again.contents[0].text
    print(json.dumps(out))


asyncio.run(main())
