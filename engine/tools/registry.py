"""What a tool is, the registry that holds tools by name, and the tools installed packages register under the
`toolgate.tools` entry points."""

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from ..arguments import model_parameters
from ..config import ToolSettings

ENTRY_POINT_GROUP = "toolgate.tools"


class ToolRegistryError(RuntimeError):
    """Two tools claim one name, or an entry point does not provide tools."""


class ToolError(Exception):
    """A tool failed in a way the model can act on; its text becomes the call's tool message."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict  # JSON Schema of the arguments object
    handler: Callable[[dict, Any], Any]  # (arguments, RunContext) -> str or JSON-serialisable value
    family: str = "other"

    def schema_for_model(self, settings=None):
        """The OpenAI chat-completions `tools` entry for this tool under an agent's ToolSettings: the description
        override, the argument rules and descriptions applied to a copy of the schema."""
        settings = settings or ToolSettings()
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": settings.description_override or self.description,
                "parameters": model_parameters(
                    self.parameters, settings.argument_rules, settings.argument_descriptions
                ),
            },
        }


class ToolRegistry:
    """Tools by name. `vanished` names tools a tool server listed once and no longer does: agents that enable one
    stay valid, the model is not offered it, and the gate answers a call of it `unknown_tool`."""

    def __init__(self, tools=(), vanished=()):
        self._tools = {}
        for tool in tools:
            self.add(tool)
        self._vanished = tuple(name for name in dict.fromkeys(vanished) if name not in self._tools)

    def add(self, tool):
        if not isinstance(tool, Tool):
            raise ToolRegistryError(f"{tool!r} is not a Tool")
        if tool.name in self._tools:
            raise ToolRegistryError(f'Two tools are named "{tool.name}"; tool names must be unique.')
        self._tools[tool.name] = tool

    def get(self, name):
        return self._tools.get(name)

    def names(self):
        return list(self._tools)

    def vanished_names(self):
        return list(self._vanished)

    def parameters_by_name(self):
        """{tool name: JSON Schema of its arguments}: what agent validation checks tool settings against; a vanished
        tool's schema is None (unknown)."""
        return {**{name: tool.parameters for name, tool in self._tools.items()}, **dict.fromkeys(self._vanished)}

    def schemas_for_model(self, tool_settings):
        """The `tools` of a model request: one entry per tool in `tool_settings` (name -> ToolSettings) that the
        registry has; a vanished tool is not offered."""
        return [
            self._tools[name].schema_for_model(settings) for name, settings in tool_settings.items() if name in self
        ]

    def __contains__(self, name):
        return name in self._tools

    def __iter__(self):
        return iter(self._tools.values())


def entry_point_tools():
    """The tools that installed packages register under the `toolgate.tools` entry points."""
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        provided = entry_point.load()
        provided = provided() if callable(provided) and not isinstance(provided, Tool) else provided
        if isinstance(provided, Tool):
            yield provided
        elif isinstance(provided, (list, tuple)):
            yield from provided
        else:
            raise ToolRegistryError(f'Entry point "{entry_point.name}" does not provide a Tool or a list of Tools.')
