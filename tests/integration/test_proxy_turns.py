"""A proxied request does its own work in one of services.proxy.TURNS turns, and gives its turn back however it
ends: answered, failed upstream, or refused for a bad body. A turn kept would leave, after TURNS of them, every
later request of the process waiting for ever."""

from services.proxy import TURNS
from tests.live_http import serving
from tests.proxy_support import PLACE, USER, FakeUpstream, add_upstream, completion


def test_more_requests_than_turns_each_get_an_answer_whether_answered_failed_or_refused(app, client):
    upstream = FakeUpstream(
        *[completion("Placed."), (500, {"error": {"message": "The engine is overloaded."}})] * (TURNS + 1)
    )
    with serving(upstream) as url:
        add_upstream(app, url)
        client.put("/api/agents/canvas", json={"label": "Canvas", "provider": "upstream"})
        statuses = []
        for _ in range(TURNS + 1):
            body = {"model": "m", "messages": [USER], "tools": [PLACE]}
            statuses.append(client.post("/proxy/canvas/v1/chat/completions", json=body).status_code)
            statuses.append(client.post("/proxy/canvas/v1/chat/completions", json=body).status_code)
            refused = client.post("/proxy/canvas/v1/chat/completions", json={"model": "m", "messages": "no"})
            statuses.append(refused.status_code)
    assert statuses == [200, 500, 400] * (TURNS + 1)
