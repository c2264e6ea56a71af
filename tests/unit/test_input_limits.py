"""The engine's limits on what it takes (issue 10): text that is not valid Unicode, NaN, JSON nested more than
MAX_DEPTH levels, scripts over 1,000 responses or 128 calls per response — refused naming the field, when an
agent is validated (at save) and when a run starts; a model answer over 5 MB ends the run with `error`."""

import json

import httpx2
import pytest

from engine import ValidationError, review_tool_calls, run_agent, validate_agent
from engine.config import MAX_CALLS_PER_RESPONSE, MAX_DEPTH, SCRIPT_MAX_RESPONSES, json_value_problem
from engine.providers import MAX_RESPONSE_MB
from tests.doubles import CONNECTION, ENVIRON
from tests.unit.unit_helpers import answer, call, make_agent, tool_round

TOOLS = {"list_bundles": {}}


def nested(levels):
    """A JSON value `levels` arrays deep: nested(1) is [0]."""
    value = 0
    for _ in range(levels):
        value = [value]
    return value


def error_of(function, *args, **kwargs):
    with pytest.raises(ValidationError) as caught:
        function(*args, **kwargs)
    return caught.value.errors


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ({"a": [1, "ok", {"b": "\ud800"}]}, (".a[2].b", "is not valid Unicode")),
        ({"ok": 1, "\udfff": 2}, (".\\udfff", "is not valid Unicode")),
        ([1.5, float("nan")], ("[1]", "NaN or Infinity")),
        ({"first": "\ud800", "second": "\udfff"}, (".first", "is not valid Unicode")),
        (nested(MAX_DEPTH + 1), ("", f"nested more than {MAX_DEPTH} levels")),
    ],
)
def test_json_value_problem_names_the_first_place_in_document_order(value, found):
    where, why = json_value_problem(value)
    assert where == found[0] and found[1] in why


def test_json_value_problem_takes_any_size_and_depth_without_recursion():
    assert json_value_problem(nested(MAX_DEPTH)) is None
    assert json_value_problem(list(range(200_000))) is None
    assert json_value_problem(nested(50_000), max_depth=None) is None


def test_the_depth_limit_is_checked_when_an_agent_is_validated():
    deep = make_agent(TOOLS, [tool_round(call("list_bundles", {"x": nested(MAX_DEPTH)}))])
    assert error_of(validate_agent, deep) == {"script[0]": f"is nested more than {MAX_DEPTH} levels deep"}
    fits = make_agent(TOOLS, [tool_round(call("list_bundles", {"x": nested(MAX_DEPTH - 4)}))])
    assert validate_agent(fits)["script"] == fits["script"]


def test_the_depth_limit_is_checked_again_when_a_run_starts():
    """An agent stored before the limit existed is refused when it runs, with the same message, before any request."""
    deep = make_agent(TOOLS, [tool_round(call("list_bundles", {"x": nested(480)}))])
    assert "script[0]" in error_of(run_agent, deep, "Hello")
    overrides = {"script": [tool_round(call("list_bundles", {"x": nested(MAX_DEPTH)}))]}
    assert "overrides.script[0]" in error_of(run_agent, make_agent(TOOLS), "Hello", overrides)


def test_a_script_has_at_most_1000_responses_of_at_most_128_calls():
    assert validate_agent(make_agent(script=[answer("x")] * SCRIPT_MAX_RESPONSES))
    too_long = make_agent(script=[answer("x")] * (SCRIPT_MAX_RESPONSES + 1))
    assert error_of(validate_agent, too_long) == {"script": "must have at most 1,000 responses (got 1,001)"}
    assert validate_agent(make_agent(TOOLS, [tool_round(*[call("list_bundles")] * MAX_CALLS_PER_RESPONSE)]))
    too_wide = make_agent(TOOLS, [tool_round(*[call("list_bundles")] * 100_000)])
    assert error_of(validate_agent, too_wide) == {
        "script": "response 1 has 100,000 tool calls; at most 128 are allowed"
    }


def test_text_that_is_not_unicode_is_refused_in_every_field_and_in_the_message():
    assert "label" in error_of(validate_agent, make_agent(label="T \ud800"))
    assert "tools.list_bundles.description_override" in error_of(
        validate_agent, make_agent({"list_bundles": {"description_override": "\udc80"}})
    )
    assert "message" in error_of(run_agent, make_agent(), "Hello \udcff")
    assert "overrides.max_rounds_message" in error_of(run_agent, make_agent(), "Hi", {"max_rounds_message": "\ud800"})


def test_the_gate_takes_one_responses_worth_of_calls_within_the_limits():
    agent = make_agent(TOOLS)
    calls = [{"id": f"c{number}", "name": "list_bundles", "arguments": {}} for number in range(129)]
    assert "tool_calls" in error_of(review_tool_calls, agent, calls)
    deep = [{"id": "c1", "name": "list_bundles", "arguments": {"x": nested(MAX_DEPTH)}}]
    assert error_of(review_tool_calls, agent, deep) == {"tool_calls[0]": f"is nested more than {MAX_DEPTH} levels deep"}
    assert "calls_so_far.\\ud800" in error_of(review_tool_calls, agent, [], calls_so_far={"\ud800": 1})


def remote_run(message):
    """A run against an OpenAI-compatible endpoint that answers `message` (an assistant message) every time."""
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    body = json.dumps(completion).encode()  # ensure_ascii: a lone surrogate travels as \ud800, as JSON allows
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, content=body))
    agent = make_agent(TOOLS, provider="remote", max_rounds=2)
    return run_agent(agent, "Hi", providers={"remote": CONNECTION}, environ=ENVIRON, transport=transport)


def test_a_model_answer_over_5_mb_ends_the_run_with_an_error():
    run = remote_run({"role": "assistant", "content": "x" * (MAX_RESPONSE_MB * 1024 * 1024 + 1)})
    assert run["stop_reason"] == "error"
    assert f"larger than {MAX_RESPONSE_MB} MB" in run["error"]
    assert run["rounds"] == [] and run["model_requests"] == 1
    assert remote_run({"role": "assistant", "content": "x" * 1024 * 1024})["stop_reason"] == "answered"


def test_the_scripted_model_has_the_same_limit():
    run = run_agent(make_agent(script=[answer("é" * (MAX_RESPONSE_MB * 512 * 1024 + 1))]), "Hi")
    assert run["stop_reason"] == "error" and "5 MB" in run["error"]


def test_a_model_answer_that_is_not_valid_unicode_ends_the_run_with_an_error():
    run = remote_run({"role": "assistant", "content": "Broken \ud800 text"})
    assert run["stop_reason"] == "error" and "not valid Unicode" in run["error"]
    json.dumps(run, ensure_ascii=False).encode("utf-8")  # nothing in the run that could not be stored


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5_000])
def test_tool_call_arguments_nested_too_deeply_by_a_model_are_rejected_not_a_crash(levels):
    arguments = '{"entity_type": "node", "x": ' + "[" * levels + "]" * levels + "}"
    tool_call = {"id": "t1", "type": "function", "function": {"name": "list_bundles", "arguments": arguments}}
    run = remote_run({"role": "assistant", "content": None, "tool_calls": [tool_call]})
    rejected = run["rounds"][0]["calls"][0]
    assert (rejected["status"], rejected["reason"]) == ("rejected", "invalid_arguments")
    assert "nested" in rejected["message"]
    assert isinstance(rejected["arguments"], str)  # shown as the model sent it
    json.dumps(run)
