"""Two runs compared: "Compare with…" on a run's page, the comparison page, and the link a repeated run carries
to the run it repeats ("Run again" and "Change and run again")."""

import re

import pytest

from store import runs as run_store
from tests.html_reader import form_fields, text_of
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent


@pytest.fixture
def bundles(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201


def start_run(client, agent_id="bundles"):
    return client.post(f"/api/agents/{agent_id}/runs", json={"message": BUNDLES_MESSAGE}).get_json()["id"]


def marked(response):
    """The texts the page highlights as different."""
    page = response.get_data(as_text=True)
    return [
        text_of(text)
        for text in re.findall(r'class="[^"]*\bdiffers\b[^"]*">(.*?)</(?:td|pre|span|div|code)>', page, re.S)
    ]


def test_a_run_page_links_to_the_choice_of_a_run_to_compare_with(client, bundles):
    first, second = start_run(client), start_run(client)

    assert f'href="/runs/{second}/compare"' in client.get(f"/runs/{second}").get_data(as_text=True)
    page = text_of(client.get(f"/runs/{second}/compare"))
    assert f"The previous run of this agent, #{first}" in page
    assert f"#{first}" in page and "Compare" in page


def test_the_run_number_form_goes_to_the_comparison_or_says_what_is_wrong(client, bundles):
    first, second = start_run(client), start_run(client)

    response = client.get(f"/runs/{second}/compare?with={first}")
    assert response.status_code == 303 and response.headers["Location"] == f"/runs/{second}/compare/{first}"
    not_a_number = client.get(f"/runs/{second}/compare?with=twelve")
    assert not_a_number.status_code == 400 and "Run number must be a whole number" in text_of(not_a_number)
    missing = client.get(f"/runs/{second}/compare?with=99")
    assert missing.status_code == 400 and "Run number: there is no run #99." in text_of(missing)


def test_run_again_after_a_change_links_the_new_run_to_a_comparison_that_shows_the_change(client, bundles, database):
    first = start_run(client)
    agent = client.get("/api/agents/bundles").get_json()
    agent["tools"]["list_bundles"]["restrict_multiple_calls"] = False
    client.put("/api/agents/bundles", json=agent)

    again = client.post(f"/runs/{first}/again")
    second = int(again.headers["Location"].rsplit("/", 1)[1])

    assert run_store.get_run(database, second)["repeated_from"] == first
    assert f"Compare with run #{first}, which this run repeats" in text_of(client.get(again.headers["Location"]))
    assert f"The run this one repeats, #{first}" in text_of(client.get(f"/runs/{second}/compare"))
    comparison = client.get(f"/runs/{second}/compare/{first}")
    page = text_of(comparison)
    assert "tools.list_bundles.restrict_multiple_calls false true" in page
    assert "Calls rejected 0 2" in page and "Round 1 differs" in page and "Round 2 same" in page
    assert marked(comparison)[:2] == ["4", "2"]  # calls executed, in the summary
    assert "Executed" in marked(comparison) and "Rejected" in marked(comparison)


def test_change_and_run_again_records_the_run_it_started_from(client, bundles, database):
    first = start_run(client)
    page = client.get(f"/agents/bundles/run?from={first}").get_data(as_text=True)
    fields = form_fields(page)
    assert f'action="/agents/bundles/run?from={first}#run-result"' in page

    fields.pop("tools-list_bundles-restrict_multiple_calls")  # untick the restriction for this run
    response = client.post(f"/agents/bundles/run?from={first}", data=fields)

    second = run_store.list_runs(database).rows[0]["id"]
    assert run_store.get_run(database, second)["repeated_from"] == first
    assert f"Compare with run #{first}, which this run repeats" in text_of(response)


def test_a_from_that_is_not_a_run_of_this_agent_is_not_recorded(client, bundles, database):
    client.put("/api/agents/other", json=bundles_agent())
    other = start_run(client, "other")

    fields = form_fields(client.get("/agents/bundles/run").get_data(as_text=True))
    client.post(f"/agents/bundles/run?from={other}", data={**fields, "message": "Hi"})

    assert "repeated_from" not in run_store.get_run(database, other + 1)


def test_two_runs_of_the_same_settings_compare_as_the_same(client, bundles):
    first, second = start_run(client), start_run(client)

    page = text_of(client.get(f"/runs/{first}/compare/{second}"))

    assert "The two runs did the same" in page
    assert "Both runs ran with the same settings" in page


def test_a_comparison_with_an_unknown_run_is_a_404(client, bundles):
    first = start_run(client)

    assert client.get(f"/runs/{first}/compare/99").status_code == 404
    assert client.get(f"/runs/99/compare/{first}").status_code == 404
    assert client.get("/runs/99/compare").status_code == 404
