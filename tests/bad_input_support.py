"""For the bad-input tests: a stored agent to aim at, and what the database holds, to show that refused input
changed nothing."""

from store import agents as agent_store
from tests.run_scenarios import bundles_agent

AGENT_ID = "bundles"
TABLES = ("agents", "agent_tools", "providers", "documents", "runs", "log", "api_tokens")


def store_agent(client):
    response = client.put(f"/api/agents/{AGENT_ID}", json=bundles_agent())
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def database_state(database):
    """The row count of every table, and the stored agent as the API reads it (None when there is none)."""
    counts = {table: database[table].count for table in TABLES}
    agent = agent_store.get_agent(database, AGENT_ID) if agent_store.agent_exists(database, AGENT_ID) else None
    return counts, agent


def assert_json_error(response, status, field):
    """The API refused with `status`, naming `field`, in its one error shape."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert body["field"] == field, body
    assert body["error"].startswith(f"{field}: ") and field in body["errors"], body
    return body


def assert_page_names_field(response, status, field):
    """A page refused with `status` and says which field was wrong."""
    assert response.status_code == status
    assert f"&#34;{field}&#34;" in response.get_data(as_text=True)


def assert_cli_refused(result, *texts):
    """A command refused bad input as the CLI should: a message (each of `texts`), exit status 2, no traceback."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for text in texts:
        assert text in result.output
