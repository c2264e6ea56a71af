"""Properties of the bytes a streaming client receives now that text deltas are written into a chunk written once
per stream (engine.proxy.stream.TextTemplate) instead of a chunk built and serialized for each, and of the upstream's
chunks read without walking those that cannot hold the key: for any stream of text chunks, whatever the ids, model
and text (quotes, escapes, control characters, any script), the client reads the same bytes, hence the same events,
as when every chunk was serialized whole; and a chunk left unwalked never held the key."""

import json

from hypothesis import given
from hypothesis import strategies as st

from engine.proxy import chat_completions
from engine.proxy.forward import _may_hold
from engine.proxy.request import read_request
from engine.proxy.stream import TEXT, End, Start, Text
from engine.redaction import redact
from tests.stream_support import read_events

texts = st.lists(st.text(min_size=1, max_size=20) | st.just(TEXT) | st.just('"}]}'), max_size=8)
names = st.text(max_size=12) | st.just(TEXT)
starts = st.builds(
    Start,
    names,
    names,
    st.integers(0, 2**40),
    st.dictionaries(st.just("system_fingerprint"), names, max_size=1),
)


def serialized_whole(start, texts, include_usage):
    """The chunks as the proxy wrote them before, each one built and serialized whole."""
    head = {"id": start.id, "object": "chat.completion.chunk", "created": start.created, "model": start.model}
    head.update(start.extra)
    if include_usage:
        head["usage"] = None

    def chunk(delta, finish_reason=None):
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}

    chunks = [chunk({"role": "assistant", "content": ""}), *(chunk({"content": text}) for text in texts)]
    chunks.append(chunk({}, "stop"))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": {"total_tokens": 3}})
    return [f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


@given(starts, texts, st.booleans())
def test_a_stream_of_text_reaches_the_client_as_the_same_bytes_and_events_as_when_each_chunk_was_serialized(
    start, texts, include_usage
):
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    pieces = [start, *(Text(text) for text in texts), End("stop", {"total_tokens": 3})]
    written = list(chat_completions.stream(pieces, read_request(body)))
    before = serialized_whole(start, texts, include_usage)
    assert written == before
    assert read_events(written) == read_events(before)
    assert [event["choices"][0]["delta"].get("content") for event in read_events(written)[1 : len(texts) + 1]] == texts


secrets = st.text(min_size=8, max_size=16)


@given(secrets, st.lists(st.text(max_size=12), max_size=4), st.booleans(), st.booleans())
def test_an_upstream_chunk_not_walked_for_the_key_never_holds_it(secret, words, with_key, ascii_only):
    text = secret.join(words) if with_key else "".join(words)
    chunk = {"id": "up-1", "choices": [{"index": 0, "delta": {"content": text}}]}
    data = json.dumps(chunk, ensure_ascii=ascii_only)
    if not _may_hold(data, secret):
        assert redact(json.loads(data), secret) == chunk
