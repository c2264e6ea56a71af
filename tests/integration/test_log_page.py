"""The log page: what the policy rejected and the requests that failed, newest first, filtered by agent, level and
kind, each linked to its run; the violation reads as SPEC §5 says; the console shows each entry on one line."""

import logging
from pathlib import Path

import pytest

from blueprints import console_log
from store import log as log_store
from store.db import write_transaction
from tests.html_reader import html_of, text_of
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

pytestmark = pytest.mark.both_engines


@pytest.fixture
def two_agents(client):
    client.put("/api/agents/bundles", json=bundles_agent())
    client.put("/api/agents/other", json=bundles_agent(label="Other"))


def run(client, agent_id):
    return client.post(f"/api/agents/{agent_id}/runs", json={"message": BUNDLES_MESSAGE}).json


def test_a_violation_reads_as_the_spec_says_and_links_to_its_run(client, two_agents):
    run_id = run(client, "bundles")["id"]
    html = html_of(client.get("/log"), 200)
    assert (
        "The agent &#34;bundles&#34; called the single-call tool(s) &#34;list_bundles&#34; multiple times in one "
        "response. All 2 tool calls in the response were rejected."
    ) in html
    assert f'<a href="/runs/{run_id}">Run #{run_id}</a>' in html
    assert "Policy violation" in html
    assert '<span class="level level-error">Error</span>' in html


def test_entries_are_newest_first(client, two_agents):
    run(client, "bundles")
    run(client, "other")
    html = html_of(client.get("/log"), 200)
    assert html.index('href="/runs/2"') < html.index('href="/runs/1"')


def test_filter_by_agent(client, two_agents):
    run(client, "bundles")
    run(client, "other")
    html = html_of(client.get("/log?agent=other"), 200)
    assert 'href="/runs/2"' in html and 'href="/runs/1"' not in html
    assert '<option value="other" selected>' in html


def test_filter_by_level(client, two_agents, database):
    run(client, "bundles")
    with write_transaction(database):
        log_store.add_entries(
            database, [{"level": "warning", "kind": "provider_error", "agent_id": "other", "message": "Slow model."}]
        )
    warnings = html_of(client.get("/log?level=warning"), 200)
    assert "Slow model." in warnings and "single-call" not in warnings
    errors = html_of(client.get("/log?level=error"), 200)
    assert "Slow model." not in errors and "single-call" in errors
    assert "Slow model." in html_of(client.get("/log?level=bogus"), 200)  # an unknown level filters nothing


def test_provider_errors_are_logged(app, client, database):
    from store import providers as provider_store

    app.config["MODEL_ENVIRON"] = {}
    provider_store.create_provider(
        database, {"id": "remote", "label": "Remote", "base_url": "https://models.invalid/v1", "default_model": "m"}
    )
    client.put("/api/agents/remote_agent", json={"label": "Remote", "provider": "remote"})
    run(client, "remote_agent")
    html = html_of(client.get("/log?agent=remote_agent"), 200)
    assert "Provider error" in html and "OPENAI_API_KEY" in html


def test_gate_api_violations_have_no_run(client, two_agents):
    calls = [
        {"id": "a", "name": "list_bundles", "arguments": {"entity_type": "node"}},
        {"id": "b", "name": "list_bundles", "arguments": {"entity_type": "user"}},
    ]
    client.post("/api/agents/bundles/gate", json={"tool_calls": calls})
    assert "gate API" in html_of(client.get("/log"), 200)


def test_the_log_is_paginated(client, database):
    entry = {"level": "info", "kind": "policy_violation", "agent_id": "a"}
    entries = [{**entry, "message": f"Entry {number}."} for number in range(55)]
    with write_transaction(database):
        log_store.add_entries(database, entries)
    first = html_of(client.get("/log"), 200)
    assert "Entry 54." in first and "Entry 5." in first and "Entry 4." not in first and "Newer" not in first
    assert '<a rel="next" href="/log?before=6">Older</a>' in first
    older = html_of(client.get("/log?before=6"), 200)
    assert "Entry 4." in older and "Entry 0." in older and "Entry 5." not in older and "Older" not in older
    assert '<a rel="prev" href="/log?after=5">Newer</a>' in older
    # As a person reads it: the page's CSRF token is signed with the time, so two loads a second apart differ there.
    assert text_of(html_of(client.get("/log?after=5"), 200)) == text_of(first)


def test_an_empty_log(client):
    assert "No log entries" in html_of(client.get("/log"), 200)


def test_the_log_filters_by_kind_and_offers_every_kind_the_policy_logs(client, two_agents, database):
    run(client, "bundles")
    with write_transaction(database):
        log_store.add_entries(
            database,
            [
                {
                    "level": "warning",
                    "kind": "repeated_call",
                    "agent_id": "other",
                    "message": "Repeated: list_bundles.",
                },
                {"level": "error", "kind": "proxy_error", "agent_id": "other", "message": "The proxy failed."},
            ],
        )

    html = html_of(client.get("/log?kind=repeated_call"))
    everything = html_of(client.get("/log"))

    assert "Repeated: list_bundles." in html and "The proxy failed." not in html and "multiple times" not in html
    assert "1 entry." in html and "3 entries." in everything
    for kind in log_store.KINDS:
        assert f'<option value="{kind}"' in everything
    assert '<option value="repeated_call" selected>Repeated identical call</option>' in html
    assert "No log entries match this filter." in html_of(client.get("/log?kind=call_limit&agent=bundles"))


def test_the_console_shows_each_entry_on_one_line(capsys):
    logger = logging.getLogger("toolgate")
    assert "'app:serve_app()'" in Path("Makefile").read_text()  # what `make run` serves attaches it
    handler = console_log.attach()
    try:
        logger.error("The model endpoint answered HTTP 500:\nline two\nline three")
    finally:
        logger.removeHandler(handler)

    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].endswith("ERROR toolgate: The model endpoint answered HTTP 500: ⏎ line two ⏎ line three")
