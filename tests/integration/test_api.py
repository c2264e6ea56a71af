"""The agents JSON API (SPEC §8): the engine's JSON form in and out, the pages' validation, JSON errors."""

import pytest

from engine.config import AGENT_DEFAULTS, TOOL_SETTING_DEFAULTS

pytestmark = pytest.mark.both_engines


def put(client, agent_id, body):
    return client.put(f"/api/agents/{agent_id}", json=body)


def test_list_is_empty_then_has_the_agents(client):
    assert client.get("/api/agents").get_json() == {"agents": []}
    put(client, "beta", {"label": "Beta"})
    put(client, "alpha", {"label": "Alpha"})
    assert [agent["id"] for agent in client.get("/api/agents").get_json()["agents"]] == ["alpha", "beta"]


def test_put_creates_with_every_default_filled_in(client):
    response = put(client, "fresh", {"label": "Fresh", "tools": {"list_bundles": {"restrict_multiple_calls": True}}})
    assert response.status_code == 201
    agent = response.get_json()
    assert agent == {
        **AGENT_DEFAULTS,
        "id": "fresh",
        "label": "Fresh",
        "tools": {"list_bundles": {**TOOL_SETTING_DEFAULTS, "restrict_multiple_calls": True}},
        "revision": 1,
    }
    assert list(agent) == ["id", *AGENT_DEFAULTS]
    assert client.get("/api/agents/fresh").get_json() == agent


def test_put_replaces_with_the_current_revision_and_increments_it(client):
    put(client, "agent", {"label": "One"})
    response = put(client, "agent", {"label": "Two", "revision": 1})
    assert response.status_code == 200
    assert response.get_json()["label"] == "Two" and response.get_json()["revision"] == 2


def test_put_replaces_the_whole_agent(client):
    put(client, "agent", {"label": "One", "model": "m", "tools": {"list_bundles": {}}})
    agent = put(client, "agent", {"label": "One", "revision": 1}).get_json()
    assert agent["model"] == "" and agent["tools"] == {}


def test_put_over_a_newer_revision_is_a_409_and_stores_nothing(client):
    put(client, "agent", {"label": "One"})
    put(client, "agent", {"label": "Two", "revision": 1})
    response = put(client, "agent", {"label": "Stale", "revision": 1})
    assert response.status_code == 409
    body = response.get_json()
    assert body["revision"] == 2 and "revision 2" in body["error"]
    assert client.get("/api/agents/agent").get_json()["label"] == "Two"


def test_get_and_delete_of_an_unknown_agent_are_404(client):
    for response in (client.get("/api/agents/ghost"), client.delete("/api/agents/ghost")):
        assert response.status_code == 404
        assert response.get_json() == {
            "error": 'agent_id: No agent with id "ghost".',
            "field": "agent_id",
            "errors": {"agent_id": 'No agent with id "ghost".'},
        }


def test_delete_then_gone(client):
    put(client, "doomed", {"label": "Doomed", "tools": {"list_bundles": {}}})
    response = client.delete("/api/agents/doomed")
    assert response.status_code == 204 and response.data == b""
    assert client.get("/api/agents/doomed").status_code == 404


def test_delete_with_a_stale_revision_is_a_409(client):
    put(client, "agent", {"label": "One"})
    put(client, "agent", {"label": "Two", "revision": 1})
    assert client.delete("/api/agents/agent?revision=1").status_code == 409
    assert client.delete("/api/agents/agent?revision=x").status_code == 400
    assert client.delete("/api/agents/agent?revision=²").status_code == 400  # a digit, but not a number
    assert client.delete("/api/agents/agent?revision=2").status_code == 204


def test_invalid_json_is_a_400(client):
    response = client.put("/api/agents/bad", data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.get_json() == {
        "error": "body: is not valid JSON",
        "field": "body",
        "errors": {"body": "is not valid JSON"},
    }


def test_json_nested_too_deeply_is_a_400_and_stores_nothing(client):
    deep = "[" * 100_000 + "]" * 100_000
    response = client.put("/api/agents/deep", data=deep, content_type="application/json")
    assert response.status_code == 400
    assert response.get_json() == {
        "error": "body: is nested too deeply to be read",
        "field": "body",
        "errors": {"body": "is nested too deeply to be read"},
    }
    arguments = '{"a": ' * 500 + "1" + "}" * 500
    body = '{"label": "Deep", "script": [{"tool_calls": [{"name": "list_bundles", "arguments": ' + arguments + "}]}]}"
    assert client.put("/api/agents/deep", data=body, content_type="application/json").status_code == 400
    assert client.get("/api/agents/deep").status_code == 404


def test_a_body_that_is_not_json_is_a_415(client):
    response = client.put("/api/agents/bad", data={"label": "form post"})
    assert response.status_code == 415
    assert "Content-Type: application/json" in response.get_json()["error"]


def test_the_id_in_the_body_must_match_the_address(client):
    response = put(client, "one", {"id": "two", "label": "Mismatch"})
    assert response.status_code == 400
    assert response.get_json()["errors"] == {"id": 'does not match the address ("one"); an agent\'s id cannot change'}


@pytest.mark.parametrize(
    ("agent_id", "body", "error"),
    [
        ("ok", [], "agent: must be a JSON object"),
        ("ok", {}, "label: is required"),
        ("ok", {"label": "x" * 201}, "label: must be at most 200 characters (got 201)"),
        ("Not_OK", {"label": "L"}, "id: must start with a lowercase letter"),
        ("new", {"label": "L"}, 'id: "new" is reserved; choose another id'),
        ("ok", {"label": "L", "max_rounds": 101}, "max_rounds: must be from 0 to 100 (got 101)"),
        ("ok", {"label": "L", "max_rounds": "5"}, "max_rounds: must be a whole number from 0 to 100"),
        ("ok", {"label": "L", "on_round_cap": "x"}, "on_round_cap: must be one of: final_answer, message"),
        ("ok", {"label": "L", "parallel_tool_calls": "yes"}, "parallel_tool_calls: must be true, false or null"),
        ("ok", {"label": "L", "provider": "nowhere"}, 'provider: no provider connection has the id "nowhere"'),
        ("ok", {"label": "L", "colour": "red"}, "colour: is not an agent field"),
        ("ok", {"label": "L", "tools": {"no_such_tool": {}}}, 'tools.no_such_tool: "no_such_tool" is not a registered'),
        (
            "ok",
            {"label": "L", "tools": {"list_bundles": {"require_usage": "yes"}}},
            "tools.list_bundles.require_usage: must be true or false",
        ),
        (
            "ok",
            {"label": "L", "tools": {"list_bundles": {"max_calls_per_run": -1}}},
            "tools.list_bundles.max_calls_per_run: must be from 0 to 10000 (got -1)",
        ),
        (
            "ok",
            {"label": "L", "tools": {"list_bundles": {"colour": "red"}}},
            "tools.list_bundles.colour: is not a tool setting",
        ),
        ("ok", {"label": "L", "script": [{"say": "hi"}]}, "script: response 1 has unknown key(s): say"),
        (
            "ok",
            {"label": "L", "system_prompt": "p" * 100_001},
            "system_prompt: must be at most 100,000 characters (got 100,001)",
        ),
        ("ok", {"label": "L", "revision": 2**64}, "revision: must be a whole number from 1 to"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client, agent_id, body, error):
    response = put(client, agent_id, body)
    assert response.status_code == 400
    assert response.get_json()["error"].startswith(error)
    assert client.get(f"/api/agents/{agent_id}").status_code == 404


def test_every_bad_field_is_listed(client):
    body = put(client, "ok", {"label": "", "max_rounds": -1}).get_json()
    assert set(body["errors"]) == {"label", "max_rounds"}


def test_the_restriction_off_clears_the_message(client):
    agent = put(client, "agent", {"label": "L", "tools": {"list_bundles": {"multiple_call_error_message": "Error!"}}})
    assert agent.get_json()["tools"]["list_bundles"]["multiple_call_error_message"] == ""


def test_the_api_and_the_form_share_one_validation(client):
    from tests.html_reader import page_of
    from tests.support import agent_form_data

    api = put(client, "same", {"label": "L", "max_rounds": 101}).get_json()["errors"]["max_rounds"]
    form = page_of(client.post("/agents/new", data=agent_form_data({"label": "L", "id": "same", "max_rounds": 101})))
    assert form.errors("max_rounds") == [f"Max rounds {api}."]


def test_an_agent_saved_by_the_form_reads_the_same_in_the_api(client, actions):
    actions.create(label="From form", id="from_form", tools={"list_bundles": {"restrict_multiple_calls": True}})
    agent = client.get("/api/agents/from_form").get_json()
    agent["label"] = "From API"
    assert put(client, "from_form", agent).status_code == 200
    assert actions.get("from_form")["revision"] == 2


def test_an_oversized_body_is_a_json_413(client):
    response = client.put(
        "/api/agents/big", data='{"label": "' + "x" * (5 * 1024 * 1024) + '"}', content_type="application/json"
    )
    assert response.status_code == 413
    assert "larger than this server accepts" in response.get_json()["error"]


def test_unknown_api_address_and_method_answer_json(client):
    assert client.get("/api/nothing").get_json() == {
        "error": "There is nothing at this address. It may have been deleted, or the link is wrong.",
        "field": None,
        "errors": {},
    }
    response = client.post("/api/agents/x")
    assert response.status_code == 405 and "error" in response.get_json()


def test_the_api_needs_no_csrf_token(csrf_app):
    client = csrf_app.test_client()
    assert put(client, "agent", {"label": "No token"}).status_code == 201
