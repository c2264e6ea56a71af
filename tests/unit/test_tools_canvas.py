import uuid

import pytest
from jsonschema import Draft202012Validator

from engine.tools import ToolError
from engine.tools.canvas import CANVAS_TOOLS, edit_component, find_component, get_layout, place_component
from engine.tools.context import RunContext

PLACE_SCHEMA = Draft202012Validator(next(tool.parameters for tool in CANVAS_TOOLS if tool.name == "place_component"))


@pytest.fixture
def run_context():
    return RunContext()


def components(nodes):
    return [node["component"] for node in nodes]


def test_place_component_returns_the_bare_uuid_of_the_new_node(run_context):
    returned = place_component({"component": "hero"}, run_context)
    assert str(uuid.UUID(returned)) == returned
    assert run_context.layout == [
        {"uuid": returned, "component": "hero", "region": "content", "props": {}, "children": []}
    ]


def test_region_places_the_component_in_that_region(run_context):
    place_component({"component": "heading", "region": "header"}, run_context)
    assert run_context.layout[0]["region"] == "header"


def test_below_uuid_inserts_right_after_that_component(run_context):
    hero = place_component({"component": "hero"}, run_context)
    place_component({"component": "card"}, run_context)
    text = place_component({"component": "text", "below_uuid": hero}, run_context)
    place_component({"component": "button", "below_uuid": text}, run_context)
    assert components(run_context.layout) == ["hero", "text", "button", "card"]


def test_below_uuid_takes_the_region_of_that_component(run_context):
    heading = place_component({"component": "heading", "region": "footer"}, run_context)
    place_component({"component": "text", "below_uuid": heading}, run_context)
    assert [node["region"] for node in run_context.layout] == ["footer", "footer"]


def test_inside_uuid_appends_to_the_children(run_context):
    section = place_component({"component": "section", "region": "header"}, run_context)
    place_component({"component": "heading", "inside_uuid": section}, run_context)
    place_component({"component": "button", "inside_uuid": section}, run_context)
    children = run_context.layout[0]["children"]
    assert components(children) == ["heading", "button"]
    assert [child["region"] for child in children] == ["header", "header"]


def test_below_a_child_stays_among_its_siblings(run_context):
    section = place_component({"component": "section"}, run_context)
    heading = place_component({"component": "heading", "inside_uuid": section}, run_context)
    place_component({"component": "image", "inside_uuid": section}, run_context)
    place_component({"component": "text", "below_uuid": heading}, run_context)
    assert components(run_context.layout) == ["section"]
    assert components(run_context.layout[0]["children"]) == ["heading", "text", "image"]


@pytest.mark.parametrize("position", ["below_uuid", "inside_uuid"])
def test_unknown_uuid_is_a_tool_error_and_places_nothing(run_context, position):
    with pytest.raises(ToolError) as raised:
        place_component({"component": "text", position: "nope"}, run_context)
    assert str(raised.value) == (
        'No component with uuid "nope". Use a UUID returned by place_component, or call get_layout.'
    )
    assert run_context.layout == []


@pytest.mark.parametrize(
    ("positions", "named"),
    [
        ({"region": "header", "below_uuid": "x"}, "region and below_uuid"),
        ({"region": "header", "inside_uuid": "x"}, "region and inside_uuid"),
        ({"below_uuid": "x", "inside_uuid": "x"}, "below_uuid and inside_uuid"),
    ],
)
def test_two_positions_are_rejected(run_context, positions, named):
    with pytest.raises(ToolError) as raised:
        place_component({"component": "text", **positions}, run_context)
    assert str(raised.value) == f"Give at most one of region, below_uuid or inside_uuid (got {named})."
    assert run_context.layout == []


@pytest.mark.parametrize(
    "arguments",
    [{}, {"component": "carousel"}, {"component": "text", "region": "sidebar"}, {"component": "text", "size": 2}],
)
def test_schema_rejects_bad_placements(arguments):
    assert not PLACE_SCHEMA.is_valid(arguments)


def test_edit_component_merges_props(run_context):
    button = place_component({"component": "button"}, run_context)
    edit_component({"uuid": button, "props": {"label": "Buy", "url": "/shop"}}, run_context)
    assert edit_component({"uuid": button, "props": {"label": "Buy now", "primary": True}}, run_context) == (
        f"Updated {button}."
    )
    assert run_context.layout[0]["props"] == {"label": "Buy now", "url": "/shop", "primary": True}


def test_edit_component_with_unknown_uuid_is_a_tool_error(run_context):
    with pytest.raises(ToolError):
        edit_component({"uuid": "nope", "props": {"text": "Hi"}}, run_context)


def test_find_component_finds_nested_nodes_and_none_for_unknown(run_context):
    section = place_component({"component": "section"}, run_context)
    card = place_component({"component": "card", "inside_uuid": section}, run_context)
    assert find_component(run_context.layout, card)["component"] == "card"
    assert find_component(run_context.layout, "nope") is None


def test_get_layout_returns_the_tree(run_context):
    place_component({"component": "hero"}, run_context)
    assert get_layout({}, run_context) is run_context.layout
