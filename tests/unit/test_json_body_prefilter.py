"""The JSON body check walks a body only when its text could hold what the walk refuses (blueprints.request_checks):
a body the prefilter lets through unwalked never holds a lone surrogate or a number JSON does not have, however it
was written (hypothesis)."""

import json

from hypothesis import given
from hypothesis import strategies as st

from blueprints.request_checks import _MAYBE_REFUSED
from engine.config import json_value_problem
from tests.strategies import hostile_json, hostile_text


@given(hostile_json(hostile_text()), st.booleans())
def test_a_body_the_prefilter_lets_through_has_nothing_the_walk_would_refuse(value, ensure_ascii):
    try:
        data = json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate written as itself is not UTF-8: refused before the prefilter
    if not _MAYBE_REFUSED.search(data):
        assert json_value_problem(json.loads(data), max_depth=None) is None


def test_the_prefilter_sends_an_escaped_surrogate_and_nan_to_the_walk():
    for body in (rb'{"a": "\ud800"}', rb'{"a": "\uDFFF"}', b'{"a": NaN}', b"[-Infinity]"):
        assert _MAYBE_REFUSED.search(body)
    assert not _MAYBE_REFUSED.search(rb'{"a": "\u00e9 caf\u00e9", "b": 1.5}')
