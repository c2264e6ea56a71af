"""Properties of a streamed answer that ends before it is complete (issues 30 and 31), for random text written in
random chunks: an upstream that fails after the stream began ends the client's stream with its API's own error event
(Chat Completions' error chunk, the Messages `error` event, the Responses `response.failed`) carrying the error, after
every text delta it had written; and whether the upstream failed or the client went away, the run's answer is
exactly the text the client was sent."""

from hypothesis import given
from hypothesis import strategies as st

from engine.config import load_agent
from engine.proxy import chat_completions, messages, responses
from engine.proxy.core import ProxyExchange, UpstreamError
from engine.proxy.request import read_request
from engine.proxy.stream import Failure, LiveAnswer, Start, Text
from tests.stream_support import as_read

chunks = st.lists(st.text(min_size=1, max_size=12), max_size=6)
failures = st.builds(Failure, st.sampled_from([429, 500, 502, 504]), st.text(min_size=1, max_size=40))


def pieces(texts, failure):
    return [Start("up-1", "m", 1), *(Text(text) for text in texts), failure]


@given(chunks, failures)
def test_a_failed_chat_completions_stream_ends_with_the_error_after_every_delta(texts, failure):
    events = as_read(chat_completions.completion_chunks(pieces(texts, failure)))
    deltas = [event["choices"][0]["delta"].get("content") or "" for event in events[:-1]]
    assert "".join(deltas) == "".join(texts)
    assert events[-1]["error"]["message"] == failure.message


@given(chunks, failures)
def test_a_failed_messages_stream_ends_with_an_error_event_after_every_delta(texts, failure):
    events = list(messages.message_events(pieces(texts, failure)))
    deltas = [event["delta"]["text"] for event in events if event["type"] == "content_block_delta"]
    assert "".join(deltas) == "".join(texts)
    assert events[-1] == messages.error_body(failure.status, failure.message)


@given(chunks, failures)
def test_a_failed_responses_stream_ends_with_response_failed_carrying_the_text_sent(texts, failure):
    request = responses.read({"model": "m", "input": "Hi"})
    events = list(responses.response_events(pieces(texts, failure), request))
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    deltas = [event["delta"] for event in events if event["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "".join(texts)
    failed = events[-1]
    assert failed["type"] == "response.failed"
    response = failed["response"]
    assert response["status"] == "failed" and response["error"]["message"] == failure.message
    assert response["error"]["code"] == ("rate_limit_exceeded" if failure.status == 429 else "server_error")
    written = [part["text"] for item in response["output"] for part in item["content"]]
    assert written == ([("".join(texts))] if texts else [])


class FailingUpstream:
    """An upstream that streams `texts`, then fails (or, with `error` None, would go on forever)."""

    def __init__(self, texts, error):
        self.texts = texts
        self.error = error

    def stream(self, body):
        head = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        yield {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
        for text in self.texts:
            yield {**head, "choices": [{"index": 0, "delta": {"content": text}}]}
        if self.error is not None:
            raise self.error
        while True:
            yield {**head, "choices": [{"index": 0, "delta": {"content": "more "}}]}


def live_answer(upstream):
    config, _ = load_agent({"id": "canvas", "label": "Canvas"})
    request = read_request({"model": "m", "messages": [{"role": "user", "content": "Hi."}], "stream": True})
    return LiveAnswer(ProxyExchange(config, request), upstream, "own")


@given(chunks, failures)
def test_a_run_whose_upstream_failed_mid_stream_records_the_text_the_client_was_sent(texts, failure):
    live = live_answer(FailingUpstream(texts, UpstreamError(failure.status, failure.message)))
    sent = list(live.pieces())
    assert sent[-1] == failure
    shown = "".join(piece.text for piece in sent if isinstance(piece, Text))
    assert shown == "".join(texts)
    assert (live.exchange.stop_reason, live.exchange.error.message) == ("error", failure.message)
    assert live.exchange.answer == (shown or None)


@given(chunks, st.integers(0, 8))
def test_a_run_its_client_cancelled_mid_stream_records_the_text_it_was_sent_as_cancelled(texts, read):
    live = live_answer(FailingUpstream(texts, None))
    stream = live.pieces()
    sent = [next(stream) for _ in range(read + 1)]  # the Start, then as many pieces as the client read
    stream.close()
    shown = "".join(piece.text for piece in sent if isinstance(piece, Text))
    assert (live.exchange.stop_reason, live.exchange.error) == ("cancelled", None)
    assert live.exchange.answer == (shown or None)
    assert live.exchange.log == ()  # a cancelled request is not a provider error
