"""The loop, scenario by scenario: the Drupal merge request's kernel tests and the per-tool settings."""

import logging

import pytest

from engine import run_agent
from engine.tools import default_registry
from engine.types import ModelResponse
from tests.doubles import ModelDouble, tool_calls
from tests.unit.unit_helpers import (
    ENTITY_TYPES,
    MAX_ROUNDS_TEXT,
    NODE_BUNDLES,
    RESTRICTED_LIST_BUNDLES,
    TAXONOMY_BUNDLES,
    RecordingTools,
    SpyRegistry,
    answer,
    call,
    make_agent,
    sdk_model,
    tool_message_contents,
    tool_messages,
    tool_round,
)

RESTRICTED = {"restrict_multiple_calls": True}
TWO_BUNDLE_CALLS = tool_round(
    call("list_bundles", {"entity_type": "node"}), call("list_bundles", {"entity_type": "taxonomy_term"})
)
TWO_BUNDLE_CALLS_AND_ENTITY_TYPES = tool_round(
    call("list_bundles", {"entity_type": "node"}),
    call("list_bundles", {"entity_type": "taxonomy_term"}),
    call("list_entity_types"),
)
# A violation, the retry with one call, the answer.
RECOVERY_SCRIPT = [
    TWO_BUNDLE_CALLS,
    tool_round(call("list_bundles", {"entity_type": "node"})),
    answer("Articles and pages."),
]


def log_entry(count):
    return {
        "level": "error",
        "kind": "policy_violation",
        "agent_id": "t",
        "message": (
            'The agent "t" called the single-call tool(s) "list_bundles" multiple times in one response. '
            f"All {count} tool calls in the response were rejected."
        ),
    }


def run(agent, spy=None, model=None, **options):
    if spy is not None:
        options["registry"] = spy.registry
    return run_agent(agent, "Which bundles exist?", model=model, **options)


# --- The Drupal merge request's five kernel-test scenarios ---------------------------------------------------


def test_restricted_tool_called_twice_executes_nothing():
    spy = SpyRegistry()
    agent = make_agent({"list_bundles": RESTRICTED}, [TWO_BUNDLE_CALLS, answer("Sorry.")])

    result = run(agent, spy)

    assert spy.executed == []
    assert [(c["id"], c["status"], c["reason"]) for c in result["rounds"][0]["calls"]] == [
        ("call_1_1", "rejected", "restricted_repeat"),
        ("call_1_2", "rejected", "restricted_repeat"),
    ]


def test_restricted_tool_called_twice_answers_both_ids_with_the_restricted_message():
    agent = make_agent({"list_bundles": RESTRICTED}, [TWO_BUNDLE_CALLS, answer("Sorry.")])

    result = run(agent)

    assert tool_messages(result) == [
        {"role": "tool", "tool_call_id": "call_1_1", "content": RESTRICTED_LIST_BUNDLES},
        {"role": "tool", "tool_call_id": "call_1_2", "content": RESTRICTED_LIST_BUNDLES},
    ]


def test_restricted_tool_called_twice_calls_the_model_again_with_the_errors():
    model = sdk_model([TWO_BUNDLE_CALLS, answer("Sorry.")])
    agent = make_agent({"list_bundles": RESTRICTED})

    result = run(agent, model=model)

    assert len(model.requests) == 2
    assert [m for m in model.bodies[1]["messages"] if m["role"] == "tool"] == tool_messages(result)
    assert result["stop_reason"] == "answered"
    assert result["answer"] == "Sorry."


def test_restricted_twice_plus_unrestricted_rejects_all_three():
    spy = SpyRegistry()
    script = [TWO_BUNDLE_CALLS_AND_ENTITY_TYPES, answer("Sorry.")]
    agent = make_agent({"list_bundles": RESTRICTED, "list_entity_types": {}}, script)

    result = run(agent, spy)

    assert spy.executed == []
    assert tool_messages(result) == [
        {"role": "tool", "tool_call_id": "call_1_1", "content": RESTRICTED_LIST_BUNDLES},
        {"role": "tool", "tool_call_id": "call_1_2", "content": RESTRICTED_LIST_BUNDLES},
        {
            "role": "tool",
            "tool_call_id": "call_1_3",
            "content": 'Error: This tool call was not executed, because the tool(s) "list_bundles" in the same '
            "response may only be called once per response.",
        },
    ]
    assert result["rounds"][0]["calls"][2]["reason"] == "collateral"
    assert result["rejected_calls"] == 3
    assert result["tool_calls"] == 0


def test_restricted_once_plus_unrestricted_twice_executes_all_three():
    spy = SpyRegistry()
    script = [
        tool_round(call("list_bundles", {"entity_type": "node"}), call("list_entity_types"), call("list_entity_types")),
        answer("Done."),
    ]
    agent = make_agent({"list_bundles": RESTRICTED, "list_entity_types": {}}, script)

    result = run(agent, spy)

    assert spy.names() == ["list_bundles", "list_entity_types", "list_entity_types"]
    assert tool_messages(result) == [
        {"role": "tool", "tool_call_id": "call_1_1", "content": NODE_BUNDLES},
        {"role": "tool", "tool_call_id": "call_1_2", "content": ENTITY_TYPES},
        {"role": "tool", "tool_call_id": "call_1_3", "content": ENTITY_TYPES},
    ]
    assert result["log"] == []


def test_unrestricted_tool_called_twice_is_unaffected():
    spy = SpyRegistry()
    agent = make_agent({"list_bundles": {}}, [TWO_BUNDLE_CALLS, answer("Done.")])

    result = run(agent, spy)

    assert spy.executed == [
        ("list_bundles", {"entity_type": "node"}),
        ("list_bundles", {"entity_type": "taxonomy_term"}),
    ]
    assert tool_message_contents(result) == {"call_1_1": NODE_BUNDLES, "call_1_2": TAXONOMY_BUNDLES}
    assert [c["status"] for c in result["rounds"][0]["calls"]] == ["executed", "executed"]
    assert result["log"] == []


def test_custom_message_replaces_tool_name_placeholder():
    settings = {"restrict_multiple_calls": True, "multiple_call_error_message": "Custom: [tool_name] once only"}
    agent = make_agent({"list_bundles": settings}, [TWO_BUNDLE_CALLS, answer("Sorry.")])

    result = run(agent)

    assert tool_message_contents(result) == {
        "call_1_1": "Custom: list_bundles once only",
        "call_1_2": "Custom: list_bundles once only",
    }


# --- The log entry --------------------------------------------------------------------------------------------


def test_violation_writes_one_log_entry_to_the_run():
    agent = make_agent({"list_bundles": RESTRICTED}, [TWO_BUNDLE_CALLS, answer("Sorry.")])

    assert run(agent)["log"] == [log_entry(2)]


def test_violation_log_entry_counts_every_call_of_the_response():
    script = [TWO_BUNDLE_CALLS_AND_ENTITY_TYPES, answer("Sorry.")]
    agent = make_agent({"list_bundles": RESTRICTED, "list_entity_types": {}}, script)

    assert run(agent)["log"] == [log_entry(3)]


def test_violation_goes_to_the_toolgate_logger(caplog):
    agent = make_agent({"list_bundles": RESTRICTED}, [TWO_BUNDLE_CALLS, answer("Sorry.")])

    with caplog.at_level(logging.WARNING, logger="toolgate"):
        run(agent)

    records = [record for record in caplog.records if record.name == "toolgate"]
    assert [(record.levelno, record.getMessage()) for record in records] == [(logging.ERROR, log_entry(2)["message"])]


def test_each_violating_response_writes_its_own_log_entry(caplog):
    agent = make_agent({"list_bundles": RESTRICTED}, [TWO_BUNDLE_CALLS, TWO_BUNDLE_CALLS, answer("Sorry.")])

    with caplog.at_level(logging.WARNING, logger="toolgate"):
        result = run(agent)

    assert result["log"] == [log_entry(2), log_entry(2)]
    assert len([record for record in caplog.records if record.name == "toolgate"]) == 2


def test_no_violation_writes_nothing_to_the_logger(caplog):
    agent = make_agent({"list_bundles": {}}, [TWO_BUNDLE_CALLS, answer("Done.")])

    with caplog.at_level(logging.DEBUG, logger="toolgate"):
        run(agent)

    assert [record for record in caplog.records if record.name == "toolgate"] == []


# --- Looped recovery ------------------------------------------------------------------------------------------


def test_violation_then_single_call_then_answer_gives_the_full_transcript():
    agent = make_agent({"list_bundles": RESTRICTED}, RECOVERY_SCRIPT, system_prompt="You list bundles.")

    result = run(agent)

    assert result["messages"] == [
        {"role": "system", "content": "You list bundles."},
        {"role": "user", "content": "Which bundles exist?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1_1",
                    "type": "function",
                    "function": {"name": "list_bundles", "arguments": '{"entity_type": "node"}'},
                },
                {
                    "id": "call_1_2",
                    "type": "function",
                    "function": {"name": "list_bundles", "arguments": '{"entity_type": "taxonomy_term"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1_1", "content": RESTRICTED_LIST_BUNDLES},
        {"role": "tool", "tool_call_id": "call_1_2", "content": RESTRICTED_LIST_BUNDLES},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_2_1",
                    "type": "function",
                    "function": {"name": "list_bundles", "arguments": '{"entity_type": "node"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_2_1", "content": NODE_BUNDLES},
        {"role": "assistant", "content": "Articles and pages."},
    ]
    assert result["stop_reason"] == "answered"
    assert result["answer"] == "Articles and pages."
    assert result["model_requests"] == 3
    assert (result["tool_calls"], result["rejected_calls"]) == (1, 2)


def test_recovery_rounds_record_what_was_offered_and_decided():
    agent = make_agent({"list_bundles": RESTRICTED}, RECOVERY_SCRIPT)

    rounds = run(agent)["rounds"]

    assert [r["number"] for r in rounds] == [1, 2, 3]
    assert [r["tools_offered"] for r in rounds] == [["list_bundles"]] * 3
    assert [[c["status"] for c in r["calls"]] for r in rounds] == [["rejected", "rejected"], ["executed"], []]
    assert rounds[1]["calls"][0] == {
        "id": "call_2_1",
        "original_id": None,
        "name": "list_bundles",
        "arguments": {"entity_type": "node"},
        "status": "executed",
        "reason": None,
        "message": None,
        "output": NODE_BUNDLES,
        "artifact": None,
        "forced_arguments": {},
        "replaced_placeholders": [],
        "progress_message": None,
    }
    assert rounds[2]["assistant"] == {"content": "Articles and pages.", "tool_calls": []}


# --- return_directly ------------------------------------------------------------------------------------------


def test_return_directly_answers_with_that_calls_output():
    model = sdk_model(
        [
            tool_round(call("list_bundles", {"entity_type": "node"}), call("list_entity_types")),
            answer("Never asked for."),
        ]
    )
    agent = make_agent({"list_bundles": {}, "list_entity_types": {"return_directly": True}})

    result = run(agent, model=model)

    assert result["stop_reason"] == "return_directly"
    assert result["answer"] == ENTITY_TYPES
    assert len(model.requests) == 1


def test_return_directly_still_executes_the_other_calls_of_its_round():
    spy = SpyRegistry()
    script = [
        tool_round(
            call("list_bundles", {"entity_type": "node"}),
            call("list_entity_types"),
            call("list_bundles", {"entity_type": "taxonomy_term"}),
        )
    ]
    agent = make_agent({"list_bundles": {}, "list_entity_types": {"return_directly": True}}, script)

    result = run(agent, spy)

    assert spy.names() == ["list_bundles", "list_entity_types", "list_bundles"]
    assert tool_message_contents(result) == {
        "call_1_1": NODE_BUNDLES,
        "call_1_2": ENTITY_TYPES,
        "call_1_3": TAXONOMY_BUNDLES,
    }


def test_return_directly_with_two_such_calls_answers_with_the_first_calls_output():
    script = [tool_round(call("list_bundles", {"entity_type": "node"}), call("list_entity_types"))]
    agent = make_agent({"list_bundles": {"return_directly": True}, "list_entity_types": {"return_directly": True}})

    result = run(agent, model=sdk_model(script))

    assert result["stop_reason"] == "return_directly"
    assert result["answer"] == NODE_BUNDLES
    assert tool_message_contents(result) == {"call_1_1": NODE_BUNDLES, "call_1_2": ENTITY_TYPES}


def test_return_directly_does_not_end_the_run_when_its_call_was_rejected():
    script = [
        tool_round(call("list_entity_types"), call("list_bundles", {"entity_type": "node"}), call("list_bundles", {})),
        answer("Answered by the model."),
    ]
    agent = make_agent({"list_bundles": RESTRICTED, "list_entity_types": {"return_directly": True}}, script)

    result = run(agent)

    assert result["stop_reason"] == "answered"
    assert result["answer"] == "Answered by the model."


# --- require_usage --------------------------------------------------------------------------------------------

REMINDER = (
    "Reminder: The following tools should be used based on the instructions, but were not used: list_bundles. "
    "Please make sure to use them in your next response."
)


def test_require_usage_appends_the_reminder_and_goes_on():
    script = [answer("A guess."), tool_round(call("list_bundles", {"entity_type": "node"})), answer("Checked.")]
    agent = make_agent({"list_bundles": {"require_usage": True}}, script)

    result = run(agent)

    assert [(m["role"], m.get("content")) for m in result["messages"]] == [
        ("user", "Which bundles exist?"),
        ("assistant", "A guess."),
        ("system", REMINDER),
        ("assistant", ""),
        ("tool", NODE_BUNDLES),
        ("assistant", "Checked."),
    ]
    assert result["rounds"][0]["reminder"] == REMINDER
    assert result["stop_reason"] == "answered"
    assert result["answer"] == "Checked."


def test_require_usage_reminder_uses_up_a_round():
    script = [answer("A guess."), tool_round(call("list_bundles", {"entity_type": "node"})), answer("Checked.")]
    agent = make_agent({"list_bundles": {"require_usage": True}}, script)

    assert run(agent)["rounds_used"] == 2


def test_require_usage_names_every_missing_tool():
    script = [answer("A guess."), answer("Another guess.")]
    tools = {"list_bundles": {"require_usage": True}, "list_entity_types": {"require_usage": True}}
    agent = make_agent(tools, script, max_rounds=1)

    result = run(agent)

    assert result["messages"][2] == {
        "role": "system",
        "content": "Reminder: The following tools should be used based on the instructions, but were not used: "
        "list_bundles, list_entity_types. Please make sure to use them in your next response.",
    }


def test_require_usage_is_satisfied_by_an_earlier_round():
    script = [tool_round(call("list_bundles", {"entity_type": "node"})), answer("Checked.")]
    agent = make_agent({"list_bundles": {"require_usage": True}}, script)

    result = run(agent)

    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert result["answer"] == "Checked."


def test_require_usage_is_not_satisfied_by_a_rejected_call():
    script = [
        TWO_BUNDLE_CALLS,
        answer("A guess."),
        tool_round(call("list_bundles", {"entity_type": "node"})),
        answer("Ok."),
    ]
    agent = make_agent({"list_bundles": {"require_usage": True, "restrict_multiple_calls": True}}, script)

    result = run(agent)

    assert [m["content"] for m in result["messages"] if m["role"] == "system"] == [REMINDER]
    assert result["answer"] == "Ok."


def test_an_answer_without_content_is_sent_back_as_an_empty_string_not_null():
    model = ModelDouble(ModelResponse(content=None, tool_calls=()), then="Checked.", ignores_tools=True)
    agent = make_agent({"list_bundles": {"require_usage": True}}, max_rounds=1)

    result = run(agent, model=model)

    assert model.bodies[1]["messages"][1] == {"role": "assistant", "content": ""}
    assert result["rounds"][0]["assistant"]["content"] is None
    assert result["answer"] == "Checked."


def test_require_usage_is_not_satisfied_by_a_call_that_raised():
    tools = RecordingTools(fails=("alpha",))
    script = [tool_round(call("alpha", {"n": 1})), answer("A guess."), tool_round(call("alpha", {"n": 2}))]
    agent = make_agent({"alpha": {"require_usage": True}}, script, max_rounds=3)

    result = run_agent(agent, "Go.", registry=tools.registry)

    assert tools.executed == [("alpha", 1), ("alpha", 2)]
    assert result["rounds"][1]["reminder"] == (
        "Reminder: The following tools should be used based on the instructions, but were not used: alpha. "
        "Please make sure to use them in your next response."
    )
    assert result["stop_reason"] == "round_cap"


# --- tools_disabled -------------------------------------------------------------------------------------------


def test_tool_calls_on_a_request_without_tools_are_rejected():
    spy = SpyRegistry()
    model = ModelDouble(
        tool_calls(("list_entity_types", "{}"), ("list_bundles", '{"entity_type": "node"}')), ignores_tools=True
    )
    agent = make_agent({"list_entity_types": {}, "list_bundles": {}}, max_rounds=0)

    result = run(agent, spy, model=model)

    assert spy.executed == []
    calls = result["rounds"][0]["calls"]
    assert [(c["id"], c["status"], c["reason"]) for c in calls] == [
        ("call_1", "rejected", "tools_disabled"),
        ("call_2", "rejected", "tools_disabled"),
    ]
    assert tool_message_contents(result) == {"call_1": calls[0]["message"], "call_2": calls[1]["message"]}
    assert calls[0]["message"].startswith("Error:")


def test_tools_disabled_run_ends_with_the_models_text():
    model = ModelDouble(tool_calls(("list_entity_types", "{}"), content="Let me look that up."), ignores_tools=True)
    agent = make_agent({"list_entity_types": {}}, max_rounds=0)

    result = run(agent, model=model)

    assert result["stop_reason"] == "tools_disabled"
    assert result["answer"] == "Let me look that up."
    assert len(model.requests) == 1
    assert model.bodies[0].get("tools") is None


def test_tools_disabled_run_without_text_ends_with_the_max_rounds_message():
    model = ModelDouble(tool_calls(("list_entity_types", "{}")), ignores_tools=True)
    agent = make_agent({"list_entity_types": {}}, max_rounds=0)

    result = run(agent, model=model)

    assert result["stop_reason"] == "tools_disabled"
    assert result["answer"] == MAX_ROUNDS_TEXT


def test_tools_disabled_uses_the_custom_max_rounds_message():
    model = ModelDouble(tool_calls(("list_entity_types", "{}")), ignores_tools=True)
    agent = make_agent({"list_entity_types": {}}, max_rounds=0, max_rounds_message="Out of steps.")

    assert run(agent, model=model)["answer"] == "Out of steps."


def test_tool_calls_on_the_forced_request_are_rejected():
    model = ModelDouble(tool_calls(("list_entity_types", "{}"), content="Still looking."), ignores_tools=True)
    agent = make_agent({"list_entity_types": {}}, max_rounds=2)

    result = run(agent, model=model)

    assert [r["tools_offered"] for r in result["rounds"]] == [["list_entity_types"], ["list_entity_types"], None]
    assert [c["status"] for r in result["rounds"] for c in r["calls"]] == ["executed", "executed", "rejected"]
    assert result["rounds"][2]["calls"][0]["reason"] == "tools_disabled"
    assert result["stop_reason"] == "tools_disabled"
    assert result["answer"] == "Still looking."
    assert len(model.requests) == 3


# --- max_calls_per_run ----------------------------------------------------------------------------------------


def test_calls_past_max_calls_per_run_are_rejected_with_the_call_limit_message():
    spy = SpyRegistry()
    script = [
        tool_round(
            call("list_bundles", {"entity_type": "node"}),
            call("list_bundles", {"entity_type": "taxonomy_term"}),
            call("list_bundles", {"entity_type": "user"}),
        ),
        tool_round(call("list_bundles", {"entity_type": "media"})),
        answer("Done."),
    ]
    agent = make_agent({"list_bundles": {"max_calls_per_run": 2}}, script)

    result = run(agent, spy)

    limit = "Error: list_bundles may be called at most 2 times per run."
    assert tool_message_contents(result) == {
        "call_1_1": NODE_BUNDLES,
        "call_1_2": TAXONOMY_BUNDLES,
        "call_1_3": limit,
        "call_2_1": limit,
    }
    assert [c["reason"] for r in result["rounds"] for c in r["calls"]] == [None, None, "call_limit", "call_limit"]
    assert len(spy.executed) == 2
    assert result["answer"] == "Done."


def test_max_calls_per_run_zero_means_unlimited():
    script = [tool_round(*[call("list_entity_types")] * 5), answer("Done.")]
    agent = make_agent({"list_entity_types": {"max_calls_per_run": 0}}, script)

    result = run(agent)

    assert result["tool_calls"] == 5
    assert result["rejected_calls"] == 0


# --- parallel_tool_calls --------------------------------------------------------------------------------------


def test_the_description_override_is_the_description_sent_to_the_model():
    model = sdk_model([answer("Done.")])
    tools = {"list_bundles": {"description_override": "Bundles of one entity type."}, "list_entity_types": {}}

    run(make_agent(tools), model=model)

    tools_sent = model.requests[0]["body"]["tools"]
    offered = {tool["function"]["name"]: tool["function"]["description"] for tool in tools_sent}
    assert offered == {
        "list_bundles": "Bundles of one entity type.",
        "list_entity_types": default_registry().get("list_entity_types").description,
    }


@pytest.mark.parametrize("value", [True, False])
def test_parallel_tool_calls_is_sent_when_tools_are_offered(value):
    model = sdk_model([tool_round(call("list_entity_types")), answer("Done.")])
    agent = make_agent({"list_entity_types": {}}, parallel_tool_calls=value)

    run(agent, model=model)

    assert [request["body"].get("parallel_tool_calls") for request in model.requests] == [value, value]


@pytest.mark.parametrize("value", [True, False])
def test_parallel_tool_calls_is_not_sent_without_tools(value):
    model = sdk_model([tool_round(call("list_entity_types")), answer("Done.")])
    agent = make_agent({"list_entity_types": {}}, parallel_tool_calls=value, max_rounds=1)

    run(agent, model=model)

    forced = model.requests[1]["body"]
    assert "tools" not in forced
    assert "tool_choice" not in forced
    assert "parallel_tool_calls" not in forced


def test_parallel_tool_calls_null_leaves_the_provider_default():
    model = sdk_model([tool_round(call("list_entity_types")), answer("Done.")])
    agent = make_agent({"list_entity_types": {}})

    run(agent, model=model)

    assert "tools" in model.requests[0]["body"]
    assert all("parallel_tool_calls" not in request["body"] for request in model.requests)


# --- Tools that fail ------------------------------------------------------------------------------------------


def test_a_tool_that_raises_gives_status_error_and_the_run_continues():
    tools = RecordingTools(fails=("beta",))
    script = [
        tool_round(call("alpha", {"n": 1}), call("beta", {"n": 2}), call("alpha", {"n": 3})),
        answer("Done despite beta."),
    ]
    agent = make_agent({"alpha": {}, "beta": {}}, script)

    result = run_agent(agent, "Go.", registry=tools.registry)

    assert tools.executed == [("alpha", 1), ("beta", 2), ("alpha", 3)]
    assert [(c["status"], c["reason"]) for c in result["rounds"][0]["calls"]] == [
        ("executed", None),
        ("error", "tool_error"),
        ("executed", None),
    ]
    assert tool_message_contents(result) == {
        "call_1_1": "alpha:1",
        "call_1_2": "Error: beta failed: beta broke",
        "call_1_3": "alpha:3",
    }
    assert result["stop_reason"] == "answered"
    assert result["answer"] == "Done despite beta."


def test_calls_that_raised_count_as_tool_calls_and_rejected_ones_do_not():
    tools = RecordingTools(fails=("beta",))
    script = [
        tool_round(call("alpha", {"n": 1}), call("beta", {"n": 2}), call("gamma", {"n": 3})),
        answer("Done."),
    ]
    agent = make_agent({"alpha": {}, "beta": {}}, script)

    result = run_agent(agent, "Go.", registry=tools.registry)

    assert [c["status"] for c in result["rounds"][0]["calls"]] == ["executed", "error", "rejected"]
    assert (result["tool_calls"], result["rejected_calls"]) == (2, 1)


def test_a_tool_error_becomes_the_calls_tool_message():
    script = [tool_round(call("list_bundles", {"entity_type": "comment"})), answer("No comments.")]
    agent = make_agent({"list_bundles": {}}, script)

    result = run(agent)

    assert result["rounds"][0]["calls"][0]["status"] == "error"
    assert tool_message_contents(result) == {
        "call_1_1": 'Error: Unknown entity type "comment". Valid entity types: node, taxonomy_term, user, media.'
    }


# --- The canvas chain: the motivating example -----------------------------------------------------------------


def test_canvas_chain_places_the_second_component_below_the_first():
    script = [
        tool_round(call("place_component", {"component": "hero"}), call("place_component", {"component": "heading"})),
        tool_round(call("place_component", {"component": "hero"})),
        tool_round(call("place_component", {"component": "heading", "below_uuid": "{{call_2_1}}"})),
        answer("Page built."),
    ]
    agent = make_agent({"place_component": RESTRICTED}, script)

    result = run_agent(agent, "Build a landing page.")

    contents = tool_message_contents(result)
    hero_uuid, heading_uuid = contents["call_2_1"], contents["call_3_1"]
    assert [(node["uuid"], node["component"], node["region"]) for node in result["layout"]] == [
        (hero_uuid, "hero", "content"),
        (heading_uuid, "heading", "content"),
    ]
    assert result["rounds"][2]["calls"][0]["arguments"] == {"component": "heading", "below_uuid": hero_uuid}
    assert [c["reason"] for c in result["rounds"][0]["calls"]] == ["restricted_repeat", "restricted_repeat"]
    assert result["answer"] == "Page built."
