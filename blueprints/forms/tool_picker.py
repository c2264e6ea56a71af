"""The agent form's tools, without JavaScript: the form lists only the tools on it (the agent's enabled tools, and
those added since the form was opened); every other registered tool waits in the picker below it, grouped by where
it comes from, each with an Add button. That button posts the whole form like Save does; the form comes back with the
tool on it, enabled, its settings open, and nothing is saved until Save. (static/tool_picker.js only filters the
picker as a person types.)
"""

ADD = "add_tool"  # the button; its value: the tool's name
ON_FORM = "tool"  # one hidden input per tool the form shows, so a tool left unticked stays on it until saved


def tools_on_form(form, formdata):
    """The tools the agent form shows, in the form's order: those enabled on it (stored, posted or just added), and
    those a posted form listed."""
    listed = set(formdata.getlist(ON_FORM))
    return [name for name in form.tool_names if name in listed or form.tools[name].enabled.data]


def tool_to_add(formdata, tool_names, vanished):
    """The tool whose Add button was pressed; a name that is not a tool the picker offers raises ValueError."""
    name = formdata[ADD]
    if name not in tool_names or name in vanished:
        raise ValueError(f'"{name}" is not a registered tool.')
    return name
