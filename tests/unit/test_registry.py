import pytest
from jsonschema import Draft202012Validator

import engine.tools.registry as registry_module
from engine.tools import Tool, ToolRegistry, ToolRegistryError, build_registry

BUILTIN_NAMES = [
    "list_entity_types",
    "list_bundles",
    "list_documents",
    "read_document",
    "place_component",
    "edit_component",
    "get_layout",
]


def make_tool(name):
    return Tool(name=name, description="A test tool.", parameters={"type": "object"}, handler=lambda a, c: "ok")


class FakeEntryPoint:
    def __init__(self, name, provided):
        self.name = name
        self.provided = provided

    def load(self):
        return self.provided


def test_builtin_registry_has_the_seven_tools_in_order():
    assert build_registry(include_entry_points=False).names() == BUILTIN_NAMES


def test_builtin_tools_belong_to_their_family():
    families = {tool.name: tool.family for tool in build_registry(include_entry_points=False)}
    assert families == {
        "list_entity_types": "catalog",
        "list_bundles": "catalog",
        "list_documents": "documents",
        "read_document": "documents",
        "place_component": "canvas",
        "edit_component": "canvas",
        "get_layout": "canvas",
    }


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_tool_parameters_are_valid_json_schema_objects(name):
    tool = build_registry(include_entry_points=False).get(name)
    Draft202012Validator.check_schema(tool.parameters)
    assert tool.parameters["type"] == "object"
    assert tool.parameters["additionalProperties"] is False


def test_duplicate_tool_name_raises():
    with pytest.raises(ToolRegistryError) as raised:
        ToolRegistry([make_tool("twice"), make_tool("twice")])
    assert str(raised.value) == 'Two tools are named "twice"; tool names must be unique.'


def test_entry_point_tools_are_added_after_the_builtins(monkeypatch):
    monkeypatch.setattr(
        registry_module, "entry_points", lambda group: [FakeEntryPoint("extra", lambda: [make_tool("extra_tool")])]
    )
    assert build_registry().names() == [*BUILTIN_NAMES, "extra_tool"]


def test_entry_point_that_provides_no_tool_raises(monkeypatch):
    monkeypatch.setattr(registry_module, "entry_points", lambda group: [FakeEntryPoint("broken", 42)])
    with pytest.raises(ToolRegistryError):
        build_registry()


def test_entry_point_tool_named_like_a_builtin_is_an_error_not_an_override(monkeypatch):
    monkeypatch.setattr(
        registry_module, "entry_points", lambda group: [FakeEntryPoint("clash", lambda: [make_tool("list_bundles")])]
    )
    with pytest.raises(ToolRegistryError) as raised:
        build_registry()
    assert str(raised.value) == 'Two tools are named "list_bundles"; tool names must be unique.'


def test_a_vanished_tool_keeps_an_agent_valid_is_not_offered_and_its_call_is_unknown():
    from engine import run_agent

    registry = ToolRegistry([make_tool("notes__list")], vanished=["notes__delete", "notes__list"])
    agent = {
        "id": "keeper",
        "label": "Keeper",
        "tools": {"notes__list": {}, "notes__delete": {}},
        "script": [
            {"tool_calls": [{"name": "notes__delete", "arguments": {}}, {"name": "notes__list", "arguments": {}}]},
            {"content": "Done."},
        ],
    }

    run = run_agent(agent, "Tidy up.", registry=registry)

    assert registry.vanished_names() == ["notes__delete"]  # a name the registry has is not vanished
    assert registry.parameters_by_name() == {"notes__list": {"type": "object"}, "notes__delete": None}
    assert run["rounds"][0]["tools_offered"] == ["notes__list"]
    assert [(call["status"], call["reason"]) for call in run["rounds"][0]["calls"]] == [
        ("rejected", "unknown_tool"),
        ("executed", None),
    ]
