"""Properties of the policy proxy (engine.proxy), for random agents and random upstream answers played over a whole
conversation by a client that runs every call it gets: every response the client receives passes the gate, every
transcript sent upstream answers each call id exactly once, and the upstream is asked at most once more than the
rounds the client's conversation has left; and such a conversation, saved as a regression case, replays to a pass
against the same settings."""

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cases import case_from_run, check_case, validate_case
from engine.config import load_agent
from engine.gate import review_calls
from engine.proxy.client_tools import proxy_view
from engine.proxy.core import answer_request
from engine.proxy.recording import restored_history
from engine.proxy.request import read_request
from engine.proxy.serve import RunsInMemory, answer_and_record
from engine.proxy.turn import current_turn
from engine.proxy.upstream import upstream_for_agent
from engine.types import ToolCall
from tests import strategies
from tests.doubles import ModelDouble, completion

SCHEMAS = {
    "place": {
        "type": "object",
        "properties": {"component": {"type": "string"}, "region": {"type": "string"}},
        "required": ["component"],
    },
    "read": {"type": "object", "properties": {"doc": {"type": "string"}}},
    "note": None,  # declared without parameters
}
TOOLS = [
    {"type": "function", "function": {"name": name, **({"parameters": schema} if schema else {})}}
    for name, schema in SCHEMAS.items()
]
REGION_RULES = [
    None,
    {"action": "only_allow", "values": ["header", "content"]},
    {"action": "force_value", "values": ["footer"], "hide": True},
]

tool_settings = strategies.tool_settings(
    required=("restrict_multiple_calls", "max_calls_per_run", "max_identical_calls", "require_usage")
)


@st.composite
def agents(draw):
    client_tools = {}
    for name in draw(st.lists(st.sampled_from(list(SCHEMAS)), unique=True)):
        settings_ = draw(tool_settings)
        rule = draw(st.sampled_from(REGION_RULES)) if name == "place" else None
        if rule:
            settings_["argument_rules"] = {"region": rule}
        client_tools[name] = settings_
    return {
        "id": "proxied",
        "label": "Proxied",
        "max_rounds": draw(st.integers(0, 4)),
        "on_round_cap": draw(st.sampled_from(["final_answer", "message"])),
        "client_tools": client_tools,
    }


arguments = st.one_of(
    st.fixed_dictionaries(
        {"component": st.sampled_from(["hero", "text"])}, optional={"region": st.sampled_from(["header", "footer"])}
    ),
    st.fixed_dictionaries({"doc": st.sampled_from(["a", "b"])}),
    st.just({}),
    st.just("{not json"),
)
calls = st.lists(
    st.tuples(st.sampled_from(["", "c1", "c2", "c3"]), st.sampled_from([*SCHEMAS, "unknown"]), arguments),
    min_size=1,
    max_size=3,
)
answers = st.lists(st.one_of(st.just("text"), calls), min_size=1, max_size=8)


def assistant(answer):
    """The assistant message of one upstream answer of the strategy: "text", or the calls."""
    if answer == "text":
        return {"role": "assistant", "content": "Done."}
    return completion(None, answer)["choices"][0]["message"]


def recording_upstream(answers):
    """Answers the proxy's requests in turn from a list, whatever they say, as a model might; keeps every body."""
    return ModelDouble(*map(assistant, answers), then=assistant("text"), ignores_tools=True)


def assert_every_call_id_answered_once(messages):
    calls = [
        call["id"] for message in messages if message["role"] == "assistant" for call in message.get("tool_calls") or []
    ]
    answered = Counter(message["tool_call_id"] for message in messages if message["role"] == "tool")
    assert len(calls) == len(set(calls)), calls
    assert answered == Counter(calls), (calls, answered)


def assert_passes_the_gate(config, request, message):
    """The calls the client got, reviewed again against what its conversation says ran: all allowed, each already
    carrying the values the agent forces."""
    gate_config, registry = proxy_view(config, request.declared)
    turn = current_turn(request)
    calls = [
        ToolCall(call["id"], call["function"]["name"], call["function"]["arguments"])
        for call in message.get("tool_calls") or []
    ]
    review = review_calls(calls, gate_config, registry, turn.calls_so_far, identical_so_far=turn.identical_so_far)
    assert all(verdict.allowed for verdict in review.verdicts), [verdict.reason for verdict in review.verdicts]
    for call, verdict in zip(calls, review.verdicts, strict=True):
        assert call.parsed_arguments()[0] == verdict.arguments


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=agents(), upstream_answers=answers)
def test_the_client_only_gets_gated_calls_and_upstream_gets_every_id_answered_once(agent, upstream_answers):
    config, _ = load_agent(agent)
    upstream = recording_upstream(upstream_answers)
    messages = [{"role": "user", "content": "Build it."}]
    for _request_number in range(4):
        request = read_request({"model": "m", "messages": messages, "tools": TOOLS})
        asked_before = len(upstream.bodies)
        exchange = answer_request(config, request, upstream.answer)
        rounds_left = max(0, config.max_rounds - current_turn(request).rounds_used)
        assert len(upstream.bodies) - asked_before <= rounds_left + 1
        for body in upstream.bodies[asked_before:]:
            assert_every_call_id_answered_once(body["messages"])
            if config.max_rounds == 0:
                assert {"tools", "tool_choice", "parallel_tool_calls"}.isdisjoint(body)
        message = exchange.completion["choices"][0]["message"]
        assert_passes_the_gate(config, request, message)
        if not message.get("tool_calls"):
            break
        messages += [
            message,
            *({"role": "tool", "tool_call_id": call["id"], "content": "ok"} for call in message["tool_calls"]),
        ]
    assert_every_call_id_answered_once(messages)


def script_item(answer):
    """The scripted model's item for one upstream answer of the strategy."""
    if answer == "text":
        return {"content": "Done."}
    calls = []
    for call_id, name, value in answer:
        calls.append({**({"id": call_id} if call_id else {}), "name": name, "arguments": value})
    return {"tool_calls": calls}


def proxied_run(agent, message):
    """The run recorded for a conversation a client drives through the proxy to its end, running every call it
    gets (the result names the call): each request answered and recorded by engine.proxy.serve, the function the
    app's proxy calls too."""
    config, merged = load_agent(agent)
    ask = upstream_for_agent(config)
    runs = RunsInMemory()
    messages = [{"role": "system", "content": "Build pages."}, message]
    while True:
        request = read_request({"model": "m", "messages": messages, "tools": TOOLS})
        exchange, run = answer_and_record(config, merged, request, ask, runs)
        answer = exchange.completion["choices"][0]["message"]
        if exchange.stop_reason != "awaiting_client":
            assert len(runs.runs) == 1  # every request of the conversation joined its one run
            return {**run, "created_at": "2026-12-01T00:00:00Z"}
        ran = [
            {"role": "tool", "tool_call_id": call["id"], "content": f"ran {call['id']}"}
            for call in answer["tool_calls"]
        ]
        messages = [*messages, answer, *ran]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agent=agents(), upstream_answers=answers)
def test_a_proxied_conversation_saved_as_a_case_replays_to_a_pass_against_the_same_settings(agent, upstream_answers):
    agent = {**agent, "script": [script_item(answer) for answer in upstream_answers]}
    run = proxied_run(agent, {"role": "user", "content": "Build it."})
    case = validate_case(case_from_run(run, "Recorded through the proxy"))
    assert case["client"]["results"] == {
        call["id"]: f"ran {call['id']}" for round_ in run["rounds"] for call in round_["calls"] if call.get("run_by")
    }
    result = check_case(agent, case)
    assert result["passed"], result["differences"]


def continued_elsewhere(stored, results):
    """The stored run as a concurrent request of the same conversation may leave it: continued with some of the
    client's results already in its transcript (the state a request reading the run between another's find and save
    used to see)."""
    messages = [*stored["messages"], *results]
    return {
        **stored,
        "messages": messages,
        "conversation": {**stored["conversation"], "upstream_length": len(messages)},
    }


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.sampled_from(["c1", "c2", "c3"]), min_size=1, max_size=3, unique=True), data=st.data())
def test_a_restored_history_answers_each_call_id_once_however_far_a_concurrent_request_got(calls, data):
    answer = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "note", "arguments": "{}"}} for call_id in calls
        ],
    }
    opening = [{"role": "user", "content": "Note it."}, answer]
    stored = {"messages": opening, "conversation": {"key": "k", "upstream_length": len(opening)}}
    results = [{"role": "tool", "tool_call_id": call_id, "content": f"ran {call_id}"} for call_id in calls]
    already = data.draw(st.integers(0, len(results)), label="results a concurrent request already recorded")

    history = restored_history(continued_elsewhere(stored, results[:already]), [*opening, *results], len(opening))

    assert_every_call_id_answered_once(history)
