"""The policy proxy's Responses API fed generated bodies: any items, tools and settings (lone surrogates, NaN, odd
shapes, references to nothing). Never a server error (the test app lets exceptions through); every refusal is a
4xx in OpenAI's error shape and stores no run; every answer is a response object or its event stream."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import make_app

SURROGATES = st.sampled_from(["\ud800", "\udfff"])
text = st.text(st.characters() | SURROGATES, max_size=8) | st.sampled_from(["", "user", "assistant", "note", "resp_x"])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
json_values = st.recursive(
    scalars, lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3), max_leaves=8
)
item_types = st.sampled_from(["message", "function_call", "function_call_output", "item_reference", "reasoning"])
parts = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["input_text", "output_text", "input_image", "refusal"]) | text},
        optional={"text": text | json_values, "image_url": text, "refusal": text},
    ),
    max_size=2,
)
items = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "type": item_types | text,
            "role": st.sampled_from(["user", "system", "developer", "assistant"]) | text,
            "content": text | parts | json_values,
            "call_id": text,
            "name": st.just("note") | text,
            "arguments": text | json_values,
            "output": text | parts | json_values,
            "id": st.sampled_from(["msg_x_0", "fc_x_1"]) | text,
        },
    ),
    max_size=4,
)
tools = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["function", "web_search", "mcp"]) | text},
        optional={"name": st.just("note") | text, "parameters": json_values, "strict": json_values},
    ),
    max_size=2,
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": text | json_values,
        "input": text | items | json_values,
        "instructions": text | json_values,
        "tools": tools | json_values,
        "tool_choice": st.sampled_from(["auto", "required"]) | json_values,
        "stream": st.booleans() | json_values,
        "store": st.booleans() | json_values,
        "previous_response_id": text | json_values,
        "max_output_tokens": st.integers(-1, 5) | json_values,
        "text": json_values,
        "temperature": json_values,
    },
)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = make_app(tmp_path_factory.mktemp("responses_hostile"))
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
        assert response.json["object"] == "response" and response.json["id"].startswith("resp_")
        assert response.headers["X-Toolgate-Run"]
    else:
        assert response.get_data(as_text=True).startswith("event: response.created\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_any_json_body_is_answered_or_refused_in_openais_shape(client, body):
    before = runs(client)
    data = json.dumps(body).encode("utf-8", "surrogatepass")
    response = client.post("/proxy/chat/v1/responses", data=data, content_type="application/json")
    check(client, response, before)
