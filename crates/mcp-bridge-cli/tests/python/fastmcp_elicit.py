# A fastmcp server whose `greet` tool asks the user for a name with
# ctx.elicit (fastmcp serves it on 2025-11-25 connections only).
from dataclasses import dataclass
from fastmcp import FastMCP, Context

mcp = FastMCP("fastmcp-elicit")

@mcp.tool
async def greet(ctx: Context) -> str:
    """Asks the user's name, then greets them."""
    result = await ctx.elicit("What is your name?", response_type=str)
    if result.action == "accept":
        return f"Hello, {result.data}!"
    return "No name given."

@mcp.tool
def add(a: int, b: int) -> int:
    return a + b

if __name__ == "__main__":
    mcp.run(show_banner=False)
