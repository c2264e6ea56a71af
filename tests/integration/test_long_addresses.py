"""Long addresses (issue 30), against the app served as `make run` serves it: gunicorn read request lines of at most
4,094 bytes and answered longer ones with its own bare HTML 414, whatever the client. Now an address up to the app's
limit is served, and a longer one is refused by the app in the caller's shape: the client's API's error under
/proxy/ (read by the real SDKs), JSON under /api/, a readable page for a documents search."""

import anthropic
import openai
import pytest

from tests.html_reader import text_of
from tests.live_http import MAKE_RUN, AppProcess, browser

LONGER_THAN_GUNICORNS_DEFAULT = 5_000
MAX_ADDRESS_BYTES = 8_000  # the app's limit
REFUSED = (
    "The address is {length:,} bytes long; this server takes addresses of at most 8,000 bytes. Shorten it (a search, "
    "for instance) and try again."
)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    folder = tmp_path_factory.mktemp("long-addresses")
    app = AppProcess(MAKE_RUN, folder / "toolgate.db", folder / "server.log")
    try:
        yield app.ready()
    finally:
        app.stop()


def test_a_documents_search_longer_than_gunicorns_default_line_is_searched(base_url):
    query = "hero " * (LONGER_THAN_GUNICORNS_DEFAULT // 5)
    with browser(base_url) as client:
        page = client.get("/documents", params={"q": query})
    assert page.status_code == 200
    assert "No document matches." in text_of(page.text)


def test_an_over_long_documents_search_is_a_readable_page_saying_so(base_url):
    query = "x" * MAX_ADDRESS_BYTES
    with browser(base_url) as client:
        page = client.get("/documents", params={"q": query})
    assert page.status_code == 414
    assert page.headers["content-type"].startswith("text/html")
    text = text_of(page.text)
    assert "Address too long" in text
    assert REFUSED.format(length=len(f"/documents?q={query}")) in text


def test_a_proxied_request_longer_than_gunicorns_default_line_reaches_the_proxy(base_url):
    sdk = openai.OpenAI(base_url=f"{base_url}/proxy/canvas/v1", api_key="any key", max_retries=0)
    with pytest.raises(openai.NotFoundError) as raised:  # no such agent: the proxy's own answer, in OpenAI's shape
        sdk.responses.retrieve("resp_" + "a" * LONGER_THAN_GUNICORNS_DEFAULT)
    assert raised.value.body["code"] == "not_found"


def test_an_over_long_address_under_the_openai_proxy_is_an_error_in_openais_shape(base_url):
    sdk = openai.OpenAI(base_url=f"{base_url}/proxy/canvas/v1", api_key="any key", max_retries=0)
    response_id = "resp_" + "a" * MAX_ADDRESS_BYTES
    with pytest.raises(openai.APIStatusError) as raised:
        sdk.responses.retrieve(response_id)
    assert raised.value.status_code == 414
    assert raised.value.body == {
        "message": REFUSED.format(length=len(f"/proxy/canvas/v1/responses/{response_id}")),
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


def test_an_over_long_address_under_the_messages_proxy_is_an_error_in_anthropics_shape(base_url):
    sdk = anthropic.Anthropic(base_url=f"{base_url}/proxy/canvas", api_key="any key", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as raised:
        sdk.messages.create(
            model="m",
            max_tokens=10,
            messages=[{"role": "user", "content": "Hello"}],
            extra_query={"note": "x" * MAX_ADDRESS_BYTES},
        )
    assert raised.value.status_code == 414
    assert raised.value.body["type"] == "error"
    assert raised.value.body["error"]["type"] == "invalid_request_error"
    assert raised.value.body["error"]["message"].startswith("The address is ")


def test_an_over_long_address_under_the_json_api_is_a_json_error(base_url):
    with browser(base_url) as client:
        response = client.get("/api/runs", params={"agent": "x" * MAX_ADDRESS_BYTES})
    assert response.status_code == 414
    length = len("/api/runs?agent=" + "x" * MAX_ADDRESS_BYTES)
    assert response.json() == {"error": REFUSED.format(length=length), "field": None, "errors": {}}
