"""The Responses API's translation (engine.proxy.responses) for random conversations — text, parallel calls, their
results and errors: Responses items read into the canonical chat conversation and written back as the items a
client holds keep every call id, name, argument and result in order; and those items read again give the same
conversation, so a client that sends back what it got continues the run its earlier request recorded."""

import json

from hypothesis import given
from hypothesis import strategies as st

from engine.proxy import responses
from engine.proxy.recording import conversation_key
from engine.proxy.stream import pieces_of

NAMES = ("place", "read", "note")
TOOLS = [{"type": "function", "name": name, "parameters": {"type": "object"}} for name in NAMES]
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
arguments = st.dictionaries(st.sampled_from(("component", "doc", "n")), st.one_of(texts, st.integers()), max_size=2)
results = st.one_of(texts, texts.map(lambda text: f"Error: {text}"))


@st.composite
def conversations(draw):
    """Responses input items: user turns, each answered by steps of text and parallel calls with their results."""
    items, number = [], 0
    for _ in range(draw(st.integers(1, 3))):
        items.append({"type": "message", "role": "user", "content": draw(texts)})
        for _ in range(draw(st.integers(0, 3))):
            text = draw(texts)
            if text:
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
                )
            calls = []
            for _ in range(draw(st.integers(0, 3))):
                number += 1
                arguments_text = json.dumps(draw(arguments))
                calls.append(
                    {
                        "type": "function_call",
                        "call_id": f"call_{number}",
                        "name": draw(st.sampled_from(NAMES)),
                        "arguments": arguments_text,
                    }
                )
            items += calls
            items += [
                {"type": "function_call_output", "call_id": call["call_id"], "output": draw(results)} for call in calls
            ]
    return items


def calls_and_results(items):
    """What must survive the round trip: each call's id, name and arguments, each result, each text, in order."""
    kept = []
    for item in items:
        if item["type"] == "function_call":
            kept.append(("call", item["call_id"], item["name"], json.loads(item["arguments"])))
        elif item["type"] == "function_call_output":
            kept.append(("result", item["call_id"], item["output"]))
        elif item["content"]:
            text = (
                item["content"]
                if isinstance(item["content"], str)
                else "".join(part["text"] for part in item["content"])
            )
            kept.append((item["role"], text))
    return kept


def items_the_client_holds(messages, request):
    """The chat conversation back as Responses items: each assistant message as the output of the response that
    answers with it (what a client receives and sends back), each tool message as the result of its call."""
    items = []
    for message in messages:
        if message["role"] == "assistant":
            completion = {
                "id": "c",
                "created": 1,
                "model": "m",
                "choices": [{"message": message, "finish_reason": "stop"}],
            }
            *_, last = responses.response_events(pieces_of(completion), request)
            items += [
                {key: value for key, value in item.items() if key not in ("id", "status")}
                for item in last["response"]["output"]
            ]
        elif message["role"] == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
            )
        else:
            items.append({"type": "message", "role": message["role"], "content": message["content"]})
    return items


@given(conversations())
def test_responses_to_chat_completions_to_responses_keeps_every_call_and_result_in_order(items):
    request = responses.read({"model": "m", "input": items, "tools": TOOLS})
    back = items_the_client_holds(request.messages, request)

    assert calls_and_results(back) == calls_and_results(items)
    again = responses.read({"model": "m", "input": back, "tools": TOOLS})
    assert conversation_key(again.messages) == conversation_key(request.messages)
