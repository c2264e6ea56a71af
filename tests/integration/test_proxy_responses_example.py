"""examples/responses_client.py as a new user runs it: against the app with the demo agents, served on 127.0.0.1. It
only ever gets one placement at a time, and its conversation, continued by previous_response_id, is one proxied run
whose page shows the round it never saw."""

import re
import subprocess
import sys
from pathlib import Path

from engine.tools import default_registry
from services.demo import load_demo
from tests.live_http import serving

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "responses_client.py"


def test_the_responses_example_gets_one_placement_at_a_time_in_one_run(app, client, database):
    load_demo(database, default_registry().parameters_by_name())
    with serving(app) as base_url:
        result = subprocess.run(
            [sys.executable, str(EXAMPLE)],
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
    assert run["agent_id"] == "browser_canvas" and run["api"] == "responses" and run["stop_reason"] == "answered"
    assert [round_["shown_to_client"] for round_ in run["rounds"]] == [False, True, True, True]
    assert [call["output"] for round_ in run["rounds"][1:3] for call in round_["calls"]] == [hero, text]
    assert run["rounds"][2]["calls"][0]["arguments"] == {"block": "text", "below": hero}
    assert client.get("/api/runs").json["total"] == 1
