"""Providers (SPEC §7): scripted and OpenAI-compatible runs share the SDK path; failures end the run readably."""

import json
import logging

import httpx2
import pytest

from engine import run_agent
from engine.providers import ProviderError, connection_model
from tests.doubles import CONNECTION, ENVIRON, ModelDouble, completion
from tests.unit.unit_helpers import (
    MAX_ROUNDS_TEXT,
    RESTRICTED_LIST_BUNDLES,
    answer,
    call,
    make_agent,
    tool_messages,
    tool_round,
)

SCRIPT = [
    tool_round(call("list_bundles", {"entity_type": "node"}), call("list_bundles", {"entity_type": "user"})),
    tool_round(call("list_bundles", {"entity_type": "node"})),
    answer("Articles and pages."),
]
TOOLS = {"list_bundles": {"restrict_multiple_calls": True}}
KEY_NOT_SET = (
    'The environment variable "TEST_KEY" that holds the API key is not set (leave the variable\'s name empty on '
    "the provider connection if the server takes no key)."
)


def remote_agent(**fields):
    return make_agent(TOOLS, provider="remote", **fields)


def run_remote(transport, agent=None, environ=ENVIRON, providers=None):
    return run_agent(
        agent or remote_agent(),
        "Which bundles exist?",
        providers={"remote": CONNECTION} if providers is None else providers,
        environ=environ,
        transport=transport,
    )


TOOL_CALL_COMPLETION = completion(None, [("t1", "list_bundles", '{"entity_type": "node"}')], finish_reason="stop")


def mock_transport(*handlers):
    """A transport whose Nth request is answered by the Nth handler (the last one answers the rest)."""
    seen = []

    def handle(request):
        seen.append(request)
        return handlers[min(len(seen), len(handlers)) - 1](request)

    transport = httpx2.MockTransport(handle)
    transport.seen = seen
    return transport


# --- One SDK path for scripted and real providers -------------------------------------------------------------


def test_an_openai_compatible_provider_gives_the_same_run_as_the_scripted_one():
    scripted = run_agent(make_agent(TOOLS, SCRIPT), "Which bundles exist?")

    remote = run_remote(httpx2.WSGITransport(app=ModelDouble(script=SCRIPT)))

    for key in ("messages", "stop_reason", "answer", "tool_calls", "rejected_calls", "log"):
        assert remote[key] == scripted[key], key
    # Each round names the model that answered, another one; the usage estimate counts the request's bytes, which
    # name it; the latency is the run's own.
    measured = ("model", "usage", "latency_ms", "started_at")
    assert [{k: v for k, v in r.items() if k not in measured} for r in remote["rounds"]] == [
        {k: v for k, v in r.items() if k not in measured} for r in scripted["rounds"]
    ]
    assert tool_messages(remote)[0]["content"] == RESTRICTED_LIST_BUNDLES


def test_requests_carry_the_bearer_key_and_the_model_name():
    endpoint = ModelDouble(script=SCRIPT)

    run_remote(httpx2.WSGITransport(app=endpoint))

    assert len(endpoint.requests) == 3
    assert {request["path"] for request in endpoint.requests} == {"/v1/chat/completions"}
    assert {request["headers"]["authorization"] for request in endpoint.requests} == {"Bearer k"}
    assert {request["body"]["model"] for request in endpoint.requests} == {"m"}


def test_the_agents_model_wins_over_the_connections_default():
    endpoint = ModelDouble(script=SCRIPT)

    run_remote(httpx2.WSGITransport(app=endpoint), agent=remote_agent(model="gpt-special"))

    assert endpoint.requests[0]["body"]["model"] == "gpt-special"


def test_requests_carry_the_tools_and_the_transcript():
    endpoint = ModelDouble(script=SCRIPT)

    result = run_remote(httpx2.WSGITransport(app=endpoint))

    first, last = endpoint.requests[0]["body"], endpoint.requests[-1]["body"]
    assert [tool["function"]["name"] for tool in first["tools"]] == ["list_bundles"]
    assert first["messages"] == [{"role": "user", "content": "Which bundles exist?"}]
    assert last["messages"] == result["messages"][:-1]


def test_the_key_is_read_from_the_named_variable_and_never_recorded():
    endpoint = ModelDouble(script=SCRIPT)

    result = run_remote(httpx2.WSGITransport(app=endpoint), environ={"TEST_KEY": "sk-secret-4242"})

    assert endpoint.requests[0]["headers"]["authorization"] == "Bearer sk-secret-4242"
    assert "sk-secret-4242" not in json.dumps(result)


def test_tool_calls_on_a_request_without_tools_are_rejected_on_the_provider_path():
    transport = mock_transport(lambda request: httpx2.Response(200, json=TOOL_CALL_COMPLETION))

    result = run_remote(transport, agent=remote_agent(max_rounds=0))

    assert "tools" not in json.loads(transport.seen[0].content)
    assert result["stop_reason"] == "tools_disabled"
    assert result["answer"] == MAX_ROUNDS_TEXT
    assert [(c["id"], c["reason"]) for c in result["rounds"][0]["calls"]] == [("t1", "tools_disabled")]


# --- Failures -------------------------------------------------------------------------------------------------


def read_timeout(request):
    raise httpx2.ReadTimeout("read timed out", request=request)


def plain_timeout(request):
    raise httpx2.TimeoutException("timed out", request=request)


def refused(request):
    raise httpx2.ConnectError("connection refused", request=request)


FAILURES = [
    ("read timeout", read_timeout, "The model did not answer in time (timeout)."),
    ("timeout", plain_timeout, "The model did not answer in time (timeout)."),
    ("connection refused", refused, "Could not reach the model endpoint: connection refused."),
    (
        "HTTP 500",
        lambda request: httpx2.Response(500, json={"error": {"message": "The server had an error."}}),
        "The model endpoint answered HTTP 500: The server had an error.",
    ),
    (
        "HTTP 401",
        lambda request: httpx2.Response(401, json={"error": {"message": "Incorrect API key provided."}}),
        "The model endpoint answered HTTP 401: Incorrect API key provided.",
    ),
    (
        "malformed JSON",
        lambda request: httpx2.Response(200, text="not json", headers={"content-type": "application/json"}),
        "The model's answer could not be read: Expecting value: line 1 column 1 (char 0).",
    ),
    (
        "not JSON at all",
        lambda request: httpx2.Response(200, text="not json"),
        "The model's answer could not be read: it has no message.",
    ),
    (
        "no choices",
        lambda request: httpx2.Response(200, json={**completion(), "choices": []}),
        "The model's answer could not be read: it has no message.",
    ),
    (
        "empty object",
        lambda request: httpx2.Response(200, json={}),
        "The model's answer could not be read: it has no message.",
    ),
]


@pytest.mark.parametrize(("handler", "error"), [case[1:] for case in FAILURES], ids=[case[0] for case in FAILURES])
def test_a_provider_failure_ends_the_run_with_a_readable_error(handler, error):
    result = run_remote(mock_transport(handler))

    assert result["stop_reason"] == "error"
    assert result["error"] == error
    assert result["answer"] is None
    assert result["log"] == [
        {"level": "error", "kind": "provider_error", "agent_id": "t", "message": f'The agent "t" stopped: {error}'}
    ]
    assert json.loads(json.dumps(result)) == result


def test_a_failure_keeps_the_trace_up_to_that_point():
    transport = mock_transport(lambda request: httpx2.Response(200, json=TOOL_CALL_COMPLETION), read_timeout)

    result = run_remote(transport)

    assert len(transport.seen) == 2
    assert result["stop_reason"] == "error"
    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "tool"]
    assert [r["calls"][0]["status"] for r in result["rounds"]] == ["executed"]
    assert result["tool_calls"] == 1


def test_a_failure_is_retried_only_as_often_as_the_connection_says():
    transport = mock_transport(lambda request: httpx2.Response(500, json={"error": {"message": "down"}}))

    run_remote(transport)

    assert len(transport.seen) == 1


def test_a_connection_without_a_retry_count_retries_twice():
    transport = mock_transport(lambda request: httpx2.Response(500, json={"error": {"message": "down"}}))
    connection = {key: value for key, value in CONNECTION.items() if key != "max_retries"}

    result = run_remote(transport, providers={"remote": connection})

    assert (result["stop_reason"], len(transport.seen)) == ("error", 3)
    assert result["error"] == "The model endpoint answered HTTP 500 after 3 attempts: down."


def test_a_provider_failure_goes_to_the_toolgate_logger(caplog):
    with caplog.at_level(logging.WARNING, logger="toolgate"):
        run_remote(mock_transport(read_timeout))

    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("toolgate", logging.ERROR, 'The agent "t" stopped: The model did not answer in time (timeout).')
    ]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"environ": {}}, KEY_NOT_SET),
        ({"environ": {"TEST_KEY": ""}}, KEY_NOT_SET),
        ({"providers": {}}, 'The provider connection "remote" does not exist.'),
        (
            {"providers": {"remote": {**CONNECTION, "default_model": "", "label": "Local"}}},
            'No model is set for the provider "Local" or the agent.',
        ),
    ],
    ids=["missing key", "empty key", "unknown provider", "no model"],
)
def test_a_provider_that_cannot_start_ends_the_run_before_any_request(options, error):
    transport = mock_transport(lambda request: httpx2.Response(200, json=completion("x")))

    result = run_remote(transport, **options)

    assert transport.seen == []
    assert (result["stop_reason"], result["error"], result["answer"]) == ("error", error, None)
    assert (result["rounds"], result["messages"], result["model_requests"]) == ([], [], 0)
    assert result["log"] == [
        {
            "level": "error",
            "kind": "provider_error",
            "agent_id": "t",
            "message": f'The agent "t" could not start: {error}',
        }
    ]


def test_the_key_variable_defaults_to_openai_api_key():
    connection = {"base_url": "http://model.test/v1", "default_model": "m", "max_retries": 0}

    with pytest.raises(ProviderError, match='"OPENAI_API_KEY"'):
        connection_model(connection, environ={})
