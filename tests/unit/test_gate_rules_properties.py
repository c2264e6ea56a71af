"""The gate's step 1 with every per-call rule (SPEC §4), as properties over random settings, responses, history and
artifacts: the reason of each call is the first check it fails, in the order unknown tool, artifacts, arguments,
argument rules, repeated call, call limit — and a repeated restricted tool still overrides them all."""

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.artifacts import PLACEHOLDER
from engine.config import load_agent
from engine.gate import identical_call_key, review_calls
from engine.tools import Tool, ToolRegistry
from engine.types import ToolCall
from tests import strategies

ARGUMENTS = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
    "required": ["n"],
    "additionalProperties": False,
}
ENABLEABLE = ("alpha", "beta", "gamma")
REGISTRY = ToolRegistry(
    Tool(name, f"The {name} tool.", ARGUMENTS, lambda arguments, context: "ok") for name in ENABLEABLE
)
NAMES = ("alpha", "alpha", "beta", "gamma", "ghost")  # ghost is not registered
ARTIFACTS = {"{{artifact:alpha:1}}": "first output", "{{artifact:beta:1}}": "7"}
KNOWN_PLACEHOLDERS = tuple(ARTIFACTS)
UNKNOWN_PLACEHOLDER = "{{artifact:alpha:9}}"
PROPERTY_SETTINGS = settings(max_examples=300, deadline=None)

# Drawn so that every reason comes up often: small numbers collide, most calls are well formed.
NUMBERS = st.integers(0, 2)
n_rules = st.one_of(
    st.none(),
    st.builds(lambda values: {"action": "only_allow", "values": sorted(values)}, st.sets(NUMBERS, min_size=1)),
    st.builds(
        lambda value, hide: {"action": "force_value", "values": [value], "hide": hide},
        NUMBERS,
        st.sampled_from([False, False, True]),
    ),
)
tool_settings = strategies.tool_settings(
    required=("restrict_multiple_calls", "max_calls_per_run", "max_identical_calls"),
    restrict_multiple_calls=st.sampled_from([False, False, False, True]),
    argument_rules=n_rules.map(lambda rule: {"n": rule} if rule else {}),
)
enabled_tools = st.fixed_dictionaries(
    {"alpha": tool_settings, "beta": tool_settings}, optional={"gamma": tool_settings}
)
# n: absent, a number, or the wrong type; s: absent, plain text, a known or an unknown placeholder.
call_specs = st.lists(
    st.tuples(
        st.sampled_from(NAMES),
        st.sampled_from([0, 1, 2, 0, 1, 2, None, "three"]),
        st.sampled_from(
            [None, None, None, "plain", *KNOWN_PLACEHOLDERS, UNKNOWN_PLACEHOLDER, "see {{artifact:beta:1}}"]
        ),
        st.booleans(),  # sent as a JSON string, as a real provider does
    ),
    max_size=12,
)
history = st.lists(st.tuples(st.sampled_from(ENABLEABLE), NUMBERS), max_size=6)


def config_for(tools):
    config, _ = load_agent({"id": "t", "label": "T", "tools": tools}, known_tools=REGISTRY.parameters_by_name())
    return config


def build_calls(specs):
    calls = []
    for number, (name, n, s, as_text) in enumerate(specs, start=1):
        arguments = {key: value for key, value in (("n", n), ("s", s)) if value is not None}
        calls.append(ToolCall(f"id{number}", name, json.dumps(arguments) if as_text else arguments))
    return calls


def previous(ran):
    """calls_so_far and identical_so_far of calls that already ran, each with arguments {"n": value}."""
    return Counter(name for name, _n in ran), Counter(identical_call_key(name, {"n": n}) for name, n in ran)


def resolved(text):
    return PLACEHOLDER.sub(lambda match: ARTIFACTS["{{" + match.group(1) + "}}"], text)


def expected_reasons(specs, tools, ran):
    """Step 1 written out independently: for each call, the first check it fails (None when it is allowed),
    counting the calls allowed earlier in the response."""
    counts, identical = previous(ran)
    reasons = []
    for name, n, s, _as_text in specs:
        settings_ = tools.get(name)
        rule = (settings_ or {}).get("argument_rules", {}).get("n")
        forced = bool(rule and rule["action"] == "force_value")  # hidden or not: in place before the schema check
        if settings_ is None:
            reasons.append("unknown_tool")
            continue
        if s == UNKNOWN_PLACEHOLDER or (not forced and (n is None or n == "three")):
            reasons.append("invalid_arguments")
            continue
        if rule and rule["action"] == "only_allow" and n not in rule["values"]:
            reasons.append("argument_not_allowed")
            continue
        arguments = {"n": rule["values"][0] if rule and rule["action"] == "force_value" else n}
        if s is not None:
            arguments["s"] = resolved(s)
        key = identical_call_key(name, arguments)
        if settings_["max_identical_calls"] and identical[key] >= settings_["max_identical_calls"]:
            reasons.append("repeated_call")
            continue
        if settings_["max_calls_per_run"] and counts[name] >= settings_["max_calls_per_run"]:
            reasons.append("call_limit")
            continue
        counts[name] += 1
        identical[key] += 1
        reasons.append(None)
    return reasons


def review(tools, specs, ran):
    counts, identical = previous(ran)
    return review_calls(
        build_calls(specs), config_for(tools), REGISTRY, counts, identical_so_far=identical, artifacts=ARTIFACTS
    )


def repeated_restricted(specs, tools):
    counts = Counter(name for name, *_rest in specs)
    return {name for name, count in counts.items() if count > 1 and tools.get(name, {}).get("restrict_multiple_calls")}


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, history)
def test_each_call_is_rejected_for_the_first_check_it_fails(tools, specs, ran):
    result = review(tools, specs, ran)

    if not repeated_restricted(specs, tools):
        assert [verdict.reason for verdict in result.verdicts] == expected_reasons(specs, tools, ran)
        assert [verdict.allowed for verdict in result.verdicts] == [
            reason is None for reason in expected_reasons(specs, tools, ran)
        ]


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, history)
def test_a_repeated_restricted_tool_gets_every_call_the_restriction_messages_and_nothing_else(tools, specs, ran):
    repeated = repeated_restricted(specs, tools)

    result = review(tools, specs, ran)

    if repeated:
        assert [verdict.reason for verdict in result.verdicts] == [
            "restricted_repeat" if name in repeated else "collateral" for name, *_rest in specs
        ]
        for verdict in result.verdicts:
            assert not verdict.allowed
            assert verdict.message.startswith(
                f'Error: The tool "{verdict.call.name}" may only be called once per response.'
                if verdict.call.name in repeated
                else "Error: This tool call was not executed, because the tool(s) "
            )
            assert (verdict.arguments, verdict.forced_arguments) == (None, None)


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, history)
def test_an_allowed_call_runs_with_its_rules_applied_and_every_placeholder_replaced(tools, specs, ran):
    config = config_for(tools)

    result = review(tools, specs, ran)

    for verdict in result.verdicts:
        if not verdict.allowed:
            continue
        rule = config.settings_for(verdict.call.name).argument_rules.get("n")
        if rule and rule.action == "only_allow":
            assert verdict.arguments["n"] in rule.values
        if rule and rule.action == "force_value":
            assert verdict.arguments["n"] == rule.forced_value
            assert verdict.forced_arguments == {"n": rule.forced_value}
        else:
            assert verdict.forced_arguments == {}
        assert not PLACEHOLDER.search(verdict.arguments.get("s", ""))


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, history)
def test_no_identical_call_is_allowed_past_its_limit(tools, specs, ran):
    config = config_for(tools)
    _counts, identical = previous(ran)

    result = review(tools, specs, ran)

    allowed = Counter(identical_call_key(v.call.name, v.arguments) for v in result.verdicts if v.allowed)
    for key, count in allowed.items():
        limit = config.settings_for(key[0]).max_identical_calls
        if limit:
            assert identical[key] + count <= limit


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, history)
def test_the_gate_changes_none_of_its_inputs(tools, specs, ran):
    calls = build_calls(specs)
    snapshot = json.dumps([call.arguments for call in calls])
    counts, identical = previous(ran)
    before = (dict(counts), dict(identical), dict(ARTIFACTS))

    review_calls(calls, config_for(tools), REGISTRY, counts, identical_so_far=identical, artifacts=ARTIFACTS)

    assert json.dumps([call.arguments for call in calls]) == snapshot
    assert (dict(counts), dict(identical), dict(ARTIFACTS)) == before
