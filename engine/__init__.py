"""Toolgate's engine: the agent loop, the per-response tool-call gate, the tools and the models.

Pure Python: it never imports Flask or the database layer. Everything it returns is JSON-serialisable.
"""

import logging

from .config import (
    AGENT_DEFAULTS,
    TOOL_SETTING_DEFAULTS,
    AgentConfig,
    ToolSettings,
    ValidationError,
    apply_overrides,
    fill_defaults,
    validate_agent,
)
from .loop import advance_run, decide_run, run_agent, start_run, stop_run
from .review import review_tool_calls, tools_for_agent
from .round import STOP_REASONS
from .tools import default_registry

__all__ = [
    "AGENT_DEFAULTS",
    "STOP_REASONS",
    "TOOL_SETTING_DEFAULTS",
    "AgentConfig",
    "ValidationError",
    "ToolSettings",
    "advance_run",
    "apply_overrides",
    "decide_run",
    "default_registry",
    "fill_defaults",
    "review_tool_calls",
    "run_agent",
    "start_run",
    "stop_run",
    "tools_for_agent",
    "validate_agent",
]

logging.getLogger("toolgate").addHandler(logging.NullHandler())
