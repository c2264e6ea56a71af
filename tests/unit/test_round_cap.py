"""The one global round cap (the RAG user story): N tool rounds, then a forced answer without tools, or a message."""

import pytest

from engine import run_agent
from tests.doubles import ModelDouble
from tests.unit.unit_helpers import (
    MAX_ROUNDS_TEXT,
    UNKNOWN_TOOL,
    answer,
    call,
    make_agent,
    sdk_model,
    tool_messages,
    tool_round,
)

ALWAYS_LISTING = [tool_round(call("list_entity_types"))] * 20 + [answer("Forced answer.")]


def run(agent, model):
    return run_agent(agent, "What entity types are there?", model=model)


@pytest.mark.parametrize("max_rounds", [1, 3, 10])
def test_always_calling_model_gets_max_rounds_then_one_request_without_tools(max_rounds):
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent({"list_entity_types": {}}, max_rounds=max_rounds)

    result = run(agent, model)

    assert len(model.requests) == max_rounds + 1
    assert model.offered == [["list_entity_types"]] * max_rounds + [None]
    assert result["stop_reason"] == "round_cap"
    assert result["answer"] == "Forced answer."
    assert result["tool_calls"] == max_rounds


def test_forced_answer_request_carries_no_tools_tool_choice_or_parallel_tool_calls():
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent({"list_entity_types": {}}, max_rounds=2, parallel_tool_calls=True)

    run(agent, model)

    bodies = [request["body"] for request in model.requests]
    assert len(bodies) == 3
    assert all("tools" in body and body["parallel_tool_calls"] is True for body in bodies[:2])
    assert {"tools", "tool_choice", "parallel_tool_calls"} & set(bodies[2]) == set()


def test_forced_answer_sees_every_tool_result():
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent({"list_entity_types": {}}, max_rounds=2)

    result = run(agent, model)

    assert [m["role"] for m in model.bodies[-1]["messages"]] == ["user", "assistant", "tool", "assistant", "tool"]
    assert result["messages"][-1] == {"role": "assistant", "content": "Forced answer."}


def test_forced_answer_without_a_scripted_answer_uses_the_fallback_text():
    model = sdk_model([tool_round(call("list_entity_types"))] * 3)
    agent = make_agent({"list_entity_types": {}}, max_rounds=2)

    result = run(agent, model)

    assert result["answer"] == "Final answer without tools."
    assert result["stop_reason"] == "round_cap"


def test_max_rounds_zero_makes_exactly_one_request_without_tools():
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent({"list_entity_types": {}}, max_rounds=0)

    result = run(agent, model)

    assert len(model.requests) == 1
    assert model.bodies[0].get("tools") is None
    assert result["stop_reason"] == "answered"
    assert result["answer"] == "Forced answer."
    assert result["rounds"][0]["tools_offered"] is None


def test_max_rounds_zero_sends_a_plain_request_over_http():
    model = sdk_model([answer("Plain.")])
    agent = make_agent({"list_entity_types": {}}, max_rounds=0, parallel_tool_calls=False)

    run(agent, model)

    assert len(model.requests) == 1
    assert set(model.requests[0]["body"]) == {"model", "messages"}


def test_max_rounds_zero_with_message_on_round_cap_still_asks_once():
    model = sdk_model([answer("Plain.")])
    agent = make_agent({"list_entity_types": {}}, max_rounds=0, on_round_cap="message")

    result = run(agent, model)

    assert len(model.requests) == 1
    assert (result["stop_reason"], result["answer"]) == ("answered", "Plain.")


def test_a_stream_of_rejected_calls_is_bounded_by_the_cap():
    model = sdk_model([tool_round(call("no_such_tool"), call("list_entity_types", "{broken"))] * 30)
    agent = make_agent({"list_entity_types": {}}, max_rounds=4)

    result = run(agent, model)

    assert len(model.requests) == 5
    assert result["stop_reason"] == "round_cap"
    assert result["rejected_calls"] == 8
    assert result["tool_calls"] == 0
    assert {m["content"] for m in tool_messages(result)} == {
        UNKNOWN_TOOL,
        "Error: invalid arguments for list_entity_types: the arguments are not valid JSON "
        "(Expecting property name enclosed in double quotes at position 1)",
    }


def test_a_model_that_answers_before_the_cap_is_answered():
    model = sdk_model([tool_round(call("list_entity_types")), answer("Four types.")])
    agent = make_agent({"list_entity_types": {}}, max_rounds=5)

    result = run(agent, model)

    assert (result["stop_reason"], result["answer"], len(model.requests)) == ("answered", "Four types.", 2)


def test_an_agent_without_tools_is_answered_not_capped():
    model = sdk_model([answer("Hello.")])

    result = run(make_agent(), model)

    assert model.bodies[0].get("tools") is None
    assert result["stop_reason"] == "answered"


# --- on_round_cap = message -----------------------------------------------------------------------------------


def test_message_on_round_cap_stops_with_the_default_text():
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent({"list_entity_types": {}}, max_rounds=3, on_round_cap="message")

    result = run(agent, model)

    assert len(model.requests) == 3
    assert result["stop_reason"] == "round_cap"
    assert result["answer"] == (
        "I was unable to fully answer your question within the allowed number of processing steps. "
        "Please try rephrasing or narrowing your question."
    )
    assert result["messages"][-1]["role"] == "tool"


def test_message_on_round_cap_uses_the_custom_text():
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent(
        {"list_entity_types": {}}, max_rounds=2, on_round_cap="message", max_rounds_message="Too many steps."
    )

    result = run(agent, model)

    assert (result["stop_reason"], result["answer"]) == ("round_cap", "Too many steps.")
    assert len(model.requests) == 2


def test_message_on_round_cap_stops_right_after_the_last_allowed_round():
    model = sdk_model([tool_round(call("list_entity_types")), answer("Done.")])
    agent = make_agent({"list_entity_types": {}}, max_rounds=1, on_round_cap="message")

    result = run(agent, model)

    assert (result["stop_reason"], result["answer"]) == ("round_cap", MAX_ROUNDS_TEXT)
    assert len(model.requests) == 1


def test_message_on_round_cap_does_not_apply_when_the_model_answers_in_time():
    model = sdk_model([tool_round(call("list_entity_types")), answer("Done.")])
    agent = make_agent({"list_entity_types": {}}, max_rounds=3, on_round_cap="message")

    result = run(agent, model)

    assert (result["stop_reason"], result["answer"]) == ("answered", "Done.")


def test_return_directly_in_the_last_round_wins_over_the_cap_message():
    model = sdk_model(ALWAYS_LISTING)
    agent = make_agent({"list_entity_types": {"return_directly": True}}, max_rounds=1, on_round_cap="message")

    result = run(agent, model)

    assert result["stop_reason"] == "return_directly"


# --- Reminders count against the cap -------------------------------------------------------------------------


def test_reminders_are_bounded_by_the_cap():
    # Past its answers the model fails, which ends the run: a loop whose reminders used no round would otherwise ask
    # forever, each request carrying a longer transcript, and fill the memory before any timeout.
    past_the_answers = (500, {"error": {"message": "Asked more often than the cap allows."}})
    model = ModelDouble("One.", "Two.", "Three.", "Four.", then=past_the_answers).through_sdk()
    agent = make_agent({"list_entity_types": {"require_usage": True}}, max_rounds=2)

    result = run(agent, model)

    assert len(model.requests) == 3
    assert model.offered == [["list_entity_types"], ["list_entity_types"], None]
    assert [m["role"] for m in result["messages"]] == [
        "user",
        "assistant",
        "system",
        "assistant",
        "system",
        "assistant",
    ]
    assert result["stop_reason"] == "round_cap"
    assert result["answer"] == "Three."


def test_reminder_with_message_on_round_cap_stops_with_the_message():
    # SPEC §2: with on_round_cap = message, reaching the cap stops the run with the message, whichever kind of
    # round (tools or reminder) reached it.
    model = sdk_model([answer("One."), answer("Two.")])
    agent = make_agent({"list_entity_types": {"require_usage": True}}, max_rounds=1, on_round_cap="message")

    result = run(agent, model)

    assert len(model.requests) == 1
    assert (result["stop_reason"], result["answer"]) == ("round_cap", MAX_ROUNDS_TEXT)
