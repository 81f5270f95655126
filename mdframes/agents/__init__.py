"""Tools for research agents that cannot see the future (CONTRACT §15).

``mdframes agent-server --lake PATH (--as-of T | --clock-file F)`` serves the lake to a
language-model agent over the Model Context Protocol (stdio), clamped to a past time:

- :mod:`~mdframes.agents.clamp`: the clock (fixed, a forward-only clock file, or now) and
  :class:`~mdframes.agents.clamp.ClampedLake`, the one door every tool reads the lake
  through (versions fetched by the clamp, records public by it).
- :mod:`~mdframes.agents.tools`: the tools ``datasets``, ``read``, ``features``,
  ``search`` and ``changes`` as plain functions, their arguments checked, their answers a
  table and notes; descriptions from the registry.
- :mod:`~mdframes.agents.server`: the MCP server (the ``mcp`` package, ``agents`` extra).
- :mod:`~mdframes.agents.cli`: the ``agent-server`` command.
"""

from __future__ import annotations

from .clamp import ClampedLake, Clock, ClockError, public_by
from .tools import Answer, ToolError, Tools

__all__ = ["Clock", "ClampedLake", "ClockError", "public_by", "Tools", "Answer", "ToolError"]
