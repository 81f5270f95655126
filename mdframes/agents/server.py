"""The MCP server over stdio: the tools of :mod:`mdframes.agents.tools`, each answer a CSV
table as text plus the same rows as structured content, every failure a tool error.

Needs the ``agents`` extra (``pip install 'mdframes[agents]'``: the ``mcp`` package, 2.x).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from .tools import ToolError, Tools

__all__ = ["build_server", "serve", "OUTPUT_SCHEMA"]

log = logging.getLogger("mdframes.agents")

# The structured content of every answer; clients check answers against it.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "clamp": {"type": "string", "description": "The time the answer is as of (UTC)."},
        "columns": {"type": "array", "items": {"type": "string"}},
        "rows": {"type": "array", "description": "One object per row: column -> value."},
        "total_rows": {"type": "integer"},
        "shown_rows": {"type": "integer"},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["clamp", "columns", "rows", "total_rows", "shown_rows", "notes"],
}

_INSTRUCTIONS = (
    "Market and alternative data from a point-in-time lake, clamped to a past time: every "
    "answer holds only what was fetched and public by the clamp, which is the present for "
    "you. Start with `datasets`, find symbols with `search`, read rows with `read`, model "
    "inputs with `features`, revisions with `changes`. Answers are CSV tables with notes "
    "(lines starting with #) saying what was cut at the clamp or left out."
)


def build_server(tools: Tools) -> Any:
    """The low-level MCP ``Server`` answering ``tools``."""
    import mcp_types as types
    from mcp.server import Server

    from .._version import __version__

    def listing() -> list[Any]:
        out = []
        for name, (description, args) in tools.specs.items():
            schema = {
                "type": "object",
                "properties": {a.name: a.schema() for a in args},
                "required": [a.name for a in args if a.required],
                "additionalProperties": False,
            }
            out.append(
                types.Tool(
                    name=name,
                    description=description,
                    input_schema=schema,
                    output_schema=OUTPUT_SCHEMA,
                    annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
                )
            )
        return out

    listed = listing()
    # A result's other fields (isError, resultType...) as this version of mcp writes them.
    envelope = types.CallToolResult(content=[]).model_dump(
        by_alias=True, mode="json", exclude_none=True
    )

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        def error(text: str) -> Any:
            log.info("tool %s: error: %s", params.name, text)
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

        try:
            answer = tools.call(params.name, params.arguments)
        except ToolError as exc:
            return error(str(exc))
        except Exception as exc:  # a bug: said as a tool error, the server stays up
            return error(tools.clean(f"internal error ({type(exc).__name__}): {exc}"))
        # The result in its wire form, which the server validates and dumps on the way out:
        # a model would be dumped once more before (200 rows: a twentieth of a call).
        return {
            **envelope,
            "content": [{"type": "text", "text": answer.text()}],
            "structuredContent": answer.structured(),
        }

    return Server(
        "mdframes",
        version=__version__,
        instructions=_INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(tools: Tools) -> None:
    """Serve ``tools`` over stdin/stdout until the client closes the connection. Logs go to
    stderr (stdout is the protocol's)."""
    import anyio
    from mcp.server.stdio import stdio_server

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    server = build_server(tools)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
