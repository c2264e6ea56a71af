"""For the policy proxy's hostile-input tests, one module per API it speaks: an app whose agent `chat` has one
restricted client tool, `note`, and the check every generated request must pass — never a server error (the test
app lets exceptions through); a refusal is a 4xx in the API's error shape and stores no run; an answer is in the
API's shape and names its run; a stream ends as the API's streams end."""

from tests.support import make_app


def hostile_client(folder):
    """A test client of an app with the agent `chat`."""
    client = make_app(folder).test_client()
    agent = {"label": "Chat", "client_tools": {"note": {"restrict_multiple_calls": True}}, "script": []}
    assert client.put("/api/agents/chat", json=agent).status_code == 201
    return client


def _runs(client):
    return client.get("/api/runs").json["total"]


def post_answered_or_refused(client, path, data, refused, answered, streamed):
    """POST the bytes `data` as JSON to `path`, and check what came back: `refused(error body)`, `answered(body)`
    and `streamed(text)` say whether it is in the API's shape."""
    before = _runs(client)
    response = client.post(path, data=data, content_type="application/json")
    assert response.status_code < 500
    if response.status_code >= 400:
        assert refused(response.json), response.json
        assert _runs(client) == before
    elif response.mimetype == "application/json":
        assert answered(response.json), response.json
        assert response.headers["X-Toolgate-Run"]
    else:
        assert streamed(response.get_data(as_text=True))
