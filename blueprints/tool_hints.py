"""The agent form's part for tool server tools: grouped by server, each with its annotations shown as hints from
the server, and the settings Toolgate proposes from them (engine.tools.mcp.proposed_settings). A proposal is never
applied by itself: the Accept button posts the whole form, which comes back with those settings filled in and
nothing saved, and the person changes or keeps them before Save. The settings saved as proposed are remembered, so
the agent's page can say which came from a hint."""

from engine.tools.mcp import McpTool, proposed_settings

ACCEPT = "accept_hints"  # the button; its value is the tool's name
MARK = "from_hint"  # hidden inputs "TOOL:SETTING" for the settings accepted from a tool's hints
SETTING_WORDS = {"require_approval": "Require approval", "max_identical_calls": "Max identical calls 1"}


def proposals(tool):
    """{setting: proposed value} for a registry tool: from its server's hints, none for any other tool."""
    return proposed_settings(tool.annotations) if isinstance(tool, McpTool) else {}


def proposal_words(tool):
    return [SETTING_WORDS[key] for key in proposals(tool)]


def form_tools(registry, agent, formdata):
    """The tools the agent form offers (name -> schema): every registered tool, and a tool its server no longer
    lists only while the agent (or the posted form) still enables it."""
    enabled = set((agent or {}).get("tools") or {}) | {
        name for name in registry.vanished_names() if formdata.get(f"tools-{name}-enabled")
    }
    gone = set(registry.vanished_names()) - enabled
    return {name: schema for name, schema in registry.parameters_by_name().items() if name not in gone}


def tool_groups(tool_names, registry, servers):
    """The form's tools as [(server or None, [names])]: the built-in and installed ones first, then one group per
    tool server (its vanished tools included), in the servers' order."""
    by_server = {server["id"]: [] for server in servers}
    others = []
    vanished = set(registry.vanished_names())
    for name in tool_names:
        tool = registry.get(name)
        server_id = tool.server_id if isinstance(tool, McpTool) else None
        if server_id is None and name in vanished:
            server_id = name.partition("__")[0]
        by_server.get(server_id, others).append(name)
    return [(None, others), *((server, by_server[server["id"]]) for server in servers if by_server[server["id"]])]


def posted_marks(formdata):
    """{tool: {setting, ...}} of the marks a posted form carries."""
    marks = {}
    for value in formdata.getlist(MARK):
        tool_name, _, key = value.partition(":")
        if key in SETTING_WORDS:
            marks.setdefault(tool_name, set()).add(key)
    return marks


def accept(form, tool_name, registry, marks):
    """Fill one tool's proposed settings into the posted form (and enable it); add them to `marks`. Returns the
    notice to show, or None when the name is not a tool server's tool on the form."""
    tool = registry.get(tool_name)
    proposed = proposals(tool) if tool_name in form.tool_names else {}
    if not isinstance(tool, McpTool):
        return None
    tool_form = form.tools[tool_name].form
    tool_form.enabled.data = True
    for key, value in proposed.items():
        field = tool_form[key]  # filled in as if the person had typed or ticked it: a text field holds text
        field.raw_data = [str(value).lower() if isinstance(value, bool) else str(value)]
        field.process_formdata(field.raw_data)
    marks.setdefault(tool_name, set()).update(proposed)
    if not proposed:
        return f"{tool_name} is read-only by its server's hints: nothing is proposed. Nothing is saved until you save."
    words = ", ".join(SETTING_WORDS[key] for key in proposed)
    return (
        f"Filled in the settings proposed for {tool_name} by its server's hints: {words}. Change them if you "
        "like; nothing is saved until you save."
    )


def kept_marks(marks, agent, registry):
    """The marks that still hold for `agent`: the tool is enabled and the setting has the proposed value."""
    kept = {}
    for tool_name, keys in marks.items():
        settings = agent["tools"].get(tool_name)
        tool = registry.get(tool_name)
        if settings is None or tool is None:
            continue
        proposed = proposals(tool)
        held = sorted(key for key in keys if key in proposed and settings.get(key) == proposed[key])
        if held:
            kept[tool_name] = held
    return kept
