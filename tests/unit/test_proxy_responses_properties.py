"""The Responses API's translation (engine.proxy.responses) for random conversations — text, parallel calls, their
results and errors: Responses items read into the canonical chat conversation and written back as the items a
client holds keep every call id, name, argument and result in order; and those items read again give the same
conversation, so a client that sends back what it got continues the run its earlier request recorded — whether it
sends its whole input, its earlier output by item_reference, or only its new items with previous_response_id."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import load_agent
from engine.proxy import responses
from engine.proxy.recording import conversation_key
from engine.proxy.serve import RunsInMemory, answer_and_record
from engine.proxy.stream import pieces_of
from engine.proxy.upstream import upstream_for_agent

NAMES = ("place", "read", "note")
TOOLS = [{"type": "function", "name": name, "parameters": {"type": "object"}} for name in NAMES]
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
arguments = st.dictionaries(st.sampled_from(("component", "doc", "n")), st.one_of(texts, st.integers()), max_size=2)
outputs = st.one_of(texts, texts.map(lambda text: f"Error: {text}"))  # what a call gave back: a result or an error


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
                {"type": "function_call_output", "call_id": call["call_id"], "output": draw(outputs)} for call in calls
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


@st.composite
def scripted_conversations(draw):
    """(the scripted model's responses: steps of text and parallel calls, then an answer; how the client sends each
    request after the first: its whole input, its earlier output by item_reference, or only its new items with
    previous_response_id)."""
    script, number = [], 0
    for _ in range(draw(st.integers(0, 4))):
        calls = []
        for _ in range(draw(st.integers(1, 3))):
            number += 1
            calls.append({"id": f"call_{number}", "name": draw(st.sampled_from(NAMES)), "arguments": draw(arguments)})
        script.append({"content": draw(texts), "tool_calls": calls})
    script.append({"content": draw(texts) or "Done."})
    ways = draw(
        st.lists(st.sampled_from(["whole", "reference", "previous"]), min_size=len(script), max_size=len(script))
    )
    return script, ways


@settings(deadline=None)
@given(scripted_conversations(), st.data())
def test_a_conversation_sent_whole_by_reference_or_by_previous_response_is_one_run(conversation, data):
    script, ways = conversation
    config, agent = load_agent({"id": "p", "label": "P", "script": script, "max_rounds": 50})
    ask, runs, kept = upstream_for_agent(config), RunsInMemory(), {}
    held, by_reference, new_items, previous_id = [], [], [{"role": "user", "content": "Go."}], None
    got, sent = [], {}
    for way in ways:
        body = {"model": "m", "tools": TOOLS}
        if way == "previous" and previous_id is not None:
            body |= {"input": new_items, "previous_response_id": previous_id}
        else:
            body["input"] = [*(by_reference if way == "reference" else held), *new_items]
        request = responses.read(body, kept.get)
        exchange, run = answer_and_record(config, agent, request, ask, runs)
        response = responses.answer(exchange, request)
        kept[response["id"]] = responses.kept(exchange, request)
        calls = [item for item in response["output"] if item["type"] == "function_call"]
        got += [(call["call_id"], call["name"], json.loads(call["arguments"])) for call in calls]
        results = [
            {"type": "function_call_output", "call_id": call["call_id"], "output": data.draw(outputs)} for call in calls
        ]
        sent |= {result["call_id"]: result["output"] for result in results}
        held += [*new_items, *response["output"]]
        by_reference += [*new_items, *({"type": "item_reference", "id": item["id"]} for item in response["output"])]
        new_items, previous_id = results, response["id"]
        if not calls:
            break

    assert len(runs.runs) == 1 and run["stop_reason"] == "answered"
    scripted = [(call["id"], call["name"], call["arguments"]) for step in script for call in step.get("tool_calls", [])]
    assert got == scripted
    ran = [call for round_ in run["rounds"] for call in round_["calls"] if call.get("run_by") == "client"]
    assert [(call["id"], call["output"]) for call in ran] == list(sent.items())
