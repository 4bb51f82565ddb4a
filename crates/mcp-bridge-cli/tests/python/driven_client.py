# A Python mcp 1.x client that a test drives: it connects over stdio to
# the command given after its name (passing its whole environment on),
# answers form elicitations with its name, counts tools/list_changed,
# prints {"ready": true}, then runs one command per stdin line and prints
# one JSON answer per command (see ts/driven_client.mjs for the commands).
# Usage: python driven_client.py NAME CMD [ARGS...]
import asyncio, json, os, sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

name, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
changes = 0


def reply(answer):
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": name})


async def on_message(message):
    global changes
    if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
        changes += 1


async def run(session, command):
    if command["op"] == "tools":
        return {"tools": [tool.name for tool in (await session.list_tools()).tools]}
    if command["op"] == "call":
        result = await session.call_tool(command["name"], command.get("arguments", {}))
        text = result.content[0].text if result.content else None
        return {"text": text, "isError": bool(result.isError)}
    if command["op"] == "changes":
        return {"changes": changes}
    return {"error": f"unknown op {command['op']}"}


async def main():
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit, message_handler=on_message) as session:
            await session.initialize()
            reply({"ready": True})
            loop = asyncio.get_running_loop()
            while line := await loop.run_in_executor(None, sys.stdin.readline):
                try:
                    reply(await run(session, json.loads(line)))
                except Exception as error:  # every command gets an answer
                    reply({"error": f"{type(error).__name__}: {error}"})


asyncio.run(main())
