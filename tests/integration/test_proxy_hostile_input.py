"""The policy proxy fed generated bodies: chat-completions requests with anything in their fields (lone surrogates,
NaN, odd shapes, any nesting) and arbitrary bytes. Never a server error (the test app lets exceptions through);
every refusal is a 4xx in OpenAI's error shape and stores no run; every answer is a chat completion."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import make_app

SURROGATES = st.sampled_from(["\ud800", "\udfff"])
text = st.text(st.characters() | SURROGATES, max_size=8) | st.sampled_from(["", "user", "assistant", "tool", "note"])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
json_values = st.recursive(
    scalars, lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3), max_leaves=8
)
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


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = make_app(tmp_path_factory.mktemp("proxy_hostile"))
    client = app.test_client()
    agent = {"label": "Chat", "client_tools": {"note": {"restrict_multiple_calls": True}}, "script": []}
    assert client.put("/api/agents/chat", json=agent).status_code == 201
    return client


def runs(client):
    return client.get("/api/runs").json["total"]


def check(client, response, before):
    assert response.status_code < 500
    if response.status_code >= 400:
        assert set(response.json["error"]) == {"message", "type", "param", "code"}
        assert runs(client) == before
    elif response.mimetype == "application/json":
        assert response.json["choices"][0]["message"]["role"] == "assistant"
        assert response.headers["X-Toolgate-Run"]
    else:
        assert response.get_data(as_text=True).endswith("data: [DONE]\n\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_any_json_body_is_answered_or_refused_in_openais_shape(client, body):
    before = runs(client)
    data = json.dumps(body).encode("utf-8", "surrogatepass")
    response = client.post("/proxy/chat/v1/chat/completions", data=data, content_type="application/json")
    check(client, response, before)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=120))
def test_any_bytes_are_refused_in_openais_shape(client, data):
    before = runs(client)
    response = client.post("/proxy/chat/v1/chat/completions", data=data, content_type="application/json")
    check(client, response, before)
