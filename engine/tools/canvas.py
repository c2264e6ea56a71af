"""Canvas tools: a page builder whose layout lives with the run (SPEC §6).

`place_component` is the motivating example for "Restrict to one call per response": it returns the UUID of the
component it placed, and the next placement goes below or inside that UUID — a value the model only has once
the previous call has run. Two placements in one response cannot chain, which is what the gate prevents.
"""

import uuid as uuid_module

from .registry import Tool, ToolError

COMPONENTS = ("section", "hero", "heading", "text", "image", "button", "card")
REGIONS = ("header", "content", "footer")
DEFAULT_REGION = "content"
POSITION_ARGUMENTS = ("region", "below_uuid", "inside_uuid")


def _locate(nodes, component_uuid):
    """The list that holds the component (the layout or a parent's children) and its index there, or None."""
    for index, node in enumerate(nodes):
        if node["uuid"] == component_uuid:
            return nodes, index
        found = _locate(node["children"], component_uuid)
        if found:
            return found
    return None


def find_component(layout, component_uuid):
    """The component with this UUID anywhere in the layout tree, or None."""
    found = _locate(layout, component_uuid)
    return found[0][found[1]] if found else None


def _unknown_uuid(component_uuid):
    return ToolError(
        f'No component with uuid "{component_uuid}". Use a UUID returned by place_component, or call get_layout.'
    )


def place_component(arguments, context):
    given = [name for name in POSITION_ARGUMENTS if name in arguments]
    if len(given) > 1:
        raise ToolError(f"Give at most one of region, below_uuid or inside_uuid (got {' and '.join(given)}).")
    if "below_uuid" in arguments:
        found = _locate(context.layout, arguments["below_uuid"])
        if not found:
            raise _unknown_uuid(arguments["below_uuid"])
        siblings, index = found
        region = siblings[index]["region"]
    elif "inside_uuid" in arguments:
        parent = find_component(context.layout, arguments["inside_uuid"])
        if parent is None:
            raise _unknown_uuid(arguments["inside_uuid"])
        siblings, index, region = parent["children"], len(parent["children"]) - 1, parent["region"]
    else:
        siblings, index = context.layout, len(context.layout) - 1
        region = arguments.get("region", DEFAULT_REGION)
    node = {
        "uuid": str(uuid_module.uuid4()),
        "component": arguments["component"],
        "region": region,
        "props": {},
        "children": [],
    }
    siblings.insert(index + 1, node)
    return node["uuid"]


def edit_component(arguments, context):
    component = find_component(context.layout, arguments["uuid"])
    if component is None:
        raise _unknown_uuid(arguments["uuid"])
    component["props"].update(arguments["props"])
    return f"Updated {component['uuid']}."


def get_layout(arguments, context):
    return context.layout


UUID_PARAMETER = {"type": "string", "minLength": 1}

CANVAS_TOOLS = [
    Tool(
        name="place_component",
        description=(
            "Place one component on the page and return its UUID (a bare string). "
            "Give at most one position: region (header, content or footer; default content) appends it to that "
            "region; below_uuid puts it right after that component; inside_uuid puts it last inside that component. "
            "To build a page top to bottom, place a component, wait for its UUID, then place the next one with "
            "below_uuid set to that UUID: call this tool once per response."
        ),
        parameters={
            "type": "object",
            "properties": {
                "component": {"type": "string", "enum": list(COMPONENTS), "description": "What to place."},
                "region": {"type": "string", "enum": list(REGIONS), "description": "Append to this region."},
                "below_uuid": {**UUID_PARAMETER, "description": "Place right after the component with this UUID."},
                "inside_uuid": {**UUID_PARAMETER, "description": "Place last inside the component with this UUID."},
            },
            "required": ["component"],
            "additionalProperties": False,
        },
        handler=place_component,
        family="canvas",
    ),
    Tool(
        name="edit_component",
        description=(
            "Set properties of a placed component, such as its text, heading or image URL. The given props are "
            "merged into the existing ones. Returns 'Updated <uuid>.'"
        ),
        parameters={
            "type": "object",
            "properties": {
                "uuid": {**UUID_PARAMETER, "description": "The UUID place_component returned."},
                "props": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"type": ["string", "number", "boolean"]},
                    "description": 'Property names and values, e.g. {"text": "Welcome"}.',
                },
            },
            "required": ["uuid", "props"],
            "additionalProperties": False,
        },
        handler=edit_component,
        family="canvas",
    ),
    Tool(
        name="get_layout",
        description=(
            'Return the page layout: a list of components {"uuid", "component", "region", "props", "children"}, '
            "in page order, children nested."
        ),
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        handler=get_layout,
        family="canvas",
    ),
]
