"""Runs exported as OpenTelemetry traces to a real OTLP/HTTP receiver on 127.0.0.1 (tests/otlp_receiver.py): the
spans a scripted run, an approval, a live run, a proxied conversation and a provider error make; what content
capture sends and hides; a collector that hangs or fails; the run page's link to its trace."""

import json
import re
import socket
import subprocess
import sys
from contextlib import contextmanager

import pytest

from services import tracing
from store import runs as run_store
from tests.database import Database
from tests.html_reader import form_fields
from tests.integration.test_approvals import AGENT as APPROVALS_AGENT
from tests.live_http import ROOT, serving
from tests.otlp_receiver import OtlpReceiver
from tests.proxy_support import (
    ONE_PLACEMENT,
    PLACE,
    RESTRICT,
    TWO_PLACEMENTS,
    USER,
    FakeUpstream,
    add_upstream,
    completion,
)
from tests.run_scenarios import BUNDLES_ANSWER, BUNDLES_MESSAGE, bundles_agent
from tests.support import make_app

RESTRICTED_LIST_BUNDLES = (
    'Error: The tool "list_bundles" may only be called once per response. None of the tool calls in this response '
    "were executed. Call it once, wait for its result, then call it again if you need to."
)
HTMX = {"HX-Request": "true"}
UPSTREAM_SECRET = "sk-upstream-key"  # tests/proxy_support.add_upstream's key


@pytest.fixture(scope="module")
def collector():
    """One receiver for the module's tests (each empties it first): (receiver, its base URL)."""
    receiver = OtlpReceiver()
    with serving(receiver) as base_url:
        yield receiver, base_url


@contextmanager
def exporting_app(tmp_path, database, base_url, **settings):
    """The app exporting to the receiver at `base_url`, with a short export timeout."""
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": base_url, "OTEL_EXPORTER_OTLP_TIMEOUT": "0.5"}
    environ.update(settings.pop("environ", {}))
    app = make_app(tmp_path, database_from=database, TELEMETRY_ENVIRON=environ, **settings)
    try:
        yield app
    finally:
        app.extensions["toolgate_tracing"].shutdown()


@contextmanager
def traced_app(tmp_path, database, collector, **settings):
    """(the app exporting to the module's receiver, the receiver, emptied)."""
    receiver, base_url = collector
    receiver.spans.clear()
    with exporting_app(tmp_path, database, base_url, **settings) as app:
        yield app, receiver


@pytest.fixture
def traced(tmp_path, migrated_database, collector):
    with traced_app(tmp_path, migrated_database, collector) as found:
        yield found


def flush(app):
    assert app.extensions["toolgate_tracing"].force_flush(5)


def by_name(spans):
    return sorted(span["name"] for span in spans)


def all_text(spans):
    """Every attribute and event value the receiver got, as one text."""
    return json.dumps([[span["attributes"], span["events"], span["status"]] for span in spans], ensure_ascii=False)


def agent_span(receiver):
    (span,) = receiver.named("invoke_agent")
    return span


def put(client, agent_id, agent):
    assert client.put(f"/api/agents/{agent_id}", json=agent).status_code in (200, 201)


# --- Off: nothing imported ----------------------------------------------------------------------------------------


def test_without_an_endpoint_the_app_runs_and_nothing_of_opentelemetry_is_imported(tmp_path):
    code = (
        "import sys\n"
        "from app import create_app\n"
        f"app = create_app({{'TESTING': True, 'SECRET_KEY': 'k', 'DATABASE': {str(tmp_path / 'db')!r}, "
        "'TELEMETRY_ENVIRON': {'OTEL_SERVICE_NAME': 'x'}, 'WTF_CSRF_ENABLED': False}, "
        f"instance_path={str(tmp_path)!r})\n"
        "client = app.test_client()\n"
        "assert client.post('/api/agents/a/runs', json={'message': 'hi'}).status_code == 404\n"
        "assert client.put('/api/agents/a', json={'label': 'A', 'script': [{'content': 'Hi.'}]}).status_code == 201\n"
        "assert client.post('/api/agents/a/runs', json={'message': 'hi'}).status_code == 201\n"
        "print(app.extensions['toolgate_tracing'], sorted(name for name in sys.modules if 'opentelemetry' in name))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None []"


@pytest.mark.parametrize(
    ("environ", "endpoint"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:3000/api/public/otel/"},
            "http://localhost:3000/api/public/otel/v1/traces",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:9/traces"},
            "http://b:9/traces",
        ),
    ],
)
def test_the_endpoint_is_the_traces_one_else_the_base_one_with_its_path(environ, endpoint):
    assert tracing.traces_endpoint(environ) == endpoint


def test_the_service_name_headers_and_schema_are_sent(tmp_path, migrated_database, collector):
    environ = {"OTEL_SERVICE_NAME": "agents-prod", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Basic%20cGs6c2s="}
    with traced_app(tmp_path, migrated_database, collector, environ=environ) as (app, receiver):
        client = app.test_client()
        put(client, "hello", {"label": "Hello", "script": [{"content": "Hi."}]})
        client.post("/api/agents/hello/runs", json={"message": "Hi?"})
        flush(app)

    assert {span["resource"]["service.name"] for span in receiver.spans} == {"agents-prod"}
    assert {span["schema_url"] for span in receiver.spans} == {"https://opentelemetry.io/schemas/1.38.0"}
    assert receiver.headers[-1]["authorization"] == "Basic cGs6c2s="


# --- A scripted run with a restricted tool --------------------------------------------------------------------------


def test_a_rejected_round_has_no_tool_spans_but_a_guardrail_event_per_call_with_reason_rule_and_message(traced):
    app, receiver = traced
    client = app.test_client()
    put(client, "bundles", bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    flush(app)

    spans = receiver.spans
    assert by_name(spans) == [
        "chat scripted",
        "chat scripted",
        "chat scripted",
        "chat scripted",
        "execute_tool list_bundles",
        "execute_tool list_bundles",
        "invoke_agent bundles",
    ]
    agent = agent_span(receiver)
    assert {span["trace_id"] for span in spans} == {agent["trace_id"]}
    assert agent["parent_span_id"] is None
    assert all(span["parent_span_id"] == agent["span_id"] for span in spans if span is not agent)
    assert agent["resource"]["service.name"] == "toolgate"
    expected = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "bundles",
        "gen_ai.agent.name": "Bundles test agent",
        "toolgate.run.id": run["id"],
        "toolgate.run.source": "api",
        "toolgate.stop_reason": "answered",
        "toolgate.run.tool_calls": 2,
        "toolgate.run.rejected_calls": 2,
    }
    assert expected.items() <= agent["attributes"].items()
    chats = sorted(receiver.named("chat"), key=lambda span: span["attributes"]["toolgate.round.number"])
    assert [chat["attributes"]["gen_ai.provider.name"] for chat in chats] == ["scripted"] * 4
    # The agent names no model: each request asked the scripted model by its name, and it answered as that.
    models = {
        (chat["attributes"]["gen_ai.request.model"], chat["attributes"]["gen_ai.response.model"]) for chat in chats
    }
    assert models == {("scripted", "scripted")}
    assert [chat["attributes"]["gen_ai.response.finish_reasons"] for chat in chats] == [["tool_calls"]] * 3 + [["stop"]]
    rejected = chats[0]["events"]
    assert [
        (
            event["name"],
            event["gen_ai.tool.name"],
            event["gen_ai.tool.call.id"],
            event["toolgate.guardrail.reason"],
            event["toolgate.guardrail.setting"],
            event["toolgate.guardrail.message"],
        )
        for event in rejected
    ] == [
        (
            "toolgate.guardrail.result",
            "list_bundles",
            call["id"],
            "restricted_repeat",
            "restrict_multiple_calls",
            RESTRICTED_LIST_BUNDLES,
        )
        for call in run["rounds"][0]["calls"]
    ]
    assert all(chat["events"] == [] for chat in chats[1:])
    tools = receiver.named("execute_tool")
    executed = [call for round_ in run["rounds"] for call in round_["calls"] if call["status"] == "executed"]
    assert sorted(span["attributes"]["gen_ai.tool.call.id"] for span in tools) == sorted(
        call["id"] for call in executed
    )
    assert {span["attributes"]["gen_ai.tool.type"] for span in tools} == {"extension"}
    # Each span lies within the run's; each round's request ends before its calls start.
    assert all(agent["start"] <= span["start"] <= span["end"] <= agent["end"] for span in spans)
    assert chats[1]["end"] <= min(span["start"] for span in tools)
    # Capture is off: no message text, argument or output anywhere.
    text = all_text(spans)
    for content in (BUNDLES_MESSAGE, BUNDLES_ANSWER, "taxonomy_term", "article", "You are a test agent"):
        assert content not in text
    assert "gen_ai.input.messages" not in text and "gen_ai.tool.call.arguments" not in text


def test_with_content_capture_the_messages_arguments_and_outputs_go_out_with_the_providers_key_redacted(
    tmp_path, migrated_database, collector
):
    upstream = FakeUpstream(
        completion(calls=[("call_a", "list_bundles", {"entity_type": "media"})], usage=(11, 7, 18)),
        completion("Media has image and video.", usage=(20, 5, 25)),
    )
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    with (
        serving(upstream) as model_url,
        traced_app(tmp_path, migrated_database, collector, environ=environ) as (
            app,
            receiver,
        ),
    ):
        add_upstream(app, model_url)
        client = app.test_client()
        put(
            client,
            "media",
            {"label": "Media", "provider": "upstream", "model": "gpt-test", "tools": {"list_bundles": {}}},
        )
        message = f"Which bundles does media have? My key is {UPSTREAM_SECRET}."
        run = client.post("/api/agents/media/runs", json={"message": message}).get_json()
        flush(app)

    assert run["stop_reason"] == "answered"
    chats = sorted(receiver.named("chat gpt-test"), key=lambda span: span["attributes"]["toolgate.round.number"])
    first, second = (chat["attributes"] for chat in chats)
    assert (first["gen_ai.provider.name"], first["gen_ai.request.model"], first["toolgate.provider.id"]) == (
        "openai",
        "gpt-test",
        "upstream",
    )
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (11, 7)
    sent = json.loads(first["gen_ai.input.messages"])
    assert sent == [
        {"role": "user", "parts": [{"type": "text", "content": message.replace(UPSTREAM_SECRET, "[redacted]")}]}
    ]
    assert json.loads(first["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_a", "name": "list_bundles", "arguments": {"entity_type": "media"}}
            ],
            "finish_reason": "tool_calls",
        }
    ]
    assert json.loads(second["gen_ai.input.messages"])[-1]["parts"][0]["type"] == "tool_call_response"
    (tool,) = receiver.named("execute_tool")
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {"entity_type": "media"}
    assert "image" in tool["attributes"]["gen_ai.tool.call.result"]
    agent = agent_span(receiver)["attributes"]
    assert (agent["gen_ai.usage.input_tokens"], agent["gen_ai.usage.output_tokens"]) == (31, 12)
    assert json.loads(agent["gen_ai.output.messages"])[0]["parts"][0]["content"] == "Media has image and video."
    text = all_text(receiver.spans)
    assert UPSTREAM_SECRET not in text and "[redacted]" in text


def test_with_content_capture_a_proxied_runs_content_goes_out_with_the_providers_key_redacted(
    tmp_path, migrated_database, collector
):
    """A proxied run records the client's conversation as it came, so the key a client sent (in its message, in a
    tool's output) is in the run; only the export's redaction keeps it out of the trace."""
    upstream = FakeUpstream(completion(f"Your key {UPSTREAM_SECRET} is safe with me."))
    environ = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    with (
        serving(upstream) as model_url,
        traced_app(tmp_path, migrated_database, collector, environ=environ) as (app, receiver),
    ):
        add_upstream(app, model_url)
        client = app.test_client()
        put(
            client, "canvas", {"label": "Canvas", "provider": "upstream", "model": "gpt-test", "client_tools": RESTRICT}
        )
        call = {"id": "c1", "type": "function", "function": {"name": "place_components", "arguments": "{}"}}
        messages = [
            {"role": "user", "content": f"Build a page. My key is {UPSTREAM_SECRET}."},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": f"Placed, with {UPSTREAM_SECRET} as its title."},
        ]
        response = client.post(
            "/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": messages, "tools": [PLACE]}
        )
        flush(app)

    assert response.status_code == 200
    (chat,) = receiver.named("chat gpt-test")
    sent = json.loads(chat["attributes"]["gen_ai.input.messages"])
    assert sent[0]["parts"][0]["content"] == "Build a page. My key is [redacted]."
    assert sent[-1]["parts"][0]["response"] == "Placed, with [redacted] as its title."
    answer = json.loads(chat["attributes"]["gen_ai.output.messages"])[0]["parts"][0]["content"]
    assert answer == "Your key [redacted] is safe with me."
    assert UPSTREAM_SECRET not in all_text(receiver.spans)


# --- Approvals -----------------------------------------------------------------------------------------------------


def test_a_reviewers_decisions_are_events_and_only_the_approved_call_has_a_tool_span(traced):
    app, receiver = traced
    client = app.test_client()
    put(client, "approvals", APPROVALS_AGENT)
    waiting = client.post("/api/agents/approvals/runs", json={"message": "Which bundles?"}).get_json()
    flush(app)
    assert waiting["state"] == "awaiting_approval" and receiver.spans == []

    decisions = {
        "call_1_1": {"approve": True, "arguments": {"entity_type": "user"}},
        "call_1_2": {"reject": "Not media."},
    }
    run = client.post(f"/api/runs/{waiting['id']}/decisions", json={"decisions": decisions}).get_json()
    flush(app)

    assert run["stop_reason"] == "answered"
    assert by_name(receiver.spans) == [
        "chat scripted",
        "chat scripted",
        "execute_tool list_bundles",
        "execute_tool list_entity_types",
        "invoke_agent approvals",
    ]
    assert receiver.named("execute_tool list_bundles")[0]["attributes"]["gen_ai.tool.call.id"] == "call_1_1"
    (round_one,) = [chat for chat in receiver.named("chat") if chat["attributes"]["toolgate.round.number"] == 1]
    reviews = {call["id"]: call.get("review") for call in run["rounds"][0]["calls"]}
    decided_at = [reviews[event["gen_ai.tool.call.id"]]["decided_at"] for event in round_one["events"][:2]]
    assert [event["time"] for event in round_one["events"][:2]] == pytest.approx(decided_at, abs=1e-6)
    events = [{key: value for key, value in event.items() if key != "time"} for event in round_one["events"]]
    assert events == [
        {
            "name": "toolgate.review",
            "gen_ai.tool.call.id": "call_1_1",
            "gen_ai.tool.name": "list_bundles",
            "toolgate.review.decision": "approved",
            "toolgate.review.by": "a reviewer",
            "toolgate.review.edited_arguments": True,
        },
        {
            "name": "toolgate.review",
            "gen_ai.tool.call.id": "call_1_2",
            "gen_ai.tool.name": "list_bundles",
            "toolgate.review.decision": "rejected",
            "toolgate.review.by": "a reviewer",
            "toolgate.review.edited_arguments": False,
        },
        {
            # The reviewer's words are content: without capture the event names the rule, not the message.
            "name": "toolgate.guardrail.result",
            "gen_ai.tool.call.id": "call_1_2",
            "gen_ai.tool.name": "list_bundles",
            "toolgate.guardrail.decision": "rejected",
            "toolgate.guardrail.reason": "reviewer_rejected",
            "toolgate.guardrail.setting": "require_approval",
        },
    ]
    assert "Not media" not in all_text(receiver.spans) and '"user"' not in all_text(receiver.spans)


# --- A live run, one step per request --------------------------------------------------------------------------------


def test_a_live_run_stepped_over_several_requests_is_one_trace_its_own_span_sent_when_it_ends(traced):
    app, receiver = traced
    client = app.test_client()
    put(client, "bundles", bundles_agent())
    fields = {**form_fields(client.get("/agents/bundles/run").get_data(as_text=True)), "message": BUNDLES_MESSAGE}
    started = client.post("/agents/bundles/run", data={**fields, "live": "1"}, headers=HTMX).get_data(as_text=True)
    run_id = int(re.search(r'<article class="run" id="run-(\d+)"', started).group(1))

    sent_after_each_step = []
    for _ in range(4):
        assert client.post(f"/runs/{run_id}/step", data={"after": 0}, headers=HTMX).status_code == 200
        flush(app)
        sent_after_each_step.append(by_name(receiver.spans))

    assert client.get(f"/api/runs/{run_id}").get_json()["stop_reason"] == "answered"
    assert sent_after_each_step[0] == ["chat scripted"]  # round 1: rejected, nothing ran
    assert sent_after_each_step[1] == ["chat scripted", "chat scripted", "execute_tool list_bundles"]
    assert "invoke_agent bundles" not in sent_after_each_step[2]
    assert sent_after_each_step[3].count("invoke_agent bundles") == 1 and len(sent_after_each_step[3]) == 7
    agent = agent_span(receiver)
    assert {span["trace_id"] for span in receiver.spans} == {agent["trace_id"]}
    assert agent["attributes"]["toolgate.run.source"] == "page"
    assert all(span["parent_span_id"] == agent["span_id"] for span in receiver.spans if span is not agent)


# --- The policy proxy ----------------------------------------------------------------------------------------------


def test_a_proxied_conversation_of_three_requests_is_one_trace_with_its_hidden_round_marked(traced):
    app, receiver = traced
    client = app.test_client()
    below_hero = {"name": "place_components", "arguments": {"component": "text", "below_uuid": "{{hero}}"}}
    script = [TWO_PLACEMENTS, ONE_PLACEMENT, {"tool_calls": [below_hero]}, {"content": "Done."}]
    put(client, "canvas", {"label": "Canvas", "client_tools": RESTRICT, "script": script})
    messages, run_ids, sent = [USER], set(), []
    for _ in range(3):
        response = client.post(
            "/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": messages, "tools": [PLACE]}
        )
        run_ids.add(response.headers["X-Toolgate-Run"])
        message = response.get_json()["choices"][0]["message"]
        messages += [
            message,
            *[
                {"role": "tool", "tool_call_id": call["id"], "content": f"uuid-of-{call['id']}"}
                for call in message.get("tool_calls") or []
            ],
        ]
        flush(app)
        sent.append(by_name(receiver.spans))

    (run_id,) = run_ids
    assert sent == [
        ["chat m", "chat m"],  # the hidden re-ask and the answer the client got; its call waits for the client
        ["chat m", "chat m", "chat m", "execute_tool place_components"],
        [
            "chat m",
            "chat m",
            "chat m",
            "chat m",
            "execute_tool place_components",
            "execute_tool place_components",
            "invoke_agent canvas",
        ],
    ]
    agent = agent_span(receiver)
    assert {span["trace_id"] for span in receiver.spans} == {agent["trace_id"]}
    assert {span["attributes"]["gen_ai.conversation.id"] for span in receiver.spans} == {run_id}
    assert agent["attributes"]["toolgate.run.source"] == "proxy"
    chats = sorted(receiver.named("chat"), key=lambda span: span["attributes"]["toolgate.round.number"])
    assert [chat["attributes"]["toolgate.round.shown_to_client"] for chat in chats] == [False, True, True, True]
    assert [event["toolgate.guardrail.reason"] for event in chats[0]["events"]] == ["restricted_repeat"] * 2
    tools = receiver.named("execute_tool")
    assert {span["attributes"]["gen_ai.tool.type"] for span in tools} == {"function"}  # the client ran them


def test_a_proxied_call_no_one_decided_in_time_is_a_review_and_a_guardrail_event_of_its_hidden_round(traced):
    app, receiver = traced
    client = app.test_client()
    hero = {"tool_calls": [{"id": "hero", "name": "place_components", "arguments": {"component": "hero"}}]}
    approve = {"place_components": {"require_approval": True}}
    agent = {
        "label": "Canvas",
        "client_tools": approve,
        "approval_timeout_seconds": 1,
        "script": [hero, {"content": "Ok."}],
    }
    put(client, "canvas", agent)

    response = client.post(
        "/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": [USER], "tools": [PLACE]}
    )
    flush(app)

    assert response.get_json()["choices"][0]["message"]["content"] == "Ok."
    (hidden,) = [chat for chat in receiver.named("chat") if chat["attributes"]["toolgate.round.number"] == 1]
    assert hidden["attributes"]["toolgate.round.shown_to_client"] is False
    events = [{key: value for key, value in event.items() if key != "time"} for event in hidden["events"]]
    assert [event["name"] for event in events] == ["toolgate.review", "toolgate.guardrail.result"]
    assert events[0]["toolgate.review.decision"] == "timed_out"
    assert events[1]["toolgate.guardrail.reason"] == "approval_timeout"


def test_the_next_user_message_of_a_proxied_conversation_is_a_run_of_its_own_in_the_same_conversation(traced):
    app, receiver = traced
    client = app.test_client()
    put(client, "canvas", {"label": "Canvas", "script": [{"content": "Hello."}, {"content": "Still here."}]})
    messages, run_ids = [USER], []
    for follow_up in ("And now?", None):
        response = client.post("/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": messages})
        run_ids.append(response.headers["X-Toolgate-Run"])
        messages += [response.get_json()["choices"][0]["message"], {"role": "user", "content": follow_up}]
    flush(app)

    first, second = sorted(receiver.named("invoke_agent"), key=lambda span: span["attributes"]["toolgate.run.id"])
    assert [first["attributes"]["toolgate.run.id"], second["attributes"]["toolgate.run.id"]] == [
        int(run_ids[0]),
        int(run_ids[1]),
    ]
    assert first["trace_id"] != second["trace_id"]
    assert {span["attributes"]["gen_ai.conversation.id"] for span in receiver.spans} == {run_ids[0]}


# --- The CLI -------------------------------------------------------------------------------------------------------


def test_a_run_from_the_cli_is_exported_too(traced):
    app, receiver = traced
    put(app.test_client(), "bundles", bundles_agent())
    result = app.test_cli_runner().invoke(args=["run-agent", "bundles", BUNDLES_MESSAGE])
    assert result.exit_code == 0, result.output
    flush(app)

    assert agent_span(receiver)["attributes"]["toolgate.run.source"] == "cli"
    assert len(receiver.spans) == 7
    # A pruned run's trace ids go with it.
    database = Database(app.config["DATABASE_URL"])
    assert run_store.prune_runs(database, "9999-12-31") == (1, 1)
    assert database.execute("SELECT COUNT(*) FROM run_traces").fetchone() == (0,)
    database.close()


# --- A provider error ----------------------------------------------------------------------------------------------


def test_a_provider_error_is_a_failed_chat_span_with_its_error_type(traced):
    app, receiver = traced
    upstream = FakeUpstream((500, {"error": {"message": "The upstream is down."}}))
    with serving(upstream) as model_url:
        add_upstream(app, model_url)
        client = app.test_client()
        put(client, "down", {"label": "Down", "provider": "upstream", "model": "gpt-test"})
        run = client.post("/api/agents/down/runs", json={"message": "Hello?"}).get_json()
        flush(app)

    assert run["stop_reason"] == "error"
    (chat,) = receiver.named("chat")
    assert chat["attributes"]["error.type"] == "500"
    assert chat["status"] == (2, run["error"])  # STATUS_CODE_ERROR
    agent = agent_span(receiver)
    assert agent["attributes"]["error.type"] == "500" and agent["attributes"]["toolgate.stop_reason"] == "error"
    assert chat["parent_span_id"] == agent["span_id"]


# --- A collector that hangs or fails -------------------------------------------------------------------------------


@contextmanager
def collector_in(mode):
    """(a receiver that hangs or fails, served; its base URL), or for "down" a port nothing listens on."""
    if mode == "down":
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()
        yield OtlpReceiver(), f"http://127.0.0.1:{port}"
        return
    receiver = OtlpReceiver(mode)
    with serving(receiver) as base_url:
        yield receiver, base_url


@pytest.mark.parametrize("mode", ["down", "hang", "fail"])
def test_a_collector_that_is_down_hangs_or_fails_costs_runs_nothing_and_is_logged_once(
    tmp_path, migrated_database, mode
):
    with collector_in(mode) as (receiver, base_url), exporting_app(tmp_path, migrated_database, base_url) as app:
        client = app.test_client()
        put(client, "bundles", bundles_agent())
        runs = []
        for _ in range(2):
            runs.append(client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}))
            app.extensions["toolgate_tracing"].force_flush(5)
        assert [(response.status_code, response.get_json()["stop_reason"]) for response in runs] == [
            (201, "answered")
        ] * 2
        assert receiver.requests >= (0 if mode == "down" else 2)
        log = client.get("/log?level=error").get_data(as_text=True)
        receiver.release()

    assert log.count("Traces could not be sent to the collector at http://127.0.0.1:") == 1
    assert receiver.spans == []


# --- The run page's link -------------------------------------------------------------------------------------------


def test_the_run_page_links_to_the_trace_when_a_trace_url_is_set(tmp_path, migrated_database, collector):
    with traced_app(tmp_path, migrated_database, collector, TRACE_URL="http://localhost:6006/traces/{trace_id}") as (
        app,
        receiver,
    ):
        client = app.test_client()
        put(client, "bundles", bundles_agent())
        run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
        flush(app)
        page = client.get(f"/runs/{run['id']}").get_data(as_text=True)

    assert f'href="http://localhost:6006/traces/{agent_span(receiver)["trace_id"]}"' in page


def test_without_a_trace_url_or_an_exported_trace_the_run_page_has_no_link(tmp_path, migrated_database):
    app = make_app(tmp_path, database_from=migrated_database, TRACE_URL="http://localhost:6006/traces/{trace_id}")
    client = app.test_client()
    put(client, "bundles", bundles_agent())
    run = client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()
    assert "localhost:6006" not in client.get(f"/runs/{run['id']}").get_data(as_text=True)
