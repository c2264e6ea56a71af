"""The scripted model (SPEC §7): stateless, item N by the number of assistant messages, `{{id}}` references."""

import json

import httpx2
import pytest

from engine.providers import scripted_model
from engine.scripted import ScriptedModel, scripted_reply
from engine.types import ToolCall
from tests.unit.unit_helpers import answer, call, tool_round

TOOLS = [{"type": "function", "function": {"name": "list_entity_types", "parameters": {"type": "object"}}}]
USER = {"role": "user", "content": "Hi."}


def assistant(content=None):
    return {"role": "assistant", "content": content}


def history(assistant_messages):
    """A request holding this many assistant messages."""
    return [USER] + [assistant("earlier") for _ in range(assistant_messages)]


SCRIPT = [
    tool_round(call("list_entity_types")),
    answer("First answer."),
    tool_round(call("list_entity_types")),
    answer("Second answer."),
]


@pytest.mark.parametrize(("assistant_messages", "expected"), [(1, "First answer."), (3, "Second answer.")])
def test_it_answers_item_n_for_n_assistant_messages(assistant_messages, expected):
    assert scripted_reply(SCRIPT, history(assistant_messages), True) == {"role": "assistant", "content": expected}


def test_item_zero_answers_a_fresh_request():
    reply = scripted_reply(SCRIPT, [USER], True)

    assert [c["function"]["name"] for c in reply["tool_calls"]] == ["list_entity_types"]


def test_other_roles_do_not_move_the_position():
    messages = [{"role": "system", "content": "Be brief."}, USER, {"role": "system", "content": "Reminder."}]

    assert "tool_calls" in scripted_reply(SCRIPT, messages, True)


def test_past_the_end_it_answers_script_exhausted():
    assert scripted_reply(SCRIPT, history(4), True) == {"role": "assistant", "content": "Script exhausted."}


def test_an_empty_script_is_exhausted_at_once():
    assert scripted_reply([], [USER], True)["content"] == "Script exhausted."


# --- Requests without tools -----------------------------------------------------------------------------------


def test_without_tools_it_skips_tool_items_to_the_next_answer():
    assert scripted_reply(SCRIPT, history(2), False) == {"role": "assistant", "content": "Second answer."}


def test_without_tools_it_answers_the_current_item_when_it_is_an_answer():
    assert scripted_reply(SCRIPT, history(1), False)["content"] == "First answer."


def test_without_tools_it_never_looks_back():
    assert scripted_reply(SCRIPT, history(4), False)["content"] == "Final answer without tools."


def test_without_tools_and_no_answer_left_it_gives_the_fallback():
    script = [tool_round(call("list_entity_types"))] * 3

    assert scripted_reply(script, [USER], False) == {"role": "assistant", "content": "Final answer without tools."}


def test_without_tools_an_item_with_both_content_and_calls_is_not_an_answer():
    script = [{"content": "Looking.", "tool_calls": [call("list_entity_types")]}, answer("Done.")]

    assert scripted_reply(script, [USER], False)["content"] == "Done."


# --- Tool calls -----------------------------------------------------------------------------------------------


def test_ids_default_to_call_response_index():
    script = [answer("a"), tool_round(call("x"), call("y"), call("z"))]

    reply = scripted_reply(script, history(1), True)

    assert [c["id"] for c in reply["tool_calls"]] == ["call_2_1", "call_2_2", "call_2_3"]


def test_given_ids_are_kept():
    reply = scripted_reply([tool_round(call("x", call_id="mine"), call("y"))], [USER], True)

    assert [c["id"] for c in reply["tool_calls"]] == ["mine", "call_1_2"]


def test_calls_are_in_openai_format_with_json_arguments():
    reply = scripted_reply([tool_round(call("list_bundles", {"entity_type": "node"}))], [USER], True)

    assert reply == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1_1",
                "type": "function",
                "function": {"name": "list_bundles", "arguments": '{"entity_type": "node"}'},
            }
        ],
    }


def test_content_beside_calls_is_kept():
    reply = scripted_reply([{"content": "Looking.", "tool_calls": [call("x")]}], [USER], True)

    assert reply["content"] == "Looking."


@pytest.mark.parametrize("raw", ['{"entity_type": ', "not json at all", "[1, 2]", ""])
def test_raw_string_arguments_are_passed_through(raw):
    reply = scripted_reply([tool_round(call("list_bundles", raw))], [USER], True)

    assert reply["tool_calls"][0]["function"]["arguments"] == raw


def test_missing_arguments_are_an_empty_object():
    reply = scripted_reply([tool_round({"name": "list_entity_types"})], [USER], True)

    assert reply["tool_calls"][0]["function"]["arguments"] == "{}"


# --- {{id}} references ----------------------------------------------------------------------------------------


def request_after_first_call(result="uuid-1"):
    return [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1_1"}]},
        {"role": "tool", "tool_call_id": "call_1_1", "content": result},
    ]


def test_a_reference_is_replaced_by_that_calls_tool_message():
    script = [tool_round(call("place_component")), tool_round(call("place_component", {"below_uuid": "{{call_1_1}}"}))]

    reply = scripted_reply(script, request_after_first_call(), True)

    assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"below_uuid": "uuid-1"}


def test_references_resolve_inside_nested_values_and_text():
    arguments = {"props": {"text": "After {{ call_1_1 }}!", "list": ["{{call_1_1}}", 3]}}
    script = [tool_round(call("x")), tool_round(call("edit_component", arguments))]

    reply = scripted_reply(script, request_after_first_call(), True)

    assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {
        "props": {"text": "After uuid-1!", "list": ["uuid-1", 3]}
    }


def test_references_resolve_inside_raw_string_arguments():
    script = [tool_round(call("x")), tool_round(call("place_component", '{"below_uuid": "{{call_1_1}}"}'))]

    reply = scripted_reply(script, request_after_first_call(), True)

    assert reply["tool_calls"][0]["function"]["arguments"] == '{"below_uuid": "uuid-1"}'


def test_an_unknown_reference_is_left_as_written():
    script = [tool_round(call("x")), tool_round(call("place_component", {"below_uuid": "{{call_9_9}}"}))]

    reply = scripted_reply(script, request_after_first_call(), True)

    assert json.loads(reply["tool_calls"][0]["function"]["arguments"]) == {"below_uuid": "{{call_9_9}}"}


def test_the_script_itself_is_not_changed_by_resolution():
    script = [tool_round(call("x")), tool_round(call("place_component", {"below_uuid": "{{call_1_1}}"}))]

    scripted_reply(script, request_after_first_call(), True)

    assert script[1]["tool_calls"][0]["arguments"] == {"below_uuid": "{{call_1_1}}"}


# --- The WSGI endpoint ----------------------------------------------------------------------------------------


def endpoint(script):
    return httpx2.Client(transport=httpx2.WSGITransport(app=ScriptedModel(script)), base_url="http://scripted.test")


def test_the_endpoint_answers_a_chat_completion():
    response = endpoint([answer("Hello.")]).post(
        "/v1/chat/completions", json={"model": "m", "messages": [USER], "tools": TOOLS}
    )

    assert response.status_code == 200
    completion = response.json()
    assert completion["object"] == "chat.completion"
    assert completion["model"] == "m"
    assert completion["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "Hello."}, "finish_reason": "stop"}
    ]


def test_the_endpoint_marks_tool_call_answers():
    response = endpoint([tool_round(call("list_entity_types"))]).post(
        "/v1/chat/completions", json={"messages": [USER], "tools": TOOLS}
    )

    assert response.json()["choices"][0]["finish_reason"] == "tool_calls"


def test_the_endpoint_is_stateless():
    client = endpoint(SCRIPT)
    request = {"messages": history(1), "tools": TOOLS}

    first = client.post("/v1/chat/completions", json=request).json()["choices"]
    second = client.post("/v1/chat/completions", json=request).json()["choices"]

    assert first == second


def test_the_endpoint_answers_404_elsewhere():
    assert endpoint([]).get("/v1/models").status_code == 404


@pytest.mark.parametrize("body", [b"not json", b"[1]", b'{"model": "m"}', b'{"messages": 5}', b'{"messages": ["hi"]}'])
def test_the_endpoint_answers_400_to_a_bad_body(body):
    response = endpoint([]).post("/v1/chat/completions", content=body)

    assert response.status_code == 400
    assert response.json() == {"error": {"message": "Invalid request body."}}


# --- Through the SDK ------------------------------------------------------------------------------------------


def test_the_scripted_provider_reads_calls_into_tool_calls():
    model = scripted_model([tool_round(call("list_bundles", {"entity_type": "node"}), call("x", "raw"))])

    response = model.complete([USER], TOOLS)

    assert (response.content, response.finish_reason) == (None, "tool_calls")
    assert response.tool_calls == (
        ToolCall(id="call_1_1", name="list_bundles", arguments='{"entity_type": "node"}'),
        ToolCall(id="call_1_2", name="x", arguments="raw"),
    )


def test_the_scripted_provider_without_tools_answers_text():
    model = scripted_model(SCRIPT)

    response = model.complete([USER], None)

    assert (response.content, response.tool_calls, response.finish_reason) == ("First answer.", (), "stop")
