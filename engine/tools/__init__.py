"""Tools: the registry and the built-in families (catalog, documents, canvas)."""

from .registry import Tool, ToolError, ToolRegistry, ToolRegistryError, build_registry, default_registry


def builtin_tools():
    from .canvas import CANVAS_TOOLS
    from .catalog import CATALOG_TOOLS
    from .documents import DOCUMENT_TOOLS

    return [*CATALOG_TOOLS, *DOCUMENT_TOOLS, *CANVAS_TOOLS]


__all__ = [
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolRegistryError",
    "build_registry",
    "builtin_tools",
    "default_registry",
]
