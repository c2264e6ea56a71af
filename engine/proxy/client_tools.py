"""Tools the client runs (the agent's `client_tools`, SPEC §2), as the gate sees them.

The gate reviews calls against an AgentConfig's `tools` (the settings) and a registry (the schemas). Toolgate never
runs a client tool, so it has no handler; its schema is the one the client declared, when there is one: the proxy
gets the client's tool definitions with every request, the gate API gets none and checks only that the arguments
are a JSON object.
"""

from dataclasses import replace
from types import MappingProxyType

from ..config import ToolSettings
from ..tools.registry import Tool, ToolRegistry

ANY_OBJECT = {"type": "object"}  # never modified: the gate copies a schema before it changes it


def client_tool(name, description="", parameters=ANY_OBJECT):
    return Tool(name=name, description=description, parameters=parameters, handler=None, family="client")


def gate_api_view(config, registry):
    """(config, registry) for gate.review_calls on the gate API: the agent's enabled tools with their schemas,
    and its client tools with theirs unknown."""
    tools = [registry.get(name) for name in config.tools if name in registry]
    tools += [client_tool(name) for name in config.client_tools]
    return replace(config, tools=MappingProxyType({**config.tools, **config.client_tools})), ToolRegistry(tools)


def proxy_view(config, declared):
    """(config, registry) for gate.review_calls on proxied traffic: exactly the tools the client declared
    (`declared`: Tools built from its request), each with the agent's client tool settings, or none."""
    settings = {tool.name: config.client_tools.get(tool.name, ToolSettings()) for tool in declared}
    return replace(config, tools=MappingProxyType(settings)), ToolRegistry(declared)
