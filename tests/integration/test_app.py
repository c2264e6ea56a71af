"""The factory, the database and its migrations, CSRF and the error pages."""

import os
import shutil
import stat
from pathlib import Path

import pytest
import sqlite_utils
from sqlalchemy.exc import IntegrityError

from app import create_app
from store import legacy_migrations, migrations
from tests.database import Database
from tests.support import agent_form_data, make_app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def every_legacy_step():
    return [step.name for step in legacy_migrations.migrations.pending(sqlite_utils.Database(memory=True))]


def test_the_secret_key_is_generated_into_the_instance_folder_once(tmp_path):
    first = create_app({"DATABASE": str(tmp_path / "t.db")}, instance_path=str(tmp_path))
    key_file = tmp_path / "secret_key"
    assert key_file.exists()
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert len(first.config["SECRET_KEY"]) == 64
    second = create_app({"DATABASE": str(tmp_path / "t.db")}, instance_path=str(tmp_path))
    assert second.config["SECRET_KEY"] == first.config["SECRET_KEY"]


def test_a_configured_secret_key_writes_no_file(tmp_path):
    make_app(tmp_path)
    assert not (tmp_path / "secret_key").exists()


def test_the_database_defaults_to_the_instance_folder(tmp_path):
    app = create_app({"SECRET_KEY": "k"}, instance_path=str(tmp_path))
    assert app.config["DATABASE"] == str(tmp_path / "toolgate.db")
    assert (tmp_path / "toolgate.db").exists()


def test_start_up_creates_every_table_in_wal_mode(tmp_path):
    app = make_app(tmp_path)
    assert app.extensions["toolgate_schema"] == {"created": True, "applied": migrations.every_step()}
    db = sqlite_utils.Database(app.config["DATABASE"])
    assert {"agents", "agent_tools", "providers", "documents", "documents_fts", "runs", "log"} <= set(db.table_names())
    assert db.journal_mode == "wal"
    assert migrations.applied_migrations(Database(app.config["DATABASE_URL"])) == migrations.every_step()
    assert db["runs"].pks == ["id"] and db["log"].pks == ["id"]
    assert {tuple(index.columns) for index in db["runs"].indexes} >= {("agent_id", "id"), ("stop_reason",)}
    assert {tuple(index.columns) for index in db["log"].indexes} >= {("agent_id",), ("level",)}
    assert db["agent_tools"].pks == ["agent_id", "tool_name"]


def test_migration_names_are_unique_and_sorted():
    for names in (every_legacy_step(), migrations.every_step()):
        assert names == sorted(names) and len(set(names)) == len(names)


def test_a_database_from_an_older_version_upgrades_on_start(tmp_path):
    path = tmp_path / "toolgate.db"
    old = sqlite_utils.Database(path)
    legacy_migrations.migrations.apply(old, stop_before="0004_create_documents")  # a version with agents and providers
    old["agents"].insert({"id": "kept", "label": "Kept", "data": '{"label": "Kept"}', "revision": 4})
    assert "runs" not in old.table_names()
    old.close()

    app = make_app(tmp_path)
    db = sqlite_utils.Database(path)
    assert {"documents", "runs", "log"} <= set(db.table_names())
    agent = app.test_client().get("/api/agents/kept").get_json()
    assert agent["label"] == "Kept" and agent["revision"] == 4 and agent["max_rounds"] == 10  # read with defaults


def test_a_database_made_before_sqlite_utils_migrations_opens_without_loss(tmp_path):
    """tests/fixtures/toolgate-0.1.db was made by the code that recorded its steps in its own `migrations`
    table: init-db, load-demo, one run of catalog_explorer."""
    path = tmp_path / "toolgate.db"
    shutil.copy(FIXTURES / "toolgate-0.1.db", path)
    app = make_app(tmp_path)
    db = Database(str(path))
    assert app.extensions["toolgate_schema"]["created"] is False
    assert app.extensions["toolgate_schema"]["applied"] == migrations.applied_migrations(db)[6:]  # steps since 0.1
    assert {"migrations", "_sqlite_migrations"}.isdisjoint(db.table_names())
    assert migrations.applied_migrations(db)[:6] == [
        "0001_enable_wal",
        "0002_create_agents",
        "0003_create_providers",
        "0004_create_documents",
        "0005_create_runs",
        "0006_create_log",
    ]
    client = app.test_client()
    agents = client.get("/api/agents").get_json()["agents"]
    assert [agent["id"] for agent in agents] == ["canvas_builder", "catalog_explorer", "docs_assistant"]
    run = client.get("/api/runs/1").get_json()
    assert run["agent_id"] == "catalog_explorer" and run["stop_reason"] == "answered" and run["rejected_calls"] == 2
    assert "list_bundles, Restricted tool called more than once: 2" in client.get("/runs").get_data(as_text=True)
    assert db["documents"].count == 12 and db["log"].count == 1


def test_migrating_twice_applies_nothing(app):
    db = Database(app.config["DATABASE_URL"])
    assert migrations.migrate(db.connection) == []


def test_every_connection_enforces_foreign_keys(app):
    db = Database(app.config["DATABASE_URL"])
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        db["agent_tools"].insert({"agent_id": "ghost", "tool_name": "list_bundles", "position": 0, "settings": "{}"})


def test_a_post_without_the_csrf_token_is_a_friendly_400(csrf_app):
    client = csrf_app.test_client()
    response = client.post("/agents/new", data=agent_form_data({"label": "No token", "id": "no_token"}))
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert "The form could not be sent" in html and "security token" in html
    assert client.get("/api/agents/no_token").status_code == 404


def test_a_post_with_the_csrf_token_from_the_page_is_accepted(csrf_app):
    client = csrf_app.test_client()
    page = client.get("/agents/new").get_data(as_text=True)
    token = page.split('name="csrf_token" type="hidden" value="')[1].split('"')[0]
    data = {**agent_form_data({"label": "With token", "id": "with_token"}), "csrf_token": token}
    assert client.post("/agents/new", data=data).status_code == 303


def test_htmx_requests_carry_the_token_in_a_header(csrf_app):
    client = csrf_app.test_client()
    page = client.get("/agents/new").get_data(as_text=True)
    assert '<body hx-headers=\'{"X-CSRFToken": "' in page
    token = page.split('"X-CSRFToken": "')[1].split('"')[0]
    data = agent_form_data({"label": "Header", "id": "header"})
    assert client.post("/agents/new", data=data, headers={"X-CSRFToken": token}).status_code == 303


def test_delete_without_the_token_is_refused(csrf_app):
    client = csrf_app.test_client()
    token = client.get("/agents/new").get_data(as_text=True).split('"X-CSRFToken": "')[1].split('"')[0]
    client.post("/agents/new", data=agent_form_data({"label": "Keep", "id": "keep"}), headers={"X-CSRFToken": token})
    assert client.post("/agents/keep/delete").status_code == 400
    assert client.get("/api/agents/keep").status_code == 200


def test_unknown_page_is_a_friendly_404(client):
    response = client.get("/no/such/page")
    assert response.status_code == 404
    assert "There is nothing at this address." in response.get_data(as_text=True)


def test_wrong_method_is_a_friendly_405(client):
    response = client.put("/agents/new")
    assert response.status_code == 405
    assert "<h1>Method not allowed</h1>" in response.get_data(as_text=True)


def test_nav_links_only_to_pages_that_exist(client):
    html = client.get("/agents").get_data(as_text=True)
    nav = html.split('<nav aria-label="Main">')[1].split("</nav>")[0]
    hrefs = [part.split('"')[0] for part in nav.split('href="')[1:]]
    assert "/agents" in hrefs and "/providers" in hrefs
    for href in hrefs:
        assert client.get(href).status_code == 200


def test_htmx_is_served_from_the_vendored_file(client):
    html = client.get("/agents").get_data(as_text=True)
    assert '<script src="/static/vendor/htmx-2.0.11.min.js" defer></script>' in html
    response = client.get("/static/vendor/htmx-2.0.11.min.js")
    assert response.status_code == 200 and b"htmx" in response.data
    response.close()
