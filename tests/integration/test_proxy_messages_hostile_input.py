"""The policy proxy's Messages API fed generated bodies: Anthropic requests with anything in their fields (lone
surrogates, NaN, odd shapes, any nesting) and arbitrary bytes. Never a server error; every refusal is a 4xx in
Anthropic's error shape and stores no run; every answer is a message (tests/proxy_hostile.py)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.proxy_hostile import hostile_client, post_answered_or_refused
from tests.strategies import hostile_json, hostile_text

text = hostile_text("user", "assistant", "note", "text")
json_values = hostile_json(text)
kinds = st.sampled_from(["text", "tool_use", "tool_result", "image", "document", "thinking"]) | text
blocks = st.lists(
    st.fixed_dictionaries(
        {"type": kinds},
        optional={
            "text": text | json_values,
            "id": text | json_values,
            "name": st.just("note") | text,
            "input": json_values,
            "tool_use_id": text | json_values,
            "content": text | json_values,
            "is_error": st.booleans() | json_values,
        },
    ),
    max_size=3,
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]) | text}, optional={"content": text | blocks | json_values}
    ),
    max_size=4,
)
tools = st.lists(
    st.fixed_dictionaries(
        {"name": st.just("note") | text},
        optional={
            "type": st.sampled_from(["custom", "web_search_20250305"]) | json_values,
            "input_schema": json_values,
        },
    ),
    max_size=2,
)
FIELDS = {
    "model": text | json_values,
    "max_tokens": st.integers(-1, 100) | json_values,
    "system": text | blocks | json_values,
    "messages": messages | json_values,
    "tools": tools | json_values,
    "tool_choice": st.fixed_dictionaries(
        {"type": st.sampled_from(["auto", "any", "tool", "none"]) | text},
        optional={"name": st.just("note") | text, "disable_parallel_tool_use": st.booleans() | json_values},
    )
    | json_values,
    "stream": st.booleans() | json_values,
    "stop_sequences": st.lists(text, max_size=2) | json_values,
    "temperature": st.floats() | json_values,
}
# A body answered as it is, that body with one field spoiled, and bodies made of anything.
WELL_FORMED = {
    "model": "claude-x",
    "max_tokens": 64,
    "system": "Be brief.",
    "messages": [{"role": "user", "content": "Place a note."}],
    "tools": [{"name": "note", "input_schema": {"type": "object"}}],
}
bodies = (
    st.just(WELL_FORMED)
    | st.one_of(
        *(values.map(lambda value, field=field: {**WELL_FORMED, field: value}) for field, values in FIELDS.items())
    )
    | st.fixed_dictionaries({}, optional=FIELDS)
)


PATH = "/proxy/chat/v1/messages"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return hostile_client(tmp_path_factory.mktemp("messages_hostile"))


def check(client, data):
    post_answered_or_refused(
        client,
        PATH,
        data,
        refused=lambda body: body["type"] == "error" and set(body["error"]) == {"type", "message"},
        answered=lambda body: body["type"] == "message" and body["role"] == "assistant",
        streamed=lambda text: text.endswith('event: message_stop\ndata: {"type": "message_stop"}\n\n'),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_any_json_body_is_answered_or_refused_in_anthropics_shape(client, body):
    check(client, json.dumps(body).encode("utf-8", "surrogatepass"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=120))
def test_any_bytes_are_refused_in_anthropics_shape(client, data):
    check(client, data)
