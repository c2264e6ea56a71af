"""Two replicas of the app as `make run` starts them (gunicorn, gevent), on one PostgreSQL database and one secret
key, with the login on; and a person signed in on them, who makes API tokens (tests/integration/test_replicas.py,
tests/integration/test_load_balancer.py)."""

import secrets
from contextlib import contextmanager

from tests.live_http import MAKE_RUN, AppProcess, browser, csrf_token, post_form

PASSWORD = "one passphrase for both replicas"


@contextmanager
def two_replicas(cluster, folder, server=MAKE_RUN, **environment):
    """Two replicas of the app on one new database (migrated by whichever starts first), each served by `server`
    (python's arguments: `make run`'s server by default), with `environment` besides: their processes, ready."""
    environment = {
        "TOOLGATE_DATABASE_URL": cluster.create_database(),
        "TOOLGATE_ADMIN_PASSWORD": PASSWORD,
        **environment,
    }
    processes = [
        AppProcess(server, folder / "unused.db", folder / f"{name}.log", ready_path="/login", **environment)
        for name in "ab"
    ]
    try:
        for process in processes:
            process.url = process.ready()
        yield processes
    finally:
        for process in processes:
            process.stop()


@contextmanager
def signed_in(base_url):
    with browser(base_url) as client:
        assert post_form(client, "/login", {"password": PASSWORD}).status_code == 303
        yield client


def form(client, path):
    return csrf_token(client.get(path).text)


def token_on(client):
    """A new API token, made on the Tokens page by the signed-in `client`."""
    created = client.post("/tokens", data={"name": secrets.token_hex(4), "csrf_token": form(client, "/tokens")})
    assert created.status_code == 201, created.text
    return created.text.split('<code class="secret"', 1)[1].split(">", 1)[1].split("<", 1)[0]
