"""The policy proxy's Responses API fed generated bodies: any items, tools and settings (lone surrogates, NaN, odd
shapes, references to nothing). Never a server error; every refusal is a 4xx in OpenAI's error shape and stores no
run; every answer is a response object or its event stream (tests/proxy_hostile.py)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.proxy_hostile import hostile_client, post_answered_or_refused
from tests.strategies import hostile_json, hostile_text

text = hostile_text("user", "assistant", "note", "resp_x")
json_values = hostile_json(text)
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
    return hostile_client(tmp_path_factory.mktemp("responses_hostile"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_any_json_body_is_answered_or_refused_in_openais_shape(client, body):
    post_answered_or_refused(
        client,
        "/proxy/chat/v1/responses",
        json.dumps(body).encode("utf-8", "surrogatepass"),
        refused=lambda body: set(body["error"]) == {"message", "type", "param", "code"},
        answered=lambda body: body["object"] == "response" and body["id"].startswith("resp_"),
        streamed=lambda text: text.startswith("event: response.created\n"),
    )
