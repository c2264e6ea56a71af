"""Properties over generated input: arbitrary Unicode (lone surrogates included), NaN, nesting of any depth and
arbitrary bytes, fed to the agents API, the runs API and the gate API. Never a server error (the test app lets
exceptions through, so any one fails the test); every refusal is a 4xx in the API's error shape (checked by the
test client) and changes nothing."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import AGENT_DEFAULTS, TOOL_SETTING_DEFAULTS
from tests.bad_input_support import AGENT_ID, TABLES
from tests.database import Database
from tests.run_scenarios import bundles_agent
from tests.support import make_app

SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc80", "\udfff"])
TOOL_NAMES = ["list_bundles", "list_entity_types", "read_document", "place_component"]
# Any character, with lone surrogates made frequent (a uniform draw almost never picks one).
text = st.text(st.characters() | SURROGATES, max_size=12) | st.sampled_from(["", "node", *TOOL_NAMES])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | text


def nested(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=12,
) | st.integers(0, 400).map(nested)
tool_calls = st.lists(
    st.fixed_dictionaries(
        {"id": text, "name": st.sampled_from(TOOL_NAMES) | text},
        optional={"arguments": json_values | st.dictionaries(text, json_values, max_size=3), "type": text},
    ),
    max_size=4,
)
scripts = st.lists(st.fixed_dictionaries({}, optional={"content": text, "tool_calls": tool_calls}), max_size=3)
agent_fields = {name: json_values for name in AGENT_DEFAULTS} | {
    "tools": st.dictionaries(
        st.sampled_from(TOOL_NAMES) | text,
        st.dictionaries(st.sampled_from(list(TOOL_SETTING_DEFAULTS)) | text, json_values, max_size=3) | json_values,
        max_size=3,
    ),
    "script": scripts | json_values,
    "label": text,
}
agents = st.fixed_dictionaries({}, optional=agent_fields) | json_values
overrides = st.fixed_dictionaries({}, optional=agent_fields) | json_values
deep_text = st.integers(0, 100_000).map(lambda levels: ('{"message": ' + "[" * levels + "]" * levels + "}").encode())
bodies_of_bytes = st.binary(max_size=200) | deep_text | st.builds(lambda value: json.dumps(value).encode(), json_values)
RELAXED = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = make_app(tmp_path_factory.mktemp("hostile"))
    client = app.test_client()
    assert client.put(f"/api/agents/{AGENT_ID}", json=bundles_agent()).status_code == 201
    client.database = Database(app.config["DATABASE_URL"])
    yield client
    client.database.close()


def state(client):
    database = client.database
    return {table: database[table].count for table in TABLES}, [dict(row) for row in database["agents"].rows]


def send(client, method, path, **request):
    before = state(client)
    response = getattr(client, method)(path, **request)
    assert response.status_code < 500
    if response.status_code >= 400:
        assert state(client) == before, response.get_json()
    return response


@RELAXED
@given(agent=agents)
def test_the_agents_api_takes_any_json_without_a_server_error(client, agent):
    send(client, "put", "/api/agents/generated", json=agent)


@RELAXED
@given(changes=st.fixed_dictionaries({}, optional=agent_fields))
def test_changing_a_stored_agent_in_any_way_never_fails_on_the_server(client, changes):
    stored = client.get(f"/api/agents/{AGENT_ID}").get_json()
    response = send(client, "put", f"/api/agents/{AGENT_ID}", json={**stored, **changes})
    if response.status_code == 200:  # put it back for the next example
        restored = {**bundles_agent(), "revision": response.get_json()["revision"]}
        assert client.put(f"/api/agents/{AGENT_ID}", json=restored).status_code == 200


@RELAXED
@given(message=json_values, run_overrides=overrides)
def test_the_runs_api_takes_any_json_without_a_server_error(client, message, run_overrides):
    send(client, "post", f"/api/agents/{AGENT_ID}/runs", json={"message": message, "overrides": run_overrides})


@RELAXED
@given(calls=tool_calls | json_values, gate_overrides=overrides, calls_so_far=json_values)
def test_the_gate_api_takes_any_json_without_a_server_error(client, calls, gate_overrides, calls_so_far):
    body = {"tool_calls": calls, "overrides": gate_overrides, "calls_so_far": calls_so_far}
    send(client, "post", f"/api/agents/{AGENT_ID}/gate", json=body)


@RELAXED
@given(body=bodies_of_bytes, path=st.sampled_from([f"/api/agents/{AGENT_ID}", f"/api/agents/{AGENT_ID}/runs"]))
def test_any_bytes_as_a_json_body_never_fail_on_the_server(client, body, path):
    method = "put" if path.endswith(AGENT_ID) else "post"
    send(client, method, path, data=body, content_type="application/json")
