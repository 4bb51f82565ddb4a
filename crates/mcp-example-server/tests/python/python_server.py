"""A small server built with the Python `mcp` SDK, on stdio, or on
Streamable HTTP at http://127.0.0.1:PORT/mcp with `--http PORT` (both eras,
as the client opens), or on its legacy HTTP+SSE transport (2024-11-05) at
http://127.0.0.1:PORT/sse with `--sse PORT`. With
PY_CACHE_TTL_MS set, its tools/list results carry that public `ttlMs`.
Its `greet` tool asks the user's name first (an elicitation, in the form
of the era the client speaks)."""
import os
import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Elicit, MCPServer, Resolve

ttl_ms = os.environ.get("PY_CACHE_TTL_MS")
cache_hints = {"tools/list": CacheHint(ttl_ms=int(ttl_ms), scope="public")} if ttl_ms else None
server = MCPServer(name="python-peer", version="2.3.0-test", cache_hints=cache_hints)


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-cases a text."""
    return text.upper()


class Person(BaseModel):
    name: str


def ask_name() -> Elicit[Person]:
    return Elicit("Who is there?", Person)


@server.tool()
def greet(person: Annotated[Person, Resolve(ask_name)]) -> str:
    """Asks the user's name, then greets them."""
    return f"Hello, {person.name}!"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
