"""Text that is not valid Unicode — bytes that are not UTF-8 in a form or a body, a lone surrogate escaped in
JSON ("\\ud800"), bad bytes on a command line — is refused with a 4xx (or exit status 2) naming the field, and
nothing is stored. Real Unicode, U+FFFD and emoji included, goes through unchanged."""

import json
import os

import pytest

from tests.bad_input_support import (
    AGENT_ID,
    assert_cli_refused,
    assert_json_error,
    assert_page_names_field,
    database_state,
    store_agent,
)
from tests.run_scenarios import BUNDLES_MESSAGE
from tests.support import agent_form_data

pytestmark = pytest.mark.both_engines


FORM = "application/x-www-form-urlencoded"


def form_body(fields, raw_field, raw_value):
    """A URL-encoded form body with one value given as raw bytes, as a client that is not a browser may send."""
    from urllib.parse import urlencode

    return urlencode(fields).encode() + b"&" + raw_field.encode() + b"=" + raw_value


@pytest.mark.parametrize(
    ("raw_value", "why"),
    [(b"Caf\xe9", "a Latin-1 byte"), (b"Caf%E9", "a percent-encoded Latin-1 byte"), (b"%ED%A0%80", "a surrogate")],
)
def test_the_agent_form_refuses_a_label_that_is_not_utf8(client, database, raw_value, why):
    store_agent(client)
    before = database_state(database)
    fields = agent_form_data({"label": "ignored", "id": "new_agent"})
    del fields["label"]
    response = client.post("/agents/new", data=form_body(fields, "label", raw_value), content_type=FORM)
    assert_page_names_field(response, 400, "label")
    assert database_state(database) == before


def test_the_edit_form_refuses_a_system_prompt_that_is_not_utf8_and_keeps_the_agent(client, database):
    agent = store_agent(client)
    before = database_state(database)
    fields = agent_form_data(agent)
    del fields["system_prompt"]
    body = form_body(fields, "system_prompt", b"Be brief \xff")
    assert_page_names_field(client.post(f"/agents/{AGENT_ID}/edit", data=body, content_type=FORM), 400, "system_prompt")
    assert database_state(database) == before


def test_a_multipart_form_is_checked_too(client, database):
    store_agent(client)
    before = database_state(database)
    body = (
        b'--XX\r\nContent-Disposition: form-data; name="title"\r\n\r\nMenu\r\n'
        b'--XX\r\nContent-Disposition: form-data; name="body"\r\n\r\nCr\xe8me br\xfbl\xe9e\r\n--XX--\r\n'
    )
    response = client.post("/documents/new", data=body, content_type="multipart/form-data; boundary=XX")
    assert_page_names_field(response, 400, "body")
    assert database_state(database) == before


def test_the_run_form_refuses_a_message_that_is_not_utf8_and_runs_nothing(client, database):
    store_agent(client)
    before = database_state(database)
    response = client.post(f"/agents/{AGENT_ID}/run", data=b"message=Hi%C3%28", content_type=FORM)
    assert_page_names_field(response, 400, "message")
    assert database_state(database) == before


def test_a_query_string_that_is_not_utf8_is_refused_on_pages_and_the_api(client):
    assert_page_names_field(client.get("/runs?agent=%FF"), 400, "agent")
    assert_json_error(client.get("/api/runs?stop_reason=%C3"), 400, "stop_reason")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"label": "Bundles \ud800"}, "label"),
        ({"system_prompt": "Be brief \udfff"}, "system_prompt"),
        ({"tools": {"list_bundles": {"description_override": "\udc80"}}}, "tools.list_bundles.description_override"),
        ({"tools": {"list_\ud800": {}}}, "tools.list_\\ud800"),
        (
            {"script": [{"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "\ud83d"}}]}]},
            "script[0].tool_calls[0].arguments.entity_type",
        ),
    ],
)
def test_the_agents_api_refuses_a_lone_surrogate_naming_the_field(client, database, change, field):
    agent = store_agent(client)
    before = database_state(database)
    # Flask's JSON escapes a lone surrogate as \ud800, as any client's JSON encoder would.
    response = client.put(f"/api/agents/{AGENT_ID}", json={**agent, **change})
    assert_json_error(response, 400, field)
    assert database_state(database) == before


def test_a_json_body_that_is_not_utf8_is_refused(client, database):
    store_agent(client)
    before = database_state(database)
    body = b'{"label": "Caf\xe9"}'
    assert_json_error(client.put(f"/api/agents/{AGENT_ID}", data=body, content_type="application/json"), 400, "body")
    assert database_state(database) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"message": "Hello \ud800"}, "message"),
        ({"message": "Hello", "overrides": {"system_prompt": "\udfff"}}, "overrides.system_prompt"),
        ({"message": "Hello", "overrides": {"max_rounds_message": ["\ud800"]}}, "overrides.max_rounds_message[0]"),
    ],
)
def test_the_runs_api_refuses_a_lone_surrogate_and_stores_no_run(client, database, body, field):
    store_agent(client)
    before = database_state(database)
    assert_json_error(client.post(f"/api/agents/{AGENT_ID}/runs", json=body), 400, field)
    assert database_state(database) == before


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ({"id": "c\ud800", "name": "list_bundles", "arguments": {}}, "tool_calls[0].id"),
        (
            {"id": "c1", "name": "list_bundles", "arguments": {"entity_type": "\udfff"}},
            "tool_calls[0].arguments.entity_type",
        ),
        (
            {"id": "c1", "type": "function", "function": {"name": "list_bundles", "arguments": '{"x": "\ud800"}'}},
            "tool_calls[0].function.arguments",
        ),
    ],
)
def test_the_gate_api_refuses_a_lone_surrogate_and_logs_nothing(client, database, call, field):
    store_agent(client)
    before = database_state(database)
    calls = [call, {**call, "id": "second"}]  # a restricted tool twice: a violation would be logged
    assert_json_error(client.post(f"/api/agents/{AGENT_ID}/gate", json={"tool_calls": calls}), 400, field)
    assert database_state(database) == before


def test_real_unicode_is_stored_unchanged(client):
    label = "Café \ufffd 日本語 🦜"
    response = client.put("/api/agents/unicode", json={"label": label, "system_prompt": "\U0001f600"})
    assert response.status_code == 201
    assert client.get("/api/agents/unicode").get_json()["label"] == label
    fields = agent_form_data({"label": label, "id": "from_form"})
    assert client.post("/agents/new", data=fields).status_code == 303
    assert client.get("/api/agents/from_form").get_json()["label"] == label


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"label": "Bundles \ud800"}, "label"),
        ({"script": [{"content": "Done \udfff"}]}, "script[0].content"),
        (
            {"tools": {"list_bundles": {"multiple_call_error_message": "\udc80"}}},
            "tools.list_bundles.multiple_call_error_message",
        ),
    ],
)
def test_import_agent_refuses_a_file_with_a_lone_surrogate(runner, client, database, tmp_path, change, field):
    agent = store_agent(client)
    before = database_state(database)
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({**agent, **change}))  # json.dumps writes the surrogate as \ud800
    assert_cli_refused(runner.invoke(args=["import-agent", str(path)]), field, "nothing was imported")
    assert database_state(database) == before


@pytest.mark.parametrize(
    ("args", "text"),
    [
        # A command line holding bytes that are not UTF-8 reaches Python as lone surrogates ("\udcff").
        (["run-agent", AGENT_ID, "Hello \udcff"], "Invalid value for 'MESSAGE'"),
        (["run-agent", AGENT_ID, BUNDLES_MESSAGE, "--overrides", '{"label": "\\ud800"}'], "overrides.label"),
        (["run-agent", AGENT_ID, BUNDLES_MESSAGE, "--overrides", '{"max_rounds": "\udcff"}'], "'--overrides'"),
        (["export-agent", "bundles\udcff"], "Invalid value for 'AGENT_ID'"),
    ],
)
def test_the_cli_refuses_arguments_that_are_not_valid_unicode(runner, client, database, args, text):
    store_agent(client)
    before = database_state(database)
    assert_cli_refused(runner.invoke(args=args), text)
    assert database_state(database) == before


def test_import_documents_refuses_a_file_name_that_is_not_utf8(runner, database, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nText.\n")
    descriptor = os.open(os.fsencode(folder) + b"/caf\xe9.md", os.O_WRONLY | os.O_CREAT)
    os.write(descriptor, b"# Cafe\n\nMenu.\n")
    os.close(descriptor)
    assert_cli_refused(runner.invoke(args=["import-documents", str(folder)]), "caf\\udce9", "nothing was imported")
    assert database["documents"].count == 0
