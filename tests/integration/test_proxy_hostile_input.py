"""The policy proxy fed generated bodies: chat-completions requests with anything in their fields (lone surrogates,
NaN, odd shapes, any nesting) and arbitrary bytes. Never a server error; every refusal is a 4xx in OpenAI's error
shape and stores no run; every answer is a chat completion (tests/proxy_hostile.py)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.proxy_hostile import hostile_client, post_answered_or_refused
from tests.strategies import hostile_json, hostile_text

text = hostile_text("user", "assistant", "tool", "note")
json_values = hostile_json(text)
calls = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "id": text,
            "type": text,
            "function": st.fixed_dictionaries({}, optional={"name": text, "arguments": text | json_values}),
        },
    ),
    max_size=3,
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"]) | text},
        optional={"content": text | json_values, "tool_calls": calls | json_values, "tool_call_id": text},
    ),
    max_size=4,
)
tools = st.lists(
    st.fixed_dictionaries(
        {"type": st.just("function") | text},
        optional={
            "function": st.fixed_dictionaries(
                {"name": st.just("note") | text}, optional={"parameters": json_values, "description": text}
            )
        },
    ),
    max_size=2,
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": text | json_values,
        "messages": messages | json_values,
        "tools": tools | json_values,
        "stream": st.booleans() | json_values,
        "stream_options": json_values,
        "n": st.integers(0, 3) | json_values,
        "tool_choice": json_values,
    },
)


PATH = "/proxy/chat/v1/chat/completions"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return hostile_client(tmp_path_factory.mktemp("proxy_hostile"))


def check(client, data):
    post_answered_or_refused(
        client,
        PATH,
        data,
        refused=lambda body: set(body["error"]) == {"message", "type", "param", "code"},
        answered=lambda body: body["choices"][0]["message"]["role"] == "assistant",
        streamed=lambda text: text.endswith("data: [DONE]\n\n"),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_any_json_body_is_answered_or_refused_in_openais_shape(client, body):
    check(client, json.dumps(body).encode("utf-8", "surrogatepass"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=120))
def test_any_bytes_are_refused_in_openais_shape(client, data):
    check(client, data)
