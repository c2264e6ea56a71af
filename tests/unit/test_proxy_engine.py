"""engine.proxy and its parts, without HTTP: what a client body may hold, what its conversation counts, how an
upstream answer is turned into what the client gets, how a conversation is recognised when it comes back, and the
streamed form of an answer."""

import json

import pytest

from engine.config import ValidationError, load_agent
from engine.proxy import chat_completions
from engine.proxy.chat_completions import completion_chunks
from engine.proxy.core import answer_request
from engine.proxy.recording import ClientConversation, conversation_key
from engine.proxy.request import read_request
from engine.proxy.stream import pieces_of
from engine.proxy.turn import current_turn
from tests.doubles import ModelDouble
from tests.stream_support import as_read

USER = {"role": "user", "content": "Go."}
NOTE = {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}}


def assistant(*calls, content=""):
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            for call_id, name, arguments in calls
        ],
    }


def tool(call_id, content="ok"):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def exchange(agent_fields, messages, *answers, tools=(NOTE,)):
    config, _ = load_agent({"id": "a", "label": "A", **agent_fields})
    upstream = ModelDouble(*answers, ignores_tools=True)  # answers whatever it is offered, as a model might
    request = read_request({"model": "m", "messages": messages, "tools": list(tools)})
    result = answer_request(config, request, upstream.answer)
    return result, upstream.bodies


# --- The client's body ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "body"),
        ({"messages": []}, "messages"),
        ({"messages": ["hi"]}, "messages[0]"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "tool_calls": []}]}, "messages[0].tool_calls"),
        (
            {"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]},
            "messages[0].tool_calls[0].id",
        ),
        ({"messages": [USER], "tools": {"note": {}}}, "tools"),
        ({"messages": [USER], "tools": [{"type": "web_search"}]}, "tools[0]"),
        ({"messages": [USER], "tools": [NOTE, NOTE]}, "tools"),
        ({"messages": [USER], "functions": []}, "functions"),
        ({"messages": [USER], "stream": "yes"}, "stream"),
        ({"messages": [USER], "model": 4}, "model"),
    ],
)
def test_a_body_the_proxy_cannot_forward_or_gate_is_refused_naming_the_field(body, field):
    with pytest.raises(ValidationError) as raised:
        read_request(body)
    assert raised.value.field == field


def turn_of(messages):
    return current_turn(read_request({"model": "m", "messages": messages}))


def test_the_turn_counts_from_the_users_last_message_and_only_answered_calls_ran():
    messages = [
        USER,
        assistant(("old", "note", {"n": 1})),
        tool("old"),
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": [{"type": "text", "text": "Again, "}, {"type": "text", "text": "please."}]},
        assistant(("a", "note", {"n": 1}), ("b", "note", {"n": 2})),
        tool("a"),
        tool("b"),
        assistant(("c", "note", {"n": 1})),
    ]
    turn = turn_of(messages)
    assert turn.rounds_used == 2
    assert turn.calls_so_far == {"note": 2}  # "c" has no tool message yet
    assert sum(turn.identical_so_far.values()) == 2 and len(turn.identical_so_far) == 2
    assert turn.message == "Again, please."


REMINDER = {"type": "text", "text": "<system-reminder>The date is 2026-12-06.</system-reminder>"}


def test_what_the_client_sends_beside_tool_results_continues_the_turn():
    beside = [
        {"role": "system", "content": "Tools changed."},
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [REMINDER, {"type": "text", "text": "Also make it blue."}]},
    ]
    messages = [
        {"role": "user", "content": [REMINDER, {"type": "text", "text": "Build it."}]},
        assistant(("a", "note", {"n": 1})),
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "ok"}, REMINDER]},
        *beside,
        assistant(("b", "note", {"n": 1})),
        beside[0],
        tool("b"),
        *beside,
    ]
    turn = turn_of(messages)
    assert (turn.rounds_used, turn.calls_so_far) == (2, {"note": 2})
    assert turn.message == "Build it."  # the user's own text, not the reminder beside it


def test_the_users_text_is_the_turns_message_and_a_reminder_only_when_there_is_nothing_else():
    messages = [
        USER,
        assistant(("a", "note", {})),
        tool("a"),
        {"role": "assistant", "content": "Noted."},
        {"role": "system", "content": "<env>"},
        {
            "role": "user",
            "content": [REMINDER, {"type": "text", "text": "Next, "}, {"type": "text", "text": "please."}],
        },
    ]
    request = read_request({"model": "m", "messages": messages})
    assert request.turn_start == 4  # the step the model's answer was followed by: the system message, then the user's
    turn = current_turn(request)
    assert (turn.rounds_used, turn.calls_so_far, turn.message) == (0, {}, "Next, please.")
    assert turn_of([{"role": "user", "content": [REMINDER]}]).message == REMINDER["text"]
    codex = [
        {"role": "user", "content": "<user_instructions>Use tabs.</user_instructions>"},
        {"role": "user", "content": "<environment_context>cwd: /src</environment_context>"},
        {"role": "user", "content": "Fix the build."},
    ]
    assert turn_of(codex).message == "Fix the build."  # the prompt Codex sends after its instructions
    odd_parts = [{"type": "text", "text": 5}, {"type": "text"}, "text", {"type": "text", "text": "Go."}]
    assert turn_of([{"role": "user", "content": odd_parts}]).message == "Go."


# --- What the client gets -----------------------------------------------------------------------------------------


def test_max_rounds_zero_sends_no_tools_and_the_answer_is_the_clients():
    result, bodies = exchange({"max_rounds": 0}, [USER], {"role": "assistant", "content": "Plain."})
    assert "tools" not in bodies[0] and result.stop_reason == "answered"
    assert result.completion["choices"][0]["message"]["content"] == "Plain."


def test_calls_on_a_request_without_tools_never_reach_the_client():
    history = [USER, assistant(("c1", "note", {})), tool("c1")]
    result, _ = exchange({"max_rounds": 1}, history, assistant(("x", "note", {}), content="Here."))
    message = result.completion["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Here."} and result.stop_reason == "tools_disabled"
    assert [call.reason for call in result.rounds[0].calls] == ["tools_disabled"]


def test_missing_repeated_and_reused_ids_reach_the_client_unique():
    history = [USER, assistant(("c1", "note", {})), tool("c1")]
    result, _ = exchange(
        {}, history, assistant(("c1", "note", {"n": 1}), ("", "note", {"n": 2}), ("d", "note", {"n": 3}))
    )
    ids = [call["id"] for call in result.completion["choices"][0]["message"]["tool_calls"]]
    assert len(set(ids)) == 3 and "c1" not in ids and "" not in ids and ids[2] == "d"


def test_a_call_limit_counts_the_calls_the_client_already_ran():
    history = [USER, assistant(("c1", "note", {})), tool("c1")]
    result, bodies = exchange(
        {"client_tools": {"note": {"max_calls_per_run": 1}}},
        history,
        assistant(("c2", "note", {})),
        {"role": "assistant", "content": "Fine, no more notes."},
    )
    assert bodies[1]["messages"][-1] == tool("c2", "Error: note may be called at most 1 times per run.")
    assert result.completion["choices"][0]["message"]["content"] == "Fine, no more notes."


@pytest.mark.parametrize(
    "answer",
    [
        [],
        {"choices": []},
        {"choices": [{"message": "hi"}]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": 5}}]},
        {"choices": [{"message": {"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}}]},
    ],
)
def test_an_answer_that_is_no_chat_completion_is_a_502_and_nothing_reaches_the_client(answer):
    config, _ = load_agent({"id": "a", "label": "A"})
    result = answer_request(config, read_request({"model": "m", "messages": [USER]}), lambda body: answer)
    assert result.completion is None and result.stop_reason == "error"
    assert result.error.status == 502 and result.error.message.startswith("The model's answer could not be read")


# --- Recognising a conversation when it comes back -----------------------------------------------------------------


def test_a_conversation_is_recognised_whatever_the_client_library_made_of_it():
    ours = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": assistant(("a", "note", {"n": 1}))["tool_calls"]},
    ]
    theirs = [
        {"role": "user", "content": [{"type": "text", "text": "Go."}]},
        {
            "role": "assistant",
            "content": "",
            "refusal": None,
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "note", "arguments": '{ "n" : 1 }'}}],
        },
    ]
    assert conversation_key(ours) == conversation_key(theirs)
    assert conversation_key([*ours, tool("a", "1")]) != conversation_key([*ours, tool("a", "2")])


def test_a_conversation_digested_once_gives_the_keys_of_its_answered_part_and_of_it_with_the_answer():
    earlier = {"role": "assistant", "content": None, "tool_calls": assistant(("a", "note", {"n": 1}))["tool_calls"]}
    messages = [USER, earlier, tool("a", "1")]
    answer = {"role": "assistant", "content": "Done."}
    conversation = ClientConversation(messages)
    assert conversation.point == (conversation_key(messages[:2]), 2)
    assert conversation.key_with(answer) == conversation_key([*messages, answer])
    assert conversation.key_with(answer) == conversation.key_with(answer)  # asking twice changes nothing
    assert ClientConversation([USER]).point is None


# --- Streamed -------------------------------------------------------------------------------------------------------


def test_a_streamed_answer_is_its_role_text_calls_finish_and_usage_then_done():
    message = assistant(("a", "note", {"n": 1}), content="Noting.")
    completion = {
        "id": "c",
        "created": 3,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
    chunks = as_read(completion_chunks(pieces_of(completion), include_usage=True))
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks[:-1]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "Noting."},
        {"tool_calls": [{"index": 0, "id": "a", "type": "function", "function": message["tool_calls"][0]["function"]}]},
        {},
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 3
    events = list(chat_completions.stream(pieces_of(completion), read_request({"messages": [USER]})))
    assert events[-1] == b"data: [DONE]\n\n" and len(events) == 5
