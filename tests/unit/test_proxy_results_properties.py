"""Properties of the check that a conversation's tool results answer its calls exactly once, for every API the proxy
speaks: a conversation whose results answer each call once, in any order and with text beside them, is read; the
same conversation with one result answering no call, one answering a call twice, one left out, or two calls sharing
an id is refused, and the field the refusal names is, in the client's own body, the id at fault."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import ValidationError
from engine.proxy import chat_completions, messages, responses

PROMPT = "Build it."


@st.composite
def conversations(draw):
    """The abstract conversation: ("user", text), ("calls", [ids]) and ("results", [ids], text beside or None),
    ids unique, each call answered once in the step after it, in any order."""
    steps, number = [("user", PROMPT)], 0
    for _ in range(draw(st.integers(1, 3))):
        ids = [f"call_{number + index}" for index in range(draw(st.integers(1, 3)))]
        number += len(ids)
        steps.append(("calls", ids))
        steps.append(("results", draw(st.permutations(ids)), draw(st.none() | st.just("<system-reminder>x"))))
        if draw(st.booleans()):
            steps += [("calls", []), ("user", "Next.")]
    return steps


def mutated(steps, mutation, data):
    """The conversation with one defect, and (the id at fault, what the refusal says)."""
    steps = [list(step) for step in steps]
    results = [step for step in steps if step[0] == "results"]
    step = data.draw(st.sampled_from(results), label="the results it happens to")
    answered = data.draw(st.sampled_from(step[1]), label="the call")
    if mutation == "answers no call":
        step[1] = [call_id if call_id != answered else "call_unknown" for call_id in step[1]]
        return steps, "call_unknown", "answers no call"
    if mutation == "answers a call twice":
        step[1] = [*step[1], answered]
        return steps, answered, "already has its result"
    if mutation == "leaves a call unanswered":
        step[1] = [call_id for call_id in step[1] if call_id != answered]
        return [*steps, ("user", "Go on.")], answered, "has no result"
    calls = [call_id for step in steps if step[0] == "calls" for call_id in step[1]]
    first, second = calls[0], data.draw(st.sampled_from(calls[1:]), label="the call given its id")
    for step in steps:
        if step[0] in ("calls", "results"):
            step[1] = [first if call_id == second else call_id for call_id in step[1]]
    return steps, first, "an id of its own"


def chat_body(steps):
    said = []
    for kind, *rest in steps:
        if kind == "user":
            said.append({"role": "user", "content": rest[0]})
        elif kind == "calls":
            calls = [
                {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}} for call_id in rest[0]
            ]
            said.append(
                {
                    "role": "assistant",
                    "content": "Done." if not calls else None,
                    **({"tool_calls": calls} if calls else {}),
                }
            )
        else:
            said += [{"role": "tool", "tool_call_id": call_id, "content": "ok"} for call_id in rest[0]]
            said += [{"role": "system", "content": rest[1]}] if rest[1] else []
    return {"model": "m", "messages": said}


def messages_body(steps):
    said = []
    for kind, *rest in steps:
        if kind == "user":
            said.append({"role": "user", "content": rest[0]})
        elif kind == "calls":
            blocks = [{"type": "tool_use", "id": call_id, "name": "f", "input": {}} for call_id in rest[0]]
            said.append({"role": "assistant", "content": blocks or [{"type": "text", "text": "Done."}]})
        else:
            blocks = [{"type": "tool_result", "tool_use_id": call_id, "content": "ok"} for call_id in rest[0]]
            blocks += [{"type": "text", "text": rest[1]}] if rest[1] else []
            said += [{"role": "user", "content": blocks}] if blocks else []
    return {"model": "claude-x", "max_tokens": 10, "messages": said}


def responses_body(steps):
    said = []
    for kind, *rest in steps:
        if kind == "user":
            said.append({"type": "message", "role": "user", "content": rest[0]})
        elif kind == "calls":
            said += [
                {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"} for call_id in rest[0]
            ]
            said += [] if rest[0] else [{"type": "message", "role": "assistant", "content": "Done."}]
        else:
            said += [{"type": "function_call_output", "call_id": call_id, "output": "ok"} for call_id in rest[0]]
            said += [{"type": "message", "role": "developer", "content": rest[1]}] if rest[1] else []
    return {"model": "m", "input": said}


APIS = [(chat_completions, chat_body), (messages, messages_body), (responses, responses_body)]


def value_at(body, field):
    """The value the client's field names in its body: `messages[2].content[0].tool_use_id`."""
    value = body
    for name, index in re.findall(r"\.?([a-z_]+)|\[(\d+)\]", field):
        value = value[int(index)] if index else value[name]
    return value


@pytest.mark.parametrize(("api", "body_of"), APIS, ids=[api.NAME for api, _ in APIS])
@settings(deadline=None)
@given(steps=conversations())
def test_results_that_answer_each_call_once_in_any_order_are_read(api, body_of, steps):
    request = api.read(body_of(steps))
    assert [message["tool_call_id"] for message in request.messages if message["role"] == "tool"] == [
        call_id for step in steps if step[0] == "results" for call_id in step[1]
    ]


@pytest.mark.parametrize(("api", "body_of"), APIS, ids=[api.NAME for api, _ in APIS])
@settings(deadline=None)
@given(
    steps=conversations(),
    mutation=st.sampled_from(
        ["answers no call", "answers a call twice", "leaves a call unanswered", "two calls share an id"]
    ),
    data=st.data(),
)
def test_a_defect_in_the_results_is_refused_naming_the_clients_field_that_holds_the_id_at_fault(
    api, body_of, steps, mutation, data
):
    if mutation == "two calls share an id" and sum(len(step[1]) for step in steps if step[0] == "calls") < 2:
        return
    steps, at_fault, why = mutated(steps, mutation, data)
    body = body_of(steps)
    with pytest.raises(ValidationError) as raised:
        api.read(body)
    assert why in str(raised.value)
    assert value_at(body, raised.value.field) == at_fault
