"""A small 2026-07-28 server built with the Python `mcp` SDK, on stdio."""
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="python-peer", version="2.3.0-test")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Upper-cases a text."""
    return text.upper()


if __name__ == "__main__":
    server.run("stdio")
