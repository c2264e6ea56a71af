"""The README's examples are run, so they cannot drift from what the engine does."""

import json
import re
from pathlib import Path

import engine

README = (Path(__file__).parents[2] / "README.md").read_text()


def code_blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def test_python_example_answers_as_its_comment_says():
    namespace = {}
    exec(code_blocks("python")[0], namespace)
    assert (namespace["run"]["stop_reason"], namespace["run"]["answer"]) == (
        "answered",
        "Nodes have article and page bundles.",
    )


def test_script_example_recovers_and_places_text_below_the_hero():
    script = json.loads(code_blocks("json")[0])
    agent = {"id": "readme", "label": "README", "tools": {"place_component": {"restrict_multiple_calls": True}}}
    run = engine.run_agent({**agent, "script": script}, "Build a page.")

    first, second, third = (round_["calls"] for round_ in run["rounds"][:3])
    assert [call["reason"] for call in first] == ["restricted_repeat", "restricted_repeat"]
    hero_uuid = second[0]["output"]
    assert third[0]["arguments"]["below_uuid"] == hero_uuid
    assert [node["component"] for node in run["layout"]] == ["hero", "text"]
    assert run["answer"] == "The page has a hero with a text below it."
