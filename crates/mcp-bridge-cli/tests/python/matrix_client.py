# One row of the client matrix: the library named by the first argument
# (mcp1, mcp2, fastmcp or langchain; run with the Python that has it) runs
# each operation against the example server at the given URL or through
# the given stdio command, and prints one JSON object: operation -> "ok",
# "n/a" (the library has no way to do it) or what went wrong.
import asyncio, json, sys

library, target = sys.argv[1], sys.argv[2:]
url = target[0] if target[0].startswith("http") else None
NAME = {"name": "Matrix"}
out = {}


async def run(op, action):
    try:
        out[op] = await action()
    except Exception as e:  # every cell is reported, none stops the row
        out[op] = f"{type(e).__name__}: {e}"[:200]


def expect(ok, seen):
    return "ok" if ok else f"unexpected: {seen}"[:200]


async def standard(session):
    """The operations on a client with list, call, prompt and read methods."""
    async def tools():
        listed = await session.list_tools()
        names = [t.name for t in getattr(listed, "tools", listed)]
        return expect("add" in names and "ask_name" in names, names)

    async def call():
        result = await session.call_tool("add", {"a": 19, "b": 23})
        return expect(result.content[0].text == "42", result)

    async def elicit():
        result = await session.call_tool("ask_name", {})
        return expect(result.content[0].text == "Hello, Matrix!", result)

    async def prompt():
        result = await session.get_prompt("greet", {"name": "Ada", "style": "formal"})
        return expect("Ada" in result.messages[0].content.text, result)

    async def read():
        result = await session.read_resource("example://readme")
        contents = getattr(result, "contents", result)
        return expect(bool(contents[0].text), result)

    for op, action in [("tools/list", tools), ("tools/call", call), ("elicitation", elicit),
                       ("prompts/get", prompt), ("resources/read", read)]:
        await run(op, action)


async def mcp1():
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    async def on_elicit(context, params):
        return types.ElicitResult(action="accept", content=NAME)

    async def with_streams(read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            await session.initialize()
            out["connect"] = "ok"
            await standard(session)

    if url:
        async with streamablehttp_client(url) as (read, write, _):
            await with_streams(read, write)
    else:
        async with stdio_client(StdioServerParameters(command=target[0], args=target[1:])) as (read, write):
            await with_streams(read, write)


async def mcp2():
    from mcp import types
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    async def on_elicit(context, params):
        return types.ElicitResult(action="accept", content=NAME)

    server = url or StdioServerParameters(command=target[0], args=target[1:])
    async with Client(server, mode="auto", elicitation_callback=on_elicit) as client:
        out["connect"] = "ok"
        await standard(client)


async def fastmcp():
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def on_elicit(message, response_type, params, context):
        return NAME

    transport = url or StdioTransport(command=target[0], args=target[1:])
    async with Client(transport, elicitation_handler=on_elicit) as client:
        out["connect"] = "ok"
        await standard(client)


async def langchain():
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connection = {"transport": "streamable_http", "url": url} if url else \
        {"transport": "stdio", "command": target[0], "args": target[1:]}
    client = MultiServerMCPClient({"example": connection})
    tools = {}

    async def listed():
        tools.update({tool.name: tool for tool in await client.get_tools()})
        return expect("add" in tools, sorted(tools))

    async def call():
        answer = await tools["add"].ainvoke({"a": 19, "b": 23})
        return expect("'42'" in str(answer), answer)

    async def prompt():
        messages = await client.get_prompt("example", "greet", arguments={"name": "Ada", "style": "formal"})
        return expect("Ada" in str(messages[0].content), messages)

    async def read():
        blobs = await client.get_resources("example", uris=["example://readme"])
        return expect(bool(blobs) and bool(blobs[0].as_string()), blobs)

    out["connect"] = "ok"
    await run("tools/list", listed)
    await run("tools/call", call)
    out["elicitation"] = "n/a"
    await run("prompts/get", prompt)
    await run("resources/read", read)


async def main():
    await run("connect", {"mcp1": mcp1, "mcp2": mcp2, "fastmcp": fastmcp, "langchain": langchain}[library])
    if out.get("connect") is None:
        out["connect"] = "ok"
    print(json.dumps(out))


asyncio.run(main())
