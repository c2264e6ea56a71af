"""Properties of a streamed proxied answer (engine.proxy.stream.LiveAnswer), for random agents, random upstream
answers and random chunk boundaries: the client never receives a piece of a call the gate did not pass, its calls
are exactly the non-streamed answer's, its text is every text the upstream wrote for the request, in order, and
every transcript sent upstream answers each call id once."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import load_agent
from engine.proxy.core import ProxyExchange, answer_request
from engine.proxy.request import read_request
from engine.proxy.stream import Call, End, LiveAnswer, Start, Text
from tests.doubles import ModelDouble
from tests.unit.test_proxy_properties import (
    TOOLS,
    agents,
    answers,
    assert_every_call_id_answered_once,
    assert_passes_the_gate,
    assistant,
)


class ChunkedUpstream(ModelDouble):
    """The same answers as the proxy properties' upstream, streamed as a server sends them: cut at random
    boundaries, some text before the calls, some after, call ids and names first and arguments in parts."""

    def __init__(self, answers, texts, cuts):
        super().__init__(*map(assistant, answers), then=assistant("text"), ignores_tools=True)
        self.texts = texts
        self.cuts = cuts

    def completion(self, body):
        completion = self.answer(body)
        number = len(self.bodies) - 1
        message = completion["choices"][0]["message"]
        if message.get("tool_calls"):  # text beside calls, as models write it
            message["content"] = self.texts[number % len(self.texts)] or None
        return completion

    def stream(self, body):
        message = self.completion(body)["choices"][0]["message"]
        head = {"id": f"up-{len(self.bodies)}", "object": "chat.completion.chunk", "created": 1, "model": "m"}

        def chunk(delta, finish_reason=None):
            return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        yield chunk({"role": "assistant", "content": ""})
        text = message.get("content") or ""
        cut = self.cuts[len(self.bodies) % len(self.cuts)] % (len(text) + 1)
        for part in (text[:cut], text[cut:]):
            if part:
                yield chunk({"content": part})
        for index, call in enumerate(message.get("tool_calls") or []):
            opening = {"index": index, "id": call["id"], "type": "function"}
            yield chunk({"tool_calls": [{**opening, "function": {"name": call["function"]["name"], "arguments": ""}}]})
            arguments = call["function"]["arguments"]
            cut = self.cuts[index % len(self.cuts)] % (len(arguments) + 1)
            for part in (arguments[:cut], arguments[cut:]):
                if part:
                    yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        yield chunk({}, "tool_calls" if message.get("tool_calls") else "stop")
        yield {**head, "choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}


def paragraphs(texts):
    """The texts as a client reads them streamed one after the other: a response's text after another's begins a
    paragraph of its own (unless a space already parts them)."""
    joined = ""
    for text in texts:
        if text and joined and not joined[-1].isspace() and not text[0].isspace():
            joined += "\n\n"
        joined += text
    return joined


texts = st.lists(st.sampled_from(["", "Placing.", "One moment, ", "Done with that."]), min_size=1, max_size=3)
cuts = st.lists(st.integers(0, 40), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=agents(), upstream_answers=answers, texts=texts, cuts=cuts)
def test_a_live_stream_hands_over_only_gated_calls_and_the_text_the_upstream_wrote(
    agent, upstream_answers, texts, cuts
):
    config, _ = load_agent(agent)
    request = read_request({"model": "m", "messages": [{"role": "user", "content": "Build it."}], "tools": TOOLS})

    streamed_upstream = ChunkedUpstream(upstream_answers, texts, cuts)
    live = LiveAnswer(ProxyExchange(config, request), streamed_upstream, "own")
    pieces = list(live.pieces())

    plain_upstream = ChunkedUpstream(upstream_answers, texts, cuts)
    plain = answer_request(config, request, plain_upstream.completion)

    assert isinstance(pieces[0], Start) and isinstance(pieces[-1], End)
    calls = [piece for piece in pieces if isinstance(piece, Call)]
    expected = plain.completion["choices"][0]["message"].get("tool_calls") or []
    assert [(call.id, call.name, json.loads(call.arguments or "{}")) for call in calls] == [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"] or "{}")) for call in expected
    ]
    kinds = [type(piece).__name__ for piece in pieces]
    assert "Text" not in kinds[kinds.index("Call") :] if calls else True  # a call only once its response is whole
    text = "".join(piece.text for piece in pieces if isinstance(piece, Text))
    # Every response of the request wrote its text to the client as it came, hidden ones included; an answer the
    # proxy gave itself (the cap message) follows it.
    written = [round_.response.content or "" for round_ in live.exchange.rounds]
    own = plain.completion["choices"][0]["message"].get("content") or ""
    last = written[-1] if written else ""
    assert text == paragraphs(written if own == last else [*written, own])
    # What the run records is what the client received.
    assert (live.exchange.completion["choices"][0]["message"].get("content") or "") == text
    assert_passes_the_gate(config, request, live.exchange.completion["choices"][0]["message"])
    assert streamed_upstream.bodies == plain_upstream.bodies
    for body in streamed_upstream.bodies:
        assert_every_call_id_answered_once(body["messages"])
