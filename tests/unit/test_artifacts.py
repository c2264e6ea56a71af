"""Artifacts (SPEC §3 `use_artifacts`): the output is kept, the model gets `{{artifact:TOOL:N}}`, and a later call's
arguments get the content back in place of the placeholder before they are checked and run."""

from engine import run_agent
from engine.artifacts import resolve_artifacts
from tests.unit.unit_helpers import ENTITY_TYPES, NODE_BUNDLES, SpyRegistry, answer, call, make_agent, tool_round

ARTIFACTS = {"{{artifact:list_bundles:1}}": "node bundles", "{{artifact:get_layout:1}}": "[]"}


def run_with_spy(tools, script):
    spy = SpyRegistry()
    return run_agent(make_agent(tools, script), "Build it.", registry=spy.registry), spy


def tool_contents(run):
    return [(message["tool_call_id"], message["content"]) for message in run["messages"] if message["role"] == "tool"]


# --- Resolving placeholders ------------------------------------------------------------------------------------


def test_placeholders_are_replaced_in_every_string_of_the_arguments():
    arguments = {
        "text": "Bundles: {{artifact:list_bundles:1}}.",
        "nested": {"list": ["{{artifact:get_layout:1}}", 3, "{{ artifact:list_bundles:1 }}"]},
    }

    resolved, replaced, error = resolve_artifacts(arguments, ARTIFACTS)

    assert resolved == {"text": "Bundles: node bundles.", "nested": {"list": ["[]", 3, "node bundles"]}}
    assert replaced == ("{{artifact:list_bundles:1}}", "{{artifact:get_layout:1}}")
    assert error is None


def test_an_unknown_placeholder_is_an_error_naming_it():
    assert resolve_artifacts({"text": "{{artifact:list_bundles:2}}"}, ARTIFACTS) == (
        None,
        (),
        "{{artifact:list_bundles:2}} is not an artifact of this run",
    )


def test_arguments_without_placeholders_are_left_as_they_are():
    arguments = {"text": "{{call_1_1}} and {artifact:x:1}", "n": 1}

    assert resolve_artifacts(arguments, ARTIFACTS) == (arguments, (), None)


# --- In a run --------------------------------------------------------------------------------------------------


def test_the_model_gets_the_placeholder_and_a_call_two_rounds_later_gets_the_content():
    run, spy = run_with_spy(
        {"list_bundles": {"use_artifacts": True}, "place_component": {}, "edit_component": {}},
        [
            tool_round(call("list_bundles", {"entity_type": "node"})),
            tool_round(call("place_component", {"component": "text"}, call_id="text")),
            tool_round(call("edit_component", {"uuid": "{{text}}", "props": {"body": "{{artifact:list_bundles:1}}"}})),
            answer("Done."),
        ],
    )

    assert tool_contents(run)[0] == ("call_1_1", "{{artifact:list_bundles:1}}")
    uuid = run["layout"][0]["uuid"]
    assert spy.executed[-1] == ("edit_component", {"uuid": uuid, "props": {"body": NODE_BUNDLES}})
    assert run["layout"][0]["props"] == {"body": NODE_BUNDLES}
    first, third = run["rounds"][0]["calls"][0], run["rounds"][2]["calls"][0]
    assert (first["output"], first["artifact"]) == (NODE_BUNDLES, "{{artifact:list_bundles:1}}")
    assert third["arguments"]["props"] == {"body": "{{artifact:list_bundles:1}}"}  # what the model sent
    assert third["replaced_placeholders"] == ["{{artifact:list_bundles:1}}"]
    assert run["artifacts"] == [
        {
            "placeholder": "{{artifact:list_bundles:1}}",
            "tool": "list_bundles",
            "number": 1,
            "call_id": "call_1_1",
            "round": 1,
            "content": NODE_BUNDLES,
        }
    ]


def test_artifacts_are_numbered_from_one_per_tool():
    run, _spy = run_with_spy(
        {"list_bundles": {"use_artifacts": True}, "list_entity_types": {"use_artifacts": True}},
        [
            tool_round(call("list_bundles", {"entity_type": "node"}), call("list_entity_types")),
            tool_round(call("list_bundles", {"entity_type": "user"})),
            answer("Done."),
        ],
    )

    assert tool_contents(run) == [
        ("call_1_1", "{{artifact:list_bundles:1}}"),
        ("call_1_2", "{{artifact:list_entity_types:1}}"),
        ("call_2_1", "{{artifact:list_bundles:2}}"),
    ]
    assert [(artifact["placeholder"], artifact["round"]) for artifact in run["artifacts"]] == [
        ("{{artifact:list_bundles:1}}", 1),
        ("{{artifact:list_entity_types:1}}", 1),
        ("{{artifact:list_bundles:2}}", 2),
    ]
    assert run["artifacts"][1]["content"] == ENTITY_TYPES


def test_a_placeholder_is_checked_against_the_schema_as_its_content():
    run, spy = run_with_spy(
        {"place_component": {"use_artifacts": True}},
        [
            tool_round(call("place_component", {"component": "hero"})),
            tool_round(call("place_component", {"component": "text", "below_uuid": "{{artifact:place_component:1}}"})),
            answer("Done."),
        ],
    )

    hero, text = run["layout"]
    assert (hero["component"], text["component"]) == ("hero", "text")
    assert spy.executed[1] == ("place_component", {"component": "text", "below_uuid": hero["uuid"]})
    assert run["rounds"][1]["calls"][0]["status"] == "executed"


def test_the_allow_list_sees_the_content_of_a_placeholder():
    rules = {"entity_type": {"action": "only_allow", "values": ["node"]}}
    run, spy = run_with_spy(
        {"place_component": {"use_artifacts": True}, "list_bundles": {"argument_rules": rules}},
        [
            tool_round(call("place_component", {"component": "hero"})),
            tool_round(call("list_bundles", {"entity_type": "{{artifact:place_component:1}}"})),
            answer("Done."),
        ],
    )

    uuid = run["layout"][0]["uuid"]
    rejected = run["rounds"][1]["calls"][0]
    assert (rejected["reason"], rejected["message"]) == (
        "argument_not_allowed",
        f"Error: invalid value for entity_type in list_bundles: {uuid} is not one of node.",
    )
    assert rejected["replaced_placeholders"] == ["{{artifact:place_component:1}}"]
    assert [name for name, _arguments in spy.executed] == ["place_component"]


def test_an_unknown_placeholder_is_invalid_arguments():
    run, spy = run_with_spy(
        {"list_bundles": {"use_artifacts": True}, "list_entity_types": {}},
        [
            tool_round(call("list_bundles", {"entity_type": "node"})),
            tool_round(call("list_bundles", {"entity_type": "{{artifact:list_bundles:2}}"})),
            answer("Done."),
        ],
    )

    assert tool_contents(run)[1] == (
        "call_2_1",
        "Error: invalid arguments for list_bundles: {{artifact:list_bundles:2}} is not an artifact of this run",
    )
    assert run["rounds"][1]["calls"][0]["reason"] == "invalid_arguments"
    assert len(spy.executed) == 1


def test_an_artifact_is_not_available_to_the_calls_of_its_own_response():
    run, _spy = run_with_spy(
        {"list_bundles": {"use_artifacts": True}, "place_component": {}},
        [
            tool_round(
                call("list_bundles", {"entity_type": "node"}),
                call("place_component", {"component": "text", "below_uuid": "{{artifact:list_bundles:1}}"}),
            ),
            answer("Done."),
        ],
    )

    assert [c["reason"] for c in run["rounds"][0]["calls"]] == [None, "invalid_arguments"]


def test_a_call_that_fails_or_is_rejected_keeps_no_artifact():
    run, _spy = run_with_spy(
        {"list_bundles": {"use_artifacts": True}},
        [
            tool_round(call("list_bundles", {"entity_type": "comment"})),
            tool_round(call("list_bundles", {})),
            tool_round(call("list_bundles", {"entity_type": "node"})),
            answer("Done."),
        ],
    )

    assert [c["status"] for r in run["rounds"][:3] for c in r["calls"]] == ["error", "rejected", "executed"]
    assert tool_contents(run)[2] == ("call_3_1", "{{artifact:list_bundles:1}}")
    assert [artifact["call_id"] for artifact in run["artifacts"]] == ["call_3_1"]


def test_return_directly_answers_with_the_content_not_the_placeholder():
    run, _spy = run_with_spy(
        {"list_bundles": {"use_artifacts": True, "return_directly": True}},
        [tool_round(call("list_bundles", {"entity_type": "node"})), answer("Never asked.")],
    )

    assert (run["stop_reason"], run["answer"]) == ("return_directly", NODE_BUNDLES)
    assert tool_contents(run) == [("call_1_1", "{{artifact:list_bundles:1}}")]
