"""The example clients (examples/proxy_client.py, responses_client.py, anthropic_client.py) as a new user runs them:
against the app with the demo agents, served on 127.0.0.1. Each only ever gets one placement at a time, and its
conversation is one proxied run whose page shows the round it never saw."""

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from engine.tools import default_registry
from services.demo import load_demo
from store import cases as case_store
from tests.live_http import serving

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE = EXAMPLES / "proxy_client.py"


@pytest.mark.parametrize(
    ("example", "api"),
    [
        ("proxy_client.py", "chat_completions"),
        ("responses_client.py", "responses"),
        ("anthropic_client.py", "messages"),
    ],
)
def test_each_example_gets_one_placement_at_a_time_in_one_run_that_shows_the_hidden_round(
    app, client, database, example, api
):
    """Each example client as a new user runs it (its API's SDK), against the app with the demo agents."""
    load_demo(database, default_registry().parameters_by_name())
    with serving(app) as base_url:
        result = subprocess.run(
            [sys.executable, str(EXAMPLES / example)],
            env={"TOOLGATE_URL": base_url, "PATH": ""},
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert result.returncode == 0, result.stderr
    output = result.stdout
    assert output.count("The model asks for 1 call(s):") == 2 and "asks for 2" not in output
    assert "Answer: The page has a hero with a text block below it." in output
    hero, text = re.search(r"Page: (hero-\w+) > (text-\w+)", output).groups()
    run_id = re.search(r"/runs/(\d+)", output).group(1)

    run = client.get(f"/api/runs/{run_id}").json
    assert (run["agent_id"], run["source"], run["api"], run["stop_reason"]) == (
        "browser_canvas",
        "proxy",
        api,
        "answered",
    )
    assert [round_["shown_to_client"] for round_ in run["rounds"]] == [False, True, True, True]
    assert [call["output"] for round_ in run["rounds"][1:3] for call in round_["calls"]] == [hero, text]
    assert run["rounds"][2]["calls"][0]["arguments"] == {"block": "text", "below": hero}
    assert client.get("/api/runs").json["total"] == 1  # the whole conversation is one run
    page = client.get(f"/runs/{run_id}").get_data(as_text=True)
    assert "Not shown to the client" in page and page.count("Run by the client") == 2


def test_the_demo_case_of_browser_canvas_plays_the_example_with_the_tools_it_declares(database):
    example = runpy.run_path(str(EXAMPLE), run_name="proxy_client")  # its definitions, without main()
    load_demo(database, default_registry().parameters_by_name())

    [case] = case_store.list_cases(database, "browser_canvas")
    assert case["client"]["tools"] == example["TOOLS"]
