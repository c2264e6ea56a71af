"""The agent form's Client tools section, without JavaScript: which client tools (and which of their arguments)
a posted form holds, and what its Add and Remove buttons do. Those buttons post the whole form like Save does; the
form comes back with the change made, and nothing is saved until Save.
"""

from dataclasses import dataclass

from engine.config import TOOL_NAME_PATTERN

ADD_TOOL = "add_client_tool"  # the button; the name typed in new_client_tool
REMOVE_TOOL = "remove_client_tool"  # its value: the tool's name
ADD_ARGUMENT = "add_client_argument"  # its value: the tool's name; the argument's in client_tools-NAME-new_argument
NAME_RULE = "must be 1 to 64 letters, digits, underscores or hyphens"


@dataclass(frozen=True)
class ClientToolEdit:
    client_tools: dict  # name -> argument names: what the form shows now
    notice: str = ""  # what was done, or
    error: str = ""  # why not, for the field it typed in:
    tool: str = ""  # that client tool's Add argument field, or the Add client tool field when empty


def posted_client_tools(formdata):
    """{name: [argument, ...]} of the client tools in a posted agent form, in the order posted."""
    return {
        name: list(dict.fromkeys(formdata.getlist(f"client_tools-{name}-argument")))
        for name in dict.fromkeys(formdata.getlist("client_tool"))
    }


def client_tool_edit(formdata):
    """The ClientToolEdit an Add or Remove button asks for, or None when the form was posted to be saved."""
    client_tools = posted_client_tools(formdata)
    if ADD_TOOL in formdata:
        return _add_tool(formdata, client_tools)
    if REMOVE_TOOL in formdata:
        name = formdata[REMOVE_TOOL]
        client_tools.pop(name, None)
        return ClientToolEdit(client_tools, notice=f'Removed the client tool "{name}". Save the agent to keep this.')
    if ADD_ARGUMENT in formdata:
        return _add_argument(formdata, client_tools, formdata[ADD_ARGUMENT])
    return None


def _add_tool(formdata, client_tools):
    name = formdata.get("new_client_tool", "").strip()
    error = None
    if not name:
        error = "Tool name is required: the function name the client declares."
    elif not TOOL_NAME_PATTERN.match(name):
        error = f"Tool name {NAME_RULE}."
    elif name in client_tools:
        error = f'Tool name "{name}" is already a client tool of this agent.'
    elif formdata.get(f"tools-{name}-enabled"):
        error = f'Tool name "{name}" is enabled under Tools, which Toolgate runs: untick it there first.'
    if error:
        return ClientToolEdit(client_tools, error=error)
    client_tools[name] = []
    return ClientToolEdit(client_tools, notice=f'Added the client tool "{name}". Save the agent to keep it.')


def _add_argument(formdata, client_tools, tool_name):
    if tool_name not in client_tools:
        return ClientToolEdit(client_tools)
    argument = formdata.get(f"client_tools-{tool_name}-new_argument", "").strip()
    error = None
    if not argument:
        error = "Argument is required: the name of one of the tool's arguments."
    elif not TOOL_NAME_PATTERN.match(argument):
        error = f"Argument {NAME_RULE}."
    elif argument in client_tools[tool_name]:
        error = f'Argument "{argument}" is already listed for {tool_name}.'
    if error:
        return ClientToolEdit(client_tools, error=error, tool=tool_name)
    client_tools[tool_name].append(argument)
    notice = f'Added the argument "{argument}" to {tool_name}: give it a rule or a description, then save the agent.'
    return ClientToolEdit(client_tools, notice=notice, tool=tool_name)
