"""The policy file's JSON Schema is published at /schema/agent.json, as the repository holds it, for editors."""

from pathlib import Path

from tests.support import make_app

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema" / "agent.json"


def test_the_served_schema_is_the_repository_file(client):
    response = client.get("/schema/agent.json")

    assert response.status_code == 200
    assert response.mimetype == "application/schema+json"
    assert response.data == SCHEMA_FILE.read_bytes()


def test_editors_fetch_the_schema_without_the_login(tmp_path, migrated_database):
    locked = make_app(tmp_path, database_from=migrated_database, ADMIN_PASSWORD="a long passphrase").test_client()

    assert locked.get("/schema/agent.json").status_code == 200
    assert locked.get("/agents").status_code == 303
