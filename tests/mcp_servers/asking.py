"""An MCP server that asks the user (elicitation), reports progress, logs and reads the roots.

    python asking.py        (stdio)
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field


class Booking(BaseModel):
    name: str = Field(description="Who the table is for")
    seats: int = Field(default=2, description="How many seats")
    window: bool = Field(default=False, description="A window table")


def build() -> MCPServer:
    server = MCPServer("asking", version="1.0.0", log_level="WARNING")

    @server.tool(description="Book a table: asks the user for the details.")
    async def book(ctx: Context) -> str:
        result = await ctx.elicit("Who is the booking for?", schema=Booking)
        if result.action == "accept" and result.data is not None:
            data = result.data
            return f"booked {data.name} x{data.seats} window={data.window}"
        return f"no booking: {result.action}"

    @server.tool(description="Count to three, reporting progress.")
    async def count(ctx: Context) -> str:
        for n in (1, 2, 3):
            await ctx.report_progress(n, 3, f"step {n}")
        return "counted"

    @server.tool(description="Work, logging what it does.")
    async def chatty(ctx: Context) -> str:
        await ctx.warning("disk almost full", logger_name="store")
        await ctx.info({"rows": 3})
        return "done talking"

    @server.tool(description="The client's roots.")
    async def where(ctx: Context) -> str:
        listed = await ctx.session.list_roots()
        return " ".join(str(root.uri) for root in listed.roots) or "(no roots)"

    return server


if __name__ == "__main__":
    build().run()
