"""Tools: the registry and the built-in families (catalog, documents, canvas)."""

from .canvas import CANVAS_TOOLS
from .catalog import CATALOG_TOOLS
from .documents import DOCUMENT_TOOLS
from .registry import Tool, ToolError, ToolRegistry, ToolRegistryError, entry_point_tools


def builtin_tools():
    return [*CATALOG_TOOLS, *DOCUMENT_TOOLS, *CANVAS_TOOLS]


def build_registry(include_entry_points=True):
    """The built-in tools, then those of installed packages; two tools with one name are an error."""
    tools = builtin_tools()
    if include_entry_points:
        tools.extend(entry_point_tools())
    return ToolRegistry(tools)


_default = None


def default_registry():
    """The registry built once per process: built-ins plus entry points."""
    global _default
    if _default is None:
        _default = build_registry()
    return _default


__all__ = [
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolRegistryError",
    "build_registry",
    "builtin_tools",
    "default_registry",
]
