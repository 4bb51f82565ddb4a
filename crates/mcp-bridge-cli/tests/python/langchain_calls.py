# langchain-mcp-adapters calling the example server's `add` tool N times
# over stdio: the command line to start is the script's arguments after N.
# Each call opens a session of its own (the adapters' way), so a message
# landing while a session closes shows here. Prints one JSON line: the
# answers, and the errors seen (raised, or logged by the mcp client).
import asyncio, json, logging, sys

from langchain_mcp_adapters.client import MultiServerMCPClient

errors = []


class Collect(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.ERROR:
            errors.append(record.getMessage())


logging.getLogger().addHandler(Collect())


async def main():
    calls, command, args = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    client = MultiServerMCPClient({"example": {"transport": "stdio", "command": command, "args": args}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    answers = []
    for n in range(calls):
        try:
            answers.append(await tools["add"].ainvoke({"a": n, "b": 1}))
        except Exception as e:  # every failure is reported, none stops the run
            errors.append(f"call {n}: {type(e).__name__}: {e}")
    print(json.dumps({"answers": [str(a) for a in answers], "errors": errors}))


asyncio.run(main())
