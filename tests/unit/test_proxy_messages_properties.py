"""Properties of the Messages API translation (engine.proxy.messages), for random conversations of text, parallel
tool calls and their results (errors among them): Messages → Chat Completions keeps every call id, name, input and
result, in order, each result right after the calls it answers; Chat Completions → Messages gives every assistant
turn back as the client sent it; the stream, read by the `anthropic` SDK's own parser, is the same message as the
answer; and a client that sends back what it got continues the recorded conversation."""

import json

from anthropic._streaming import SSEDecoder
from anthropic.lib.streaming._messages import accumulate_event
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.proxy.messages import ERROR_PREFIX, message_of, read, stream
from engine.proxy.recording import ClientConversation, conversation_key
from engine.proxy.stream import pieces_of

NAMES = ("place", "read_page", "note")
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
inputs = st.dictionaries(texts, json_values, max_size=4)
text_blocks = st.lists(texts.map(lambda text: {"type": "text", "text": text}), min_size=1, max_size=2)


@st.composite
def conversations(draw):
    """[user text, (assistant turn, user turn with a result per call and maybe some text)…], ids unique."""
    messages = [{"role": "user", "content": draw(texts | text_blocks)}]
    for turn in range(draw(st.integers(0, 3))):
        count = draw(st.integers(0, 3))
        calls = [
            {
                "type": "tool_use",
                "id": f"toolu_{turn}_{number}",
                "name": draw(st.sampled_from(NAMES)),
                "input": draw(inputs),
            }
            for number in range(count)
        ]
        said = draw(st.lists(texts.map(lambda text: {"type": "text", "text": text}), max_size=1 if calls else 2))
        messages.append({"role": "assistant", "content": [*said, *calls]})
        results = []
        for call in calls:
            content = draw(texts | text_blocks | st.none())
            result = {"type": "tool_result", "tool_use_id": call["id"], "is_error": draw(st.booleans())}
            results.append(result if content is None else {**result, "content": content})
        more = draw(st.lists(texts.map(lambda text: {"type": "text", "text": text}), max_size=1 if results else 2))
        if results or more:
            messages.append({"role": "user", "content": [*results, *more]})
    return messages


def body_of(messages):
    tools = [{"name": name, "input_schema": {"type": "object"}} for name in NAMES]
    return {"model": "claude-x", "max_tokens": 100, "messages": messages, "tools": tools}


def text_of(content):
    if content is None:
        return ""
    return content if isinstance(content, str) else "\n\n".join(block["text"] for block in content)


def completion_with(message, finish_reason="tool_calls", usage=(7, 3, 10)):
    usage = dict(zip(("prompt_tokens", "completion_tokens", "total_tokens"), usage, strict=True))
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [choice],
        "usage": usage,
    }


@settings(deadline=None)
@given(conversations())
def test_every_call_and_result_reaches_the_chat_conversation_in_order(messages):
    chat = read(body_of(messages)).messages

    sent_calls = [block for message in messages if message["role"] == "assistant" for block in message["content"]]
    sent_calls = [(block["id"], block["name"], block["input"]) for block in sent_calls if block["type"] == "tool_use"]
    chat_calls = [call for message in chat for call in message.get("tool_calls") or []]
    assert [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])) for call in chat_calls
    ] == (sent_calls)
    sent_results = [
        block for message in messages if isinstance(message["content"], list) for block in message["content"]
    ]
    sent_results = [block for block in sent_results if block["type"] == "tool_result"]
    tool_messages = [message for message in chat if message["role"] == "tool"]
    assert [message["tool_call_id"] for message in tool_messages] == [block["tool_use_id"] for block in sent_results]
    for message, block in zip(tool_messages, sent_results, strict=True):
        text = text_of(block.get("content"))
        if block["is_error"]:
            assert message["content"] in (text, ERROR_PREFIX + text) and message["content"].startswith(ERROR_PREFIX)
        else:
            assert message["content"] == text
    # Each result follows the calls it answers, before the text its turn goes on with.
    for index, message in enumerate(chat):
        if message["role"] == "tool":
            assert chat[index - 1]["role"] in ("assistant", "tool")


STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "end_turn"}


@settings(deadline=None)
@given(conversations(), st.sampled_from(list(STOP_REASONS)))
def test_each_assistant_turn_comes_back_as_the_client_sent_it_and_streams_as_the_same_message(messages, finish):
    chat = read(body_of(messages)).messages
    sent = [message for message in messages if message["role"] == "assistant"]
    answered = [message for message in chat if message["role"] == "assistant"]
    for original, message in zip(sent, answered, strict=True):
        completion = completion_with(message, finish)
        answer = message_of(pieces_of(completion))
        said = "".join(block["text"] for block in original["content"] if block["type"] == "text")
        calls = [block for block in original["content"] if block["type"] == "tool_use"]
        assert answer["content"] == [*([{"type": "text", "text": said}] if said else []), *calls]
        assert answer["stop_reason"] == ("tool_use" if calls else STOP_REASONS[finish])
        assert answer["usage"] == {"input_tokens": 7, "output_tokens": 3}

        snapshot, json_buffers = None, {}
        for event in SSEDecoder().iter_bytes(iter(stream(pieces_of(completion), None))):
            assert event.event == event.json()["type"]
            snapshot = accumulate_event(event=event.json(), current_snapshot=snapshot, json_bufs=json_buffers)
        streamed = snapshot.to_dict()
        for key in ("content", "stop_reason", "usage", "role", "type"):
            assert streamed[key] == answer[key]


@settings(deadline=None)
@given(conversations(), st.booleans())
def test_a_client_that_sends_back_what_it_got_continues_the_recorded_conversation(messages, compact):
    """The key the proxy records after answering — the client's conversation with the upstream's answer, its content
    null when it said nothing and its arguments as the upstream wrote them — is the key of the next request's
    conversation up to that answer, once the client sends the answer back in Messages' shape."""
    cut = max((index for index, message in enumerate(messages) if message["role"] == "assistant"), default=None)
    if cut is None:
        return
    said = "".join(block["text"] for block in messages[cut]["content"] if block["type"] == "text")
    calls = [block for block in messages[cut]["content"] if block["type"] == "tool_use"]
    upstream_answer = {"role": "assistant", "content": said or None}
    if calls:
        upstream_answer["tool_calls"] = [
            {
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": arguments(block, compact)},
            }
            for block in calls
        ]
    recorded = ClientConversation(read(body_of(messages[:cut])).messages).key_with(upstream_answer)
    answer = message_of(pieces_of(completion_with(upstream_answer)))
    sent_back = [*messages[:cut], {"role": "assistant", "content": answer["content"]}]
    assert conversation_key(read(body_of(sent_back)).messages) == recorded


def arguments(block, compact):
    """A call's arguments as an upstream writes them: compact JSON, or nothing at all for no arguments."""
    if compact:
        return json.dumps(block["input"], separators=(",", ":")) if block["input"] else ""
    return json.dumps(block["input"], indent=1)
