"""The web and storage layers on top of the engine: rendering a stored run's page, and the runs API, each beside
the bare engine run of the same agent measured in the same process. The ratio is what Flask, SQLite, JSON and
Jinja add to the run itself."""

import tempfile

from engine import run_agent

from . import engine_loop
from .timing import compare, milliseconds

BIG_ROUNDS = 10
CALLS_PER_ROUND = 5
BIG_AGENT = {
    "id": "bench_big_run",
    "label": "Benchmark: 10 rounds of 5 calls",
    "max_rounds": BIG_ROUNDS,
    "tools": {"list_bundles": {}, "list_entity_types": {}},
    "script": [
        {
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": entity_type}}
                for entity_type in ("node", "taxonomy_term", "user", "media", "node")[:CALLS_PER_ROUND]
            ]
        }
        for _ in range(BIG_ROUNDS)
    ]
    + [{"content": "Every entity type has at least one bundle."}],
}
BIG_MESSAGE = "List the bundles of every entity type, again and again."


def _app(folder):
    from app import create_app  # the web layer only when this benchmark runs

    return create_app({"TESTING": True, "DATABASE": f"{folder}/bench.db", "SECRET_KEY": "bench"}, instance_path=folder)


def report():
    with tempfile.TemporaryDirectory() as folder:
        app = _app(folder)
        client = app.test_client()
        for agent in (BIG_AGENT, engine_loop.AGENT):
            response = client.put(f"/api/agents/{agent['id']}", json=agent)
            assert response.status_code in (200, 201), response.json

        stored = client.post(f"/api/agents/{BIG_AGENT['id']}/runs", json={"message": BIG_MESSAGE}).json
        assert len(stored["rounds"]) == BIG_ROUNDS + 1
        assert stored["tool_calls"] == BIG_ROUNDS * CALLS_PER_ROUND
        page = f"/runs/{stored['id']}"
        assert client.get(page).status_code == 200

        def render_page():
            response = client.get(page)
            assert response.status_code == 200
            return response.data

        rendered, engine_big = compare(render_page, lambda: run_agent(BIG_AGENT, BIG_MESSAGE), repeat=7, number=10)
        print(f"Web: the stored page of a run with {BIG_ROUNDS} rounds x {CALLS_PER_ROUND} calls (GET /runs/<id>)")
        print(f"  bare engine run of that agent   {milliseconds(engine_big)}")
        print(f"  render the stored run page      {milliseconds(rendered)}")
        print(f"  ratio page / engine run: {rendered / engine_big:.2f}x")

        print()
        path = f"/api/agents/{engine_loop.AGENT['id']}/runs"

        def api_run():
            response = client.post(path, json={"message": engine_loop.MESSAGE})
            assert response.status_code == 201
            return response.data

        def engine_run():
            return run_agent(engine_loop.AGENT, engine_loop.MESSAGE)

        api, engine_small = compare(api_run, engine_run, repeat=7, number=20)
        print("Web: POST /api/agents/<id>/runs, the scripted 3-round run, through the test client (run + store + JSON)")
        print(f"  bare engine run_agent           {milliseconds(engine_small)}")
        print(f"  API run, stored                 {milliseconds(api)}")
        print(
            f"  overhead of the web and storage layers: {api / engine_small:.2f}x the engine run "
            f"(+{milliseconds(api - engine_small).strip()} per run)"
        )
