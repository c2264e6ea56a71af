"""Hypothesis strategies the property tests share: one strategy for a tool's settings, so a setting added to SPEC §4
is drawn everywhere by adding it here once; and the hostile text and JSON the bad-input tests send."""

from hypothesis import strategies as st

# Every per-tool setting a property test draws, with the values it draws: small limits, so limits are reached.
SETTINGS = {
    "restrict_multiple_calls": st.booleans(),
    "max_calls_per_run": st.integers(0, 3),
    "max_identical_calls": st.integers(0, 2),
    "use_artifacts": st.booleans(),
    "require_usage": st.booleans(),
    "return_directly": st.booleans(),
    "require_approval": st.booleans(),
}
# What the loop's and the cases' properties vary: the settings that change a run's rounds.
LOOP_SETTINGS = ("restrict_multiple_calls", "max_calls_per_run", "require_usage", "return_directly")


def tool_settings(optional=(), required=(), **values):
    """One tool's settings: each key of `required` always drawn, each of `optional` sometimes; `values` replaces the
    strategy of a key (and adds a required key, such as `argument_rules`, that SETTINGS does not draw)."""
    strategies = {**SETTINGS, **values}
    extra = {key: values[key] for key in values if key not in SETTINGS}
    return st.fixed_dictionaries(
        {**{key: strategies[key] for key in required}, **extra},
        optional={key: strategies[key] for key in optional},
    )


# Lone surrogates: Python strings may hold them ("\ud800" in JSON), UTF-8 and SQLite may not.
SURROGATES = st.sampled_from(["\ud800", "\udfff"])


def hostile_text(*words):
    """Short text that may hold a lone surrogate, or one of `words` (the names the code under test looks for)."""
    return st.text(st.characters() | SURROGATES, max_size=8) | st.sampled_from(["", *words])


def hostile_json(text):
    """Any JSON-shaped value, NaN and Infinity included, its strings and keys drawn from `text`."""
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
        max_leaves=8,
    )
