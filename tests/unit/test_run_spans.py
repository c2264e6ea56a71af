"""A stored run as span descriptions (services/run_spans.py), from real runs of the scripted model: the times of each
round, what a run exported bit by bit sends compared with the same run exported once, a proxied round's calls sent
once its client said it ran them, and what capture adds."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import run_agent
from services.run_spans import Cursor, error_type, new_spans, round_times

CREATED_AT = "2026-12-03T06:00:00+00:00"
CREATED = 1796277600.0  # CREATED_AT in Unix seconds
TWO_LIST_BUNDLES = {
    "tool_calls": [
        {"name": "list_bundles", "arguments": {"entity_type": "node"}},
        {"name": "list_bundles", "arguments": {"entity_type": "media"}},
    ]
}


def stored(agent, message="Which bundles?", **extra):
    """The run as the store gives it back: the engine's run with its id, creation time and source."""
    return {**run_agent({"id": "a", "label": "Agent A", **agent}, message), "id": 7, "created_at": CREATED_AT, **extra}


def shape(spans):
    """What a span says, whatever the clock: its name, its round and call, its events."""
    return sorted(
        json.dumps(
            [
                span.name,
                span.attributes.get("toolgate.round.number"),
                span.attributes.get("gen_ai.tool.call.id"),
                [event.attributes for event in span.events],
            ]
        )
        for span in spans
    )


def test_a_round_starts_when_its_request_was_sent_else_where_the_round_before_ended():
    run = stored(
        {
            "tools": {"list_entity_types": {}},
            "script": [{"tool_calls": [{"name": "list_entity_types"}]}, {"content": "Done."}],
        }
    )
    first, second = run["rounds"]
    first.update(latency_ms=250.0, started_at=CREATED + 2)
    second.update(latency_ms=500.0)
    second.pop("started_at", None)

    assert round_times(run) == [(CREATED + 2, CREATED + 2.25), (CREATED + 2.25, CREATED + 2.75)]
    second["started_at"] = CREATED + 3
    assert round_times(run)[1] == (CREATED + 3, CREATED + 3.5)


@settings(max_examples=40, deadline=None)
@given(
    rounds=st.lists(st.sampled_from(["free", "restricted_twice", "both"]), min_size=1, max_size=4),
    cuts=st.sets(st.integers(min_value=0, max_value=4)),
)
def test_a_run_exported_step_by_step_sends_each_span_once_as_the_run_exported_whole_does(rounds, cuts):
    responses = {
        "free": {"tool_calls": [{"name": "list_entity_types"}]},
        "restricted_twice": TWO_LIST_BUNDLES,
        "both": {
            "tool_calls": [
                {"name": "list_entity_types"},
                {"name": "list_bundles", "arguments": {"entity_type": "user"}},
            ]
        },
    }
    agent = {
        "tools": {"list_bundles": {"restrict_multiple_calls": True}, "list_entity_types": {}},
        "script": [responses[kind] for kind in rounds] + [{"content": "Done."}],
    }
    run = stored(agent)
    whole = new_spans(run, Cursor(), now=CREATED + 60)

    cursor, sent = Cursor(), []
    for cut in sorted(cut for cut in cuts if cut < len(run["rounds"])):
        snapshot = {**run, "rounds": run["rounds"][:cut], "stop_reason": None, "state": "running"}
        export = new_spans(snapshot, cursor, now=CREATED + 30)
        assert not any(span.agent for span in export.spans)  # the run's own span waits for its end
        cursor, sent = export.cursor, [*sent, *export.spans]
    last = new_spans(run, cursor, now=CREATED + 60)

    assert shape([*sent, *last.spans]) == shape(whole.spans)
    assert last.cursor == whole.cursor == Cursor(len(run["rounds"]), len(run["rounds"]), True)
    assert new_spans(run, last.cursor, now=CREATED + 90).spans == ()
    rejected = sum(call["status"] == "rejected" for round_ in run["rounds"] for call in round_["calls"])
    events = [event for span in whole.spans for event in span.events]
    assert (
        len(events) == rejected
        and len([span for span in whole.spans if span.name.startswith("execute_tool")]) == (run["tool_calls"])
    )


def proxied_snapshots():
    """A proxied run as its client's two requests leave it: the call handed to the client, then run by it."""
    run = stored(
        {
            "tools": {"list_entity_types": {}},
            "script": [{"tool_calls": [{"name": "list_entity_types"}]}, {"content": "Done."}],
        },
        source="proxy",
    )
    handed, answered = run["rounds"]
    call = {**handed["calls"][0], "status": "allowed", "output": None}
    first = {**run, "rounds": [{**handed, "calls": [call], "shown_to_client": True}], "stop_reason": "awaiting_client"}
    ran = {**call, "status": "executed", "run_by": "client", "output": "node, user"}
    second = {
        **run,
        "rounds": [{**handed, "calls": [ran], "shown_to_client": True}, {**answered, "shown_to_client": True}],
    }
    return first, second


def test_a_proxied_call_is_a_function_tool_span_once_the_clients_next_request_says_it_ran():
    first, second = proxied_snapshots()

    handed = new_spans(first, Cursor(), now=CREATED + 10, conversation_id="7")
    assert [span.name for span in handed.spans] == ["chat scripted"]
    assert handed.spans[0].attributes["toolgate.round.shown_to_client"] is True
    assert handed.spans[0].attributes["gen_ai.conversation.id"] == "7"
    assert handed.cursor == Cursor(1, 0, False)

    answered = new_spans(second, handed.cursor, now=CREATED + 20, conversation_id="7")
    assert [span.name for span in answered.spans] == [
        "chat scripted",
        "execute_tool list_entity_types",
        "invoke_agent a",
    ]
    tool = answered.spans[1]
    assert tool.attributes["gen_ai.tool.type"] == "function"
    # From the response the client got to the request its results came with (rounds record their times to the ms).
    assert tool.start == round_times(second)[0][1] and tool.end == max(tool.start, round_times(second)[1][0])


def test_capture_adds_the_messages_and_a_rejections_quoted_arguments_through_the_redaction():
    agent = {
        "tools": {"list_bundles": {"argument_rules": {"entity_type": {"action": "only_allow", "values": ["node"]}}}},
        "script": [
            {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "secret-value"}}]},
            {"content": "No."},
        ],
    }
    run = stored(agent, message="Bundles of secret-value?")

    hidden = new_spans(run, Cursor(), now=CREATED + 5)
    (event,) = hidden.spans[0].events
    assert event.attributes["toolgate.guardrail.reason"] == "argument_not_allowed"
    assert event.attributes["toolgate.guardrail.setting"] == "argument_rules"
    assert "toolgate.guardrail.message" not in event.attributes
    assert "secret-value" not in json.dumps(
        [[span.attributes, [e.attributes for e in span.events]] for span in hidden.spans]
    )

    shown = new_spans(
        run, Cursor(), now=CREATED + 5, capture=True, redact=lambda text: text.replace("secret", "[redacted]")
    )
    (event,) = shown.spans[0].events
    assert event.attributes["toolgate.guardrail.message"].startswith("Error: invalid value for entity_type")
    assert "[redacted]-value" in event.attributes["toolgate.guardrail.message"]
    text = json.dumps([[span.attributes, [e.attributes for e in span.events]] for span in shown.spans])
    assert "secret" not in text
    assert json.loads(shown.spans[-1].attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == (
        "Bundles of [redacted]-value?"
    )


def test_a_rounds_request_is_the_transcript_before_its_answer_while_a_later_round_waits_for_approval():
    agent = {
        "tools": {"list_bundles": {"require_approval": True}, "list_entity_types": {}},
        "script": [
            {"tool_calls": [{"name": "list_entity_types"}]},
            {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
            {"content": "Done."},
        ],
    }
    run = stored(agent)
    assert run["state"] == "awaiting_approval" and len(run["rounds"]) == 1

    (chat, tool) = new_spans(run, Cursor(), now=CREATED + 5, capture=True).spans
    assert [message["role"] for message in json.loads(chat.attributes["gen_ai.input.messages"])] == ["user"]
    assert tool.name == "execute_tool list_entity_types"


def test_a_provider_failure_is_classed_by_what_its_text_says():
    assert [
        error_type("The model endpoint answered HTTP 503: busy."),
        error_type("The model did not answer in time (timeout)."),
        error_type("Could not reach the model endpoint: refused."),
        error_type("The model's answer could not be read: it has no message."),
        error_type(None),
    ] == ["503", "timeout", "connection_error", "provider_error", "provider_error"]
