"""engine.json_copy.json_copy in place of copy.deepcopy on the JSON values the engine copies (the tool schemas the
model sees, the tools a round sent, a call's review, argument rules and forced values): for any JSON value (and tuples
of them, as a round keeps the tools it sent), the copy is what deepcopy makes — equal, the same JSON text, the same
types all the way down — and shares no dict or list with the original, so a change to either never shows in the
other."""

import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from engine.json_copy import json_copy

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def _shape(value):
    """The value's types, all the way down."""
    if isinstance(value, dict):
        return ("dict", [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_shape(item) for item in value])
    return type(value).__name__


def _containers(value):
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)
    elif isinstance(value, tuple):
        for item in value:
            yield from _containers(item)


@given(values)
def test_a_copy_is_what_deepcopy_makes(value):
    copied = json_copy(value)
    assert copied == copy.deepcopy(value)
    assert _shape(copied) == _shape(value)
    assert json.dumps(copied) == json.dumps(value)


@given(values)
def test_a_copy_shares_no_dict_or_list_with_the_original(value):
    originals = {id(container) for container in _containers(value)}
    assert not originals & {id(container) for container in _containers(json_copy(value))}


def test_changing_the_copy_of_a_schema_leaves_the_schema_alone():
    schema = {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}
    copied = json_copy(schema)
    copied["properties"]["region"]["enum"] = ["eu"]
    copied["required"].append("zone")
    assert schema == {"type": "object", "properties": {"region": {"type": "string"}}, "required": ["region"]}
