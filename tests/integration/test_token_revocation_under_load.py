"""A token can be revoked, and another created, while it is busy writing: with the login on, a live server with a
thread per request takes 30 JSON API writes made with one token at the same moment as a person revokes that token
and creates a new one on the Tokens page. Neither page may fail ("Something went wrong"), no write may fail other
than by being refused for the revoked token, and the next request with the revoked token is a 401. Repeated, so
that the revocation lands at different points of the burst."""

import ast
import re
import threading
from contextlib import contextmanager
from pathlib import Path

import store as store_package
from store import tokens as token_store
from tests.database import Database
from tests.live_http import all_at_once, browser, csrf_token, post_form, post_json, serving
from tests.support import make_app

PASSWORD = "a long passphrase for the load test"
WRITES = 30
ROUNDS = 3
TRANSACTION_STATEMENT = re.compile(r"\s*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT)\b", re.IGNORECASE)


@contextmanager
def signed_in(base_url):
    with browser(base_url) as client:
        assert post_form(client, "/login", {"password": PASSWORD}).status_code == 303
        yield client


def revoke_while_writing(base_url, revoker, creator, database, round_number):
    """One token used by WRITES writes at once, revoked (and another token created) once the writes are under way;
    the responses by task: "revoke", "create" and the write's number."""
    token, secret = token_store.create_token(database, {"name": f"Leaked {round_number}"})
    revoke_form = csrf_token(revoker.get(f"/tokens/{token['id']}/revoke").text)
    create_form = csrf_token(creator.get("/tokens").text)
    first_write_done = threading.Event()

    def act(task):
        if task == "revoke":
            assert first_write_done.wait(timeout=30)
            return revoker.post(f"/tokens/{token['id']}/revoke", data={"csrf_token": revoke_form})
        if task == "create":
            assert first_write_done.wait(timeout=30)
            return creator.post("/tokens", data={"name": f"New {round_number}", "csrf_token": create_form})
        with browser(base_url) as client:
            client.headers["Authorization"] = f"Bearer {secret}"
            try:
                agent = {"label": f"Written in round {round_number}"}
                return post_json(client, f"/api/agents/busy_{round_number}_{task}", agent, "PUT")
            finally:
                first_write_done.set()

    tasks = ["revoke", "create", *range(WRITES)]
    return secret, dict(zip(tasks, all_at_once(act, tasks, timeout=60), strict=True))


def test_a_token_busy_writing_is_revoked_and_the_next_request_with_it_is_refused(tmp_path):
    app = make_app(tmp_path, ADMIN_PASSWORD=PASSWORD, WTF_CSRF_ENABLED=True)
    database = Database(app.config["DATABASE_URL"])
    with serving(app) as base_url, signed_in(base_url) as revoker, signed_in(base_url) as creator:
        for round_number in range(ROUNDS):
            secret, responses = revoke_while_writing(base_url, revoker, creator, database, round_number)
            assert responses["revoke"].status_code == 303, responses["revoke"].text
            created = responses["create"]
            assert created.status_code == 201, created.text
            assert re.search(r'<code class="secret"[^>]*>tg_', created.text)
            writes = [responses[number].status_code for number in range(WRITES)]
            assert set(writes) <= {200, 201, 401}, writes
            with browser(base_url) as client:
                refused = client.get("/api/agents", headers={"Authorization": f"Bearer {secret}"})
                assert refused.status_code == 401
                assert refused.json()["field"] == "Authorization"
    names = {row["name"] for row in database["api_tokens"].rows}
    database.close()
    assert names == {f"New {number}" for number in range(ROUNDS)}


TRANSACTION_ATTRIBUTES = ("atomic", "begin", "begin_nested", "commit", "rollback", "isolation_level")


def test_every_write_in_the_store_goes_through_its_one_write_transaction_helper():
    """The class of the failure above: any transaction begun another way (sqlite-utils' `atomic`, a bare `BEGIN`, a
    `commit`) reads first and then fails to get the write lock when another writer committed in between."""
    store_folder = Path(store_package.__file__).parent
    other_ways = []
    for module in sorted(store_folder.glob("*.py")):
        # db.py is where the helper lives; legacy_migrations.py runs the sqlite-utils steps on a connection of their own
        if module.name in ("db.py", "legacy_migrations.py"):
            continue
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            if isinstance(node, ast.Attribute) and node.attr in TRANSACTION_ATTRIBUTES:
                other_ways.append(f"{module.name}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "execute":
                statement = node.args[0] if node.args else None
                if isinstance(statement, ast.Constant) and TRANSACTION_STATEMENT.match(str(statement.value)):
                    other_ways.append(f"{module.name}:{node.lineno} {statement.value!r}")
    assert other_ways == []
