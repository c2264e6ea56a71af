"""Runs against a real OpenAI-compatible server (SPEC §2, §4, §7): the fake server in tests/fake_model_server.py,
on 127.0.0.1, records the exact bodies and headers Toolgate sends and plays what real servers do: retries and
Retry-After, trickling bodies, duplicate and missing ids, cut-off answers, content parts, usage, a 401 that echoes
the key."""

import json
import logging
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from engine import run_agent
from engine.tools import default_registry
from tests.doubles import completion
from tests.fake_model_server import FakeModelServer, Reply, error_reply
from tests.unit.unit_helpers import NODE_BUNDLES, TAXONOMY_BUNDLES

KEY = "sk-fake-0123456789abcdef"
ENVIRON = {"FAKE_API_KEY": KEY}
QUESTION = "Which bundles exist?"
USER = {"role": "user", "content": QUESTION}
LIST_BUNDLES = default_registry().get("list_bundles").schema_for_model()
NODE_CALL = '{"entity_type": "node"}'
TAXONOMY_CALL = '{"entity_type": "taxonomy_term"}'


@pytest.fixture
def server():
    with FakeModelServer() as running:
        yield running


def agent(**fields):
    return {"id": "remote", "label": "Remote", "provider": "fake", "tools": {"list_bundles": {}}, **fields}


def run_on(server, agent_fields=None, overrides=None, environ=ENVIRON, **connection):
    return run_agent(
        agent(**(agent_fields or {})),
        QUESTION,
        overrides,
        providers={"fake": server.connection(**connection)},
        environ=environ,
    )


def assistant_with_calls(*calls):
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "list_bundles", "arguments": arguments}}
            for call_id, arguments in calls
        ],
    }


def tool_message(call_id, content):
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# --- What is sent -----------------------------------------------------------------------------------------------


def test_the_agents_request_settings_are_sent_and_tool_choice_only_with_tools(server):
    server.enqueue(
        Reply(completion(calls=[("c1", "list_bundles", NODE_CALL)])), Reply(completion("Articles and pages."))
    )
    settings = {"tool_choice": "list_bundles", "temperature": 0.2, "top_p": 0.9, "seed": 7, "max_tokens": 300}

    result = run_on(server, {**settings, "max_rounds": 1, "parallel_tool_calls": False}, extra_body={"top_k": 20})

    sampling = {"temperature": 0.2, "top_p": 0.9, "seed": 7, "max_tokens": 300, "top_k": 20}
    assert server.bodies == [
        {
            "model": "m",
            "messages": [USER],
            "tools": [LIST_BUNDLES],
            "tool_choice": {"type": "function", "function": {"name": "list_bundles"}},
            "parallel_tool_calls": False,
            **sampling,
        },
        {
            "model": "m",
            "messages": [USER, assistant_with_calls(("c1", NODE_CALL)), tool_message("c1", NODE_BUNDLES)],
            **sampling,
        },
    ]
    assert (result["stop_reason"], result["answer"]) == ("round_cap", "Articles and pages.")


def test_by_default_tool_choice_auto_is_sent_and_no_sampling_field(server):
    run_on(server)

    assert server.bodies == [{"model": "m", "messages": [USER], "tools": [LIST_BUNDLES], "tool_choice": "auto"}]


def test_tool_choice_required_and_a_per_run_override(server):
    run_on(server, {"tool_choice": "required"}, overrides={"temperature": 1.5, "seed": 3})

    assert server.bodies[0]["tool_choice"] == "required"
    assert (server.bodies[0]["temperature"], server.bodies[0]["seed"]) == (1.5, 3)
    assert "top_p" not in server.bodies[0] and "max_tokens" not in server.bodies[0]


def test_no_tool_choice_is_sent_when_the_tools_are_off(server):
    run_on(server, {"max_rounds": 0, "tool_choice": "required", "parallel_tool_calls": True})

    assert server.bodies == [{"model": "m", "messages": [USER]}]


def test_the_key_and_the_connections_headers_are_sent(server):
    run_on(server, headers={"X-Team": "search", "X-Route": "eu"})

    headers = server.requests[0]["headers"]
    assert (headers["authorization"], headers["x-team"], headers["x-route"]) == (f"Bearer {KEY}", "search", "eu")
    assert server.requests[0]["path"] == "/v1/chat/completions"


def test_a_connection_without_a_key_variable_sends_no_authorization(server):
    result = run_on(server, environ={}, api_key_env="")

    assert result["answer"] == "OK"
    assert "authorization" not in server.requests[0]["headers"]


# --- Retries and the deadline -----------------------------------------------------------------------------------


def test_a_429_is_retried_after_the_wait_the_server_asks_for(server):
    server.enqueue(error_reply(429, "Slow down.", **{"Retry-After": "0.3"}), Reply(completion("Answered.")))

    result = run_on(server, max_retries=2)

    assert (result["stop_reason"], result["answer"]) == ("answered", "Answered.")
    assert len(server.requests) == 2 and server.bodies[0] == server.bodies[1]
    assert server.request_times[1] - server.request_times[0] >= 0.3
    assert result["model_requests"] == 1  # a retry is part of its request


def test_5xx_answers_are_retried_as_often_as_the_connection_says_then_the_run_says_so(server):
    server.enqueue(error_reply(503, "Overloaded.", **{"Retry-After-Ms": "10"}))

    result = run_on(server, max_retries=3)

    assert len(server.requests) == 4
    assert result["stop_reason"] == "error"
    assert result["error"] == "The model endpoint answered HTTP 503 after 4 attempts: Overloaded."
    assert (result["model_requests"], result["rounds"]) == (1, [])


def test_a_wait_past_the_deadline_is_not_waited_for(server):
    server.enqueue(error_reply(429, "Rate limit reached.", **{"Retry-After": "30"}), Reply(completion("Late.")))

    result = run_on(server, max_retries=5, timeout=2.0)

    assert len(server.requests) == 1
    assert result["error"] == (
        "The model endpoint answered HTTP 429: Rate limit reached. Not retried: it asked to wait 30 s, which would "
        "pass the 2 s timeout."
    )


def test_a_back_off_past_the_deadline_is_not_waited_for_either(server):
    server.enqueue(error_reply(500, "Down."))

    result = run_on(server, max_retries=3, timeout=0.49)

    assert len(server.requests) == 1
    assert result["error"] == (
        "The model endpoint answered HTTP 500: Down. Not retried: the next try, 0.5 s later, would pass the 0.49 s "
        "timeout."
    )


def test_a_trickling_answer_is_cut_off_at_the_timeout(server):
    # The whole body would take over 60 s at a byte every 0.25 s.
    server.enqueue(Reply(completion("A slow answer, one byte at a time."), trickle_seconds=0.25))

    result = run_on(server, timeout=1.0, max_retries=2)

    assert result["stop_reason"] == "error"
    assert result["error"] == "The model did not answer within the 1 s timeout."
    assert len(server.requests) == 1  # the deadline covers the retries: none is left for them


def test_the_timeout_bounds_the_retries_too(server):
    server.enqueue(error_reply(500, "Down.", **{"Retry-After": "0.4"}))

    result = run_on(server, timeout=1.0, max_retries=10)

    assert 1 < len(server.requests) <= 3
    assert result["error"].startswith(f"The model endpoint answered HTTP 500 after {len(server.requests)} attempts")


def test_an_unreachable_server_is_an_error_in_words():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    connection = {"label": "Gone", "base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": "", "default_model": "m"}

    result = run_agent(agent(), QUESTION, providers={"fake": {**connection, "max_retries": 0}}, environ={})

    assert result["stop_reason"] == "error"
    assert result["error"].startswith("Could not reach the model endpoint: ")
    assert result["model_requests"] == 1


# --- Call ids ---------------------------------------------------------------------------------------------------


def test_a_repeated_id_in_one_response_is_replaced_and_used_consistently(server):
    server.enqueue(
        Reply(completion(calls=[("same", "list_bundles", NODE_CALL), ("same", "list_bundles", TAXONOMY_CALL)])),
        Reply(completion("Done.")),
    )

    result = run_on(server)

    assert server.bodies[1]["messages"][1:] == [
        assistant_with_calls(("same", NODE_CALL), ("repaired_1_2", TAXONOMY_CALL)),
        tool_message("same", NODE_BUNDLES),
        tool_message("repaired_1_2", TAXONOMY_BUNDLES),
    ]
    calls = result["rounds"][0]["calls"]
    assert [(c["id"], c["original_id"], c["status"]) for c in calls] == [
        ("same", None, "executed"),
        ("repaired_1_2", "same", "executed"),
    ]
    assert result["messages"][1:4] == server.bodies[1]["messages"][1:4]


def test_missing_empty_and_earlier_ids_are_replaced(server):
    no_id = {"type": "function", "function": {"name": "list_bundles", "arguments": NODE_CALL}}
    server.enqueue(
        Reply(completion(calls=[no_id, ("", "list_bundles", TAXONOMY_CALL)])),
        Reply(completion(calls=[("call_1", "list_bundles", NODE_CALL)])),
        Reply(completion(calls=[("call_1", "list_bundles", NODE_CALL)])),
        Reply(completion("Done.")),
    )

    result = run_on(server)

    assert [[(c["id"], c["original_id"]) for c in r["calls"]] for r in result["rounds"][:3]] == [
        [("repaired_1_1", ""), ("repaired_1_2", "")],
        [("call_1", None)],
        [("repaired_3_1", "call_1")],
    ]
    answered = [m["tool_call_id"] for m in server.bodies[-1]["messages"] if m["role"] == "tool"]
    assert answered == ["repaired_1_1", "repaired_1_2", "call_1", "repaired_3_1"]


# --- What comes back --------------------------------------------------------------------------------------------


def test_usage_is_recorded_per_round_and_summed_with_the_latency(server):
    server.enqueue(
        Reply(completion(calls=[("c1", "list_bundles", NODE_CALL)], usage=(100, 20, 120))),
        Reply(completion("Done.", usage=(150, 5, 155))),
    )

    result = run_on(server)

    assert [r["usage"] for r in result["rounds"]] == [
        {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        {"prompt_tokens": 150, "completion_tokens": 5, "total_tokens": 155},
    ]
    assert result["usage"] == {"prompt_tokens": 250, "completion_tokens": 25, "total_tokens": 275}
    assert [r["finish_reason"] for r in result["rounds"]] == ["tool_calls", "stop"]
    assert all(r["latency_ms"] > 0 for r in result["rounds"])


def test_a_run_whose_server_reports_no_usage_has_none(server):
    result = run_on(server)

    assert result["rounds"][0]["usage"] is None and result["usage"] is None


def test_an_answer_cut_off_at_the_token_limit_ends_the_run_truncated(server):
    server.enqueue(Reply(completion("The bundles are article and", finish_reason="length")))

    result = run_on(server, {"tools": {"list_bundles": {"require_usage": True}}})

    assert (result["stop_reason"], result["answer"]) == ("truncated", "The bundles are article and")
    assert len(server.requests) == 1  # no reminder: the answer was cut off, not finished


def test_an_answer_stopped_by_the_content_filter_ends_the_run(server):
    server.enqueue(Reply(completion("", finish_reason="content_filter")))

    result = run_on(server)

    assert (result["stop_reason"], result["answer"]) == ("content_filter", "")


def test_content_sent_as_a_list_of_parts_is_read_as_its_text(server):
    parts = [{"type": "text", "text": "Articles "}, {"type": "text", "text": "and pages."}]
    server.enqueue(Reply(completion(parts)))

    result = run_on(server)

    assert result["answer"] == "Articles and pages."
    assert result["messages"][-1] == {"role": "assistant", "content": "Articles and pages."}


# --- The key never leaves ---------------------------------------------------------------------------------------


def test_a_401_that_echoes_the_key_is_redacted_everywhere(server, caplog):
    server.enqueue(error_reply(401, f"Incorrect API key provided: {KEY}. You can find your key at ..."))

    with caplog.at_level(logging.WARNING, logger="toolgate"):
        result = run_on(server)

    expected = (
        "The model endpoint answered HTTP 401: Incorrect API key provided: [redacted]. You can find your key at ..."
    )
    assert result["error"] == expected
    assert result["log"][0]["message"] == f'The agent "remote" stopped: {expected}'
    assert KEY not in json.dumps(result)
    assert KEY not in caplog.text and "[redacted]" in caplog.text


def test_an_answer_that_echoes_the_key_is_redacted(server):
    server.enqueue(Reply(completion(f"Your key is {KEY}.")))

    result = run_on(server)

    assert result["answer"] == "Your key is [redacted]."
    assert KEY not in json.dumps(result)


# --- One client per connection ----------------------------------------------------------------------------------


def test_twenty_runs_in_a_row_share_at_most_two_connections(server):
    for _ in range(20):
        assert run_on(server)["stop_reason"] == "answered"

    assert len(server.requests) == 20
    assert server.connections <= 2


def test_runs_in_parallel_threads_share_the_client_and_its_pool(server):
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: run_on(server), range(12)))

    assert [result["answer"] for result in results] == ["OK"] * 12
    assert server.connections <= 4


def test_an_edited_connection_gets_a_new_client(server):
    run_on(server, headers={"X-Team": "search"})
    run_on(server, headers={"X-Team": "billing"})

    assert [request["headers"]["x-team"] for request in server.requests] == ["search", "billing"]
