"""A small server built with the Python `mcp` SDK, on stdio, or on
Streamable HTTP at http://127.0.0.1:PORT/mcp with `--http PORT` (both eras,
as the client opens), or on its legacy HTTP+SSE transport (2024-11-05) at
http://127.0.0.1:PORT/sse with `--sse PORT`. With
PY_CACHE_TTL_MS set, its tools/list results carry that public `ttlMs`."""
import os
import sys

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer

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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
