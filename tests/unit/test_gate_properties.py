"""The gate's invariants (SPEC §4) as properties over random responses of 0–20 calls."""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import load_agent
from engine.gate import review_calls
from engine.types import ToolCall
from tests import strategies
from tests.unit.unit_helpers import ARGUMENT_KINDS, VALID_KINDS, RecordingTools, arguments_for

TOOLS = RecordingTools(names=("alpha", "beta", "gamma", "delta"))
ENABLEABLE = ("alpha", "beta", "gamma")  # delta is registered but never enabled; ghost is not registered
NAMES = ("alpha", "alpha", "beta", "gamma", "delta", "ghost")
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)

tool_settings = strategies.tool_settings(optional=("restrict_multiple_calls", "max_calls_per_run"))
enabled_tools = st.dictionaries(st.sampled_from(ENABLEABLE), tool_settings)
call_specs = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(ARGUMENT_KINDS), st.integers(0, 5)), max_size=20
)
calls_so_far = st.dictionaries(st.sampled_from(ENABLEABLE), st.integers(0, 4))

# Raw values an OpenAI-compatible server might hand over as arguments, besides strings.
RAW_VALUES = ([1], 3, None, "")


def build_calls(specs, raw=None):
    calls = []
    for number, (name, kind, variant) in enumerate(specs, start=1):
        arguments = arguments_for(kind, variant, number)
        if raw is not None and kind == "not_object" and variant % 2:
            arguments = RAW_VALUES[raw % len(RAW_VALUES)]
        calls.append(ToolCall(id=f"id{number}", name=name, arguments=arguments))
    return calls


def config_for(tools):
    config, _merged = load_agent({"id": "t", "label": "T", "tools": tools}, known_tools=set(TOOLS.registry.names()))
    return config


def repeated_restricted(specs, config):
    counts = Counter(name for name, _kind, _variant in specs)
    return {name for name, count in counts.items() if count > 1 and config.settings_for(name).restrict_multiple_calls}


def expected_allowed(specs, config, runs):
    """Step 1 simulated independently: known, valid, and within max_calls_per_run, counting in order."""
    ran = Counter(runs)
    allowed = []
    for name, kind, _variant in specs:
        limit = config.settings_for(name).max_calls_per_run if name in config.tools else 0
        ok = name in config.tools and kind in VALID_KINDS and not (limit and ran[name] >= limit)
        if ok:
            ran[name] += 1
        allowed.append(ok)
    return allowed


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, calls_so_far, st.integers(0, 3))
def test_every_call_gets_exactly_one_verdict_in_response_order(tools, specs, runs, raw):
    calls = build_calls(specs, raw)

    review = review_calls(calls, config_for(tools), TOOLS.registry, runs)

    assert [verdict.call for verdict in review.verdicts] == calls


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, calls_so_far, st.integers(0, 3))
def test_a_repeated_restricted_tool_rejects_the_whole_response(tools, specs, runs, raw):
    config = config_for(tools)
    repeated = repeated_restricted(specs, config)

    review = review_calls(build_calls(specs, raw), config, TOOLS.registry, runs)

    assert set(review.restricted_tools) == repeated
    if repeated:
        assert not any(verdict.allowed for verdict in review.verdicts)
        assert [verdict.reason for verdict in review.verdicts] == [
            "restricted_repeat" if name in repeated else "collateral" for name, _kind, _variant in specs
        ]
    else:
        assert {verdict.reason for verdict in review.verdicts}.isdisjoint({"restricted_repeat", "collateral"})


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, calls_so_far, st.integers(0, 3))
def test_no_restricted_tool_is_allowed_twice_in_one_response(tools, specs, runs, raw):
    config = config_for(tools)

    review = review_calls(build_calls(specs, raw), config, TOOLS.registry, runs)

    allowed = Counter(verdict.call.name for verdict in review.verdicts if verdict.allowed)
    assert all(allowed[name] <= 1 for name in config.tools if config.settings_for(name).restrict_multiple_calls)


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, calls_so_far, st.integers(0, 3))
def test_step_one_allows_exactly_the_known_valid_calls_within_their_limit(tools, specs, runs, raw):
    config = config_for(tools)

    review = review_calls(build_calls(specs, raw), config, TOOLS.registry, runs)

    if not repeated_restricted(specs, config):
        assert [verdict.allowed for verdict in review.verdicts] == expected_allowed(specs, config, runs)


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, calls_so_far, st.integers(0, 3))
def test_a_rejected_call_has_a_reason_and_a_message_and_an_allowed_one_neither(tools, specs, runs, raw):
    review = review_calls(build_calls(specs, raw), config_for(tools), TOOLS.registry, runs)

    for verdict in review.verdicts:
        if verdict.allowed:
            assert (verdict.reason, verdict.message) == (None, None)
            assert isinstance(verdict.arguments, dict)
        else:
            assert verdict.reason in {
                "unknown_tool",
                "invalid_arguments",
                "call_limit",
                "restricted_repeat",
                "collateral",
            }
            assert isinstance(verdict.message, str) and verdict.message


@PROPERTY_SETTINGS
@given(enabled_tools, call_specs, calls_so_far, st.integers(0, 3))
def test_allowed_calls_never_exceed_max_calls_per_run(tools, specs, runs, raw):
    config = config_for(tools)
    runs_before = dict(runs)

    review = review_calls(build_calls(specs, raw), config, TOOLS.registry, runs)

    allowed = Counter(verdict.call.name for verdict in review.verdicts if verdict.allowed)
    for name in config.tools:
        limit = config.settings_for(name).max_calls_per_run
        if limit:
            assert allowed[name] <= max(0, limit - runs.get(name, 0))
    assert runs == runs_before


@PROPERTY_SETTINGS
@given(call_specs, st.integers(0, 3))
def test_with_no_settings_every_valid_call_is_allowed(specs, raw):
    config = config_for({name: {} for name in ENABLEABLE})

    review = review_calls(build_calls(specs, raw), config, TOOLS.registry)

    assert [verdict.allowed for verdict in review.verdicts] == [
        name in ENABLEABLE and kind in VALID_KINDS for name, kind, _variant in specs
    ]
    assert TOOLS.executed == []
