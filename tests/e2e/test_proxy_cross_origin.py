"""A web page of another origin cannot spend the model account through the policy proxy (issue 22, item 2): a form it
posts as text/plain — the one JSON-looking body a browser sends across sites without asking — is refused with 415
before anything is read, so nothing goes upstream and no run is recorded. In headless Chromium, the login off."""

import pytest

from tests.live_http import serving
from tests.proxy_support import FakeUpstream, add_upstream, completion

pytestmark = pytest.mark.e2e

# text/plain sends `name=value`: the two halves make a JSON object whose last field swallows the "=".
FIELD_NAME = '{{"model": "m", "messages": [{{"role": "user", "content": "Spend it."}}], "x": "'
ATTACK = (
    """<!doctype html><html><body>
<form id="spend" method="post" enctype="text/plain" action="{action}">
  <input type="hidden" name='"""
    + FIELD_NAME
    + """' value='"}}'>
</form>
<script>document.getElementById("spend").submit();</script>
</body></html>"""
)


def test_a_text_plain_form_posted_from_another_origin_is_refused_and_nothing_is_sent_upstream(
    page, live_server, base_url, suffix
):
    upstream = FakeUpstream(completion("Spent."))
    with serving(upstream) as upstream_url:
        add_upstream(live_server.app, upstream_url, provider_id=f"upstream_{suffix}")
        agent_id = f"victim_{suffix}"
        client = live_server.app.test_client()
        assert (
            client.put(
                f"/api/agents/{agent_id}", json={"label": "Victim", "provider": f"upstream_{suffix}"}
            ).status_code
            == 201
        )
        action = f"{base_url}/proxy/{agent_id}/v1/chat/completions"

        def attacker(environ, start_response):
            body = ATTACK.format(action=action).encode()
            start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
            return [body]

        with serving(attacker) as attacker_url:
            assert attacker_url != base_url  # another origin: another port
            with page.expect_response(lambda response: "/proxy/" in response.url) as refused:
                page.goto(attacker_url)

    assert refused.value.status == 415
    assert upstream.requests == []
    assert client.get(f"/api/runs?agent={agent_id}").get_json()["runs"] == []
