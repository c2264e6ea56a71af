"""Policy files on the command line (issue 34): export-agents, then apply — every file validated first (an error
names the file, the line and the field, and nothing changes), a diff per agent, the whole set in one transaction,
exit status 0 (no change), 1 (changed) or 2 (bad input). An applied agent is managed by its file."""

import pytest

from engine.tools import default_registry
from services import policy_files
from services.policy_format import FILE_MAX_BYTES
from store import RevisionConflict
from store import agents as agent_store
from tests.bad_input_support import assert_cli_refused
from tests.support import agent_form_data

pytestmark = pytest.mark.both_engines

BUILDER = {
    "label": "Builder",
    "max_rounds": 10,
    "tools": {"place_component": {"restrict_multiple_calls": True}, "get_layout": {}},
}
CATALOG = {"label": "Catalog", "system_prompt": "List the bundles.\nThen stop.", "tools": {"list_bundles": {}}}


@pytest.fixture
def stored(client):
    """Two agents made on the pages' API: builder and catalog."""
    for agent_id, agent in (("builder", BUILDER), ("catalog", CATALOG)):
        assert client.put(f"/api/agents/{agent_id}", json=agent).status_code == 201


@pytest.fixture
def folder(tmp_path, runner, stored):
    """The two agents exported, as a team would commit them."""
    path = tmp_path / "agents"
    result = runner.invoke(args=["export-agents", str(path)])
    assert result.exit_code == 0, result.output
    return path


def files_of(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def agents_of(client):
    return client.get("/api/agents").get_json()["agents"]


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_export_agents_writes_one_file_per_agent(runner, folder):
    assert sorted(files_of(folder)) == ["builder.yaml", "catalog.yaml"]
    assert (folder / "builder.yaml").read_text() == (
        "# yaml-language-server: $schema=http://127.0.0.1:5000/schema/agent.json\n"
        "id: builder\n"
        "label: Builder\n"
        "tools:\n"
        "  get_layout: {}\n"
        "  place_component:\n"
        "    restrict_multiple_calls: true\n"
    )


def test_export_agents_writes_only_the_agents_named(runner, stored, tmp_path):
    result = runner.invoke(args=["export-agents", str(tmp_path / "one"), "catalog"])

    assert result.exit_code == 0 and result.output == f"Exported 1 agent to {tmp_path / 'one'}: catalog.yaml\n"
    assert sorted(files_of(tmp_path / "one")) == ["catalog.yaml"]
    assert_cli_refused(
        runner.invoke(args=["export-agents", str(tmp_path / "two"), "ghost"]), 'No agent with id "ghost"'
    )


def test_export_apply_export_gives_the_same_bytes_and_a_second_apply_changes_nothing(runner, folder, client):
    exported = files_of(folder)

    first = runner.invoke(args=["apply", str(folder)])
    assert first.exit_code == 1, first.output
    assert first.output == (
        f"~ builder ({folder}/builder.yaml)\n"
        f"    + managed by: {folder}/builder.yaml\n"
        f"~ catalog ({folder}/catalog.yaml)\n"
        f"    + managed by: {folder}/catalog.yaml\n"
        "2 changed; 0 unchanged.\n"
        "Applied, in one transaction.\n"
    )
    assert runner.invoke(args=["export-agents", str(folder)]).exit_code == 0
    assert files_of(folder) == exported

    again = runner.invoke(args=["apply", str(folder)])
    assert (again.exit_code, again.output) == (0, "No changes; 2 unchanged.\n")


def test_apply_prints_each_change_and_applies_added_changed_and_removed_agents(runner, folder, client):
    runner.invoke(args=["apply", str(folder)])
    edit(folder / "builder.yaml", "label: Builder\n", "label: Builder\nmax_rounds: 6\n")
    edit(
        folder / "builder.yaml",
        "    restrict_multiple_calls: true\n",
        "    restrict_multiple_calls: true\n    max_calls_per_run: 3\n",
    )
    edit(folder / "builder.yaml", "  get_layout: {}\n", "  edit_component:\n    require_approval: true\n")
    (folder / "catalog.yaml").unlink()
    (folder / "reader.yaml").write_text("id: reader\nlabel: Reader\nsystem_prompt: |\n  Read.\n  Answer.\n")

    dry = runner.invoke(args=["apply", "--dry-run", "--prune", str(folder)])
    expected = (
        f"~ builder ({folder}/builder.yaml)\n"
        "    ~ max_rounds: 10 → 6\n"
        "    + tools.edit_component\n"
        "    + tools.edit_component.require_approval: true\n"
        "    ~ tools.place_component.max_calls_per_run: 0 → 3\n"
        "    - tools.get_layout\n"
        f"+ reader ({folder}/reader.yaml)\n"
        '    + label: "Reader"\n'
        "    + system_prompt:\n"
        "        @@ -0,0 +1,2 @@\n"
        "        +Read.\n"
        "        +Answer.\n"
        "- catalog (no file names it)\n"
        "1 added, 1 changed, 1 removed; 0 unchanged.\n"
    )
    assert (dry.exit_code, dry.output) == (1, expected + "Dry run: nothing was changed.\n")
    assert [agent["id"] for agent in agents_of(client)] == ["builder", "catalog"]
    assert client.get("/api/agents/builder").get_json()["max_rounds"] == 10

    applied = runner.invoke(args=["apply", "--prune", str(folder)])
    assert (applied.exit_code, applied.output) == (1, expected + "Applied, in one transaction.\n")
    builder = client.get("/api/agents/builder").get_json()
    assert builder["max_rounds"] == 6 and builder["revision"] == 3
    assert list(builder["tools"]) == ["edit_component", "place_component"]
    assert builder["tools"]["place_component"]["max_calls_per_run"] == 3
    assert [agent["id"] for agent in agents_of(client)] == ["builder", "reader"]


def test_without_prune_an_agent_no_file_names_is_left_alone(runner, folder, client):
    (folder / "catalog.yaml").unlink()

    result = runner.invoke(args=["apply", str(folder)])

    assert result.exit_code == 1 and "catalog" not in result.output
    assert [agent["id"] for agent in agents_of(client)] == ["builder", "catalog"]


def test_a_comment_only_change_is_reported_as_such(runner, folder):
    runner.invoke(args=["apply", str(folder)])
    edit(folder / "catalog.yaml", "id: catalog\n", "# Reviewed by the platform team.\nid: catalog\n")

    result = runner.invoke(args=["apply", "--dry-run", str(folder)])

    assert result.exit_code == 1
    assert "    ~ file content: comments or layout changed, the settings did not\n" in result.output


BAD_FILES = [
    ("label: Builder\n", "label: ''\n", "builder.yaml:3: label: is required"),
    (
        "label: Builder\n",
        "label: Builder\nmax_rounds: 1000\n",
        "builder.yaml:4: max_rounds: must be from 0 to 100 (got 1000)",
    ),
    ("label: Builder\n", "label: Builder\nmax_round: 6\n", "builder.yaml:4: max_round: is not an agent field"),
    ("label: Builder\n", "label: Builder\nrevision: 4\n", "builder.yaml:4: revision: is not part of a policy file"),
    ("label: Builder\n", "label: Builder\non_round_cap: stop\n", "builder.yaml:4: on_round_cap: must be one of"),
    ("label: Builder\n", "label: Builder\ntemperature: hot\n", "builder.yaml:4: temperature: must be empty (null)"),
    ("label: Builder\n", "label: Builder\ntemperature: .nan\n", "builder.yaml:4: temperature: is NaN or Infinity"),
    ("label: Builder\n", "label: Builder\nmax_rounds: 6.5\n", "builder.yaml:4: max_rounds: must be a whole number"),
    ("id: builder\n", "id: 7\n", "builder.yaml:2: id: must start with a lowercase letter"),
    (
        "label: Builder\n",
        "label: Builder\nprovider: openai\n",
        'builder.yaml:4: provider: no provider connection has the id "openai"',
    ),
    ("id: builder\n", "id: maker\n", 'builder.yaml:2: id: is "maker", but the file is named builder.yaml'),
    (
        "  get_layout: {}\n",
        "  get_layuot: {}\n",
        'builder.yaml:5: tools.get_layuot: "get_layuot" is not a registered tool',
    ),
    (
        "  get_layout: {}\n",
        "  docs__search: {}\n",
        'builder.yaml:5: tools.docs__search: no tool server has the id "docs" (add it with flask --app app '
        "add-tool-server",
    ),
    (
        "    restrict_multiple_calls: true\n",
        "    restrict_multiple_calls: yes please\n",
        "builder.yaml:7: tools.place_component.restrict_multiple_calls: must be true or false",
    ),
    (
        "    restrict_multiple_calls: true\n",
        "    max_calls_per_run: -1\n",
        "builder.yaml:7: tools.place_component.max_calls_per_run: must be from 0 to 10000 (got -1)",
    ),
    (
        "    restrict_multiple_calls: true\n",
        "    argument_rules:\n      region: {action: force_value, values: [attic]}\n",
        "builder.yaml:8: tools.place_component.argument_rules.region.values: must fit the argument's schema",
    ),
    (
        "    restrict_multiple_calls: true\n",
        "    argument_rules:\n      colour: {action: force_value, values: [red]}\n",
        "builder.yaml:8: tools.place_component.argument_rules.colour: is not an argument of place_component",
    ),
    (
        "tools:\n",
        "client_tools:\n  search:\n    use_artifacts: true\ntools:\n",
        "builder.yaml:6: client_tools.search.use_artifacts: does not apply to a client tool",
    ),
    (
        "label: Builder\n",
        "label: Builder\nscript: [{says: hi}]\n",
        "builder.yaml:4: script: response 1 has unknown key(s): says",
    ),
    ("label: Builder\n", "label: [Builder\n", "builder.yaml:4: is not valid YAML"),
    (
        "label: Builder\n",
        "label: Builder\nlabel: Maker\n",
        'builder.yaml:4: the key "label" is given twice in the same mapping',
    ),
    ("label: Builder\n", "label: &l Builder\n", "builder.yaml:3: anchors and aliases (&name, *name) are not allowed"),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD_FILES)
def test_a_bad_file_is_named_with_its_line_and_field_and_nothing_is_applied(runner, folder, client, old, new, message):
    (folder / "reader.yaml").write_text("id: reader\nlabel: Reader\n")
    edit(folder / "catalog.yaml", "label: Catalog\n", "label: Catalog renamed\n")
    edit(folder / "builder.yaml", old, new)
    before = agents_of(client)

    result = runner.invoke(args=["apply", "--prune", str(folder)])

    assert_cli_refused(result, "Nothing was applied:\n", f"\n{folder}/{message}")
    assert agents_of(client) == before


def test_every_bad_file_is_named_at_once(runner, folder, client):
    edit(folder / "builder.yaml", "label: Builder\n", "label: Builder\nmax_rounds: -1\nseed: 1.5\n")
    edit(folder / "catalog.yaml", "label: Catalog\n", "label: Catalog\nlabel: Again\n")

    result = runner.invoke(args=["apply", str(folder)])

    assert_cli_refused(result)
    assert result.output == (
        "Error: Nothing was applied:\n"
        f"{folder}/builder.yaml:4: max_rounds: must be from 0 to 100 (got -1)\n"
        f"{folder}/builder.yaml:5: seed: must be empty (null) or a whole number (a signed 64-bit integer)\n"
        f'{folder}/catalog.yaml:4: the key "label" is given twice in the same mapping\n'
    )


def test_an_alias_bomb_and_a_10_mb_file_are_refused_fast(runner, folder, client):
    bomb = ["id: bomb", "label: Bomb", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 9)}]" for level in range(1, 9)]
    (folder / "bomb.yaml").write_text("\n".join(bomb) + "\n")
    huge = b"id: huge\nlabel: Huge\ndescription: " + b"x" * (10 * 1024 * 1024) + b"\n"
    (folder / "huge.yaml").write_bytes(huge)
    before = agents_of(client)

    result = runner.invoke(args=["apply", str(folder)])

    assert_cli_refused(
        result,
        f"{folder}/bomb.yaml:3: anchors and aliases (&name, *name) are not allowed in a policy file",
        f"{folder}/huge.yaml: is {len(huge):,} bytes; a policy file may be at most {FILE_MAX_BYTES:,} bytes (2 MB)",
    )
    assert agents_of(client) == before


def test_two_files_for_one_agent_are_refused(runner, folder):
    (folder / "builder.yml").write_bytes((folder / "builder.yaml").read_bytes())

    result = runner.invoke(args=["apply", str(folder)])

    assert_cli_refused(result, f'{folder}/builder.yml: id: "builder" is the agent of {folder}/builder.yaml too')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Name the folder of policy files to apply (or an agent to hand back with --release ID)."),
        (["--prune", "--release", "builder"], "--prune removes the agents no file in the folder names"),
        (["--release", "ghost"], '--release ghost: no agent has the id "ghost"'),
        (["missing-folder"], "'missing-folder' does not exist"),
    ],
)
def test_apply_refuses_bad_arguments(runner, stored, args, message):
    assert_cli_refused(runner.invoke(args=["apply", *args]), message)


def test_an_empty_folder_is_refused(runner, stored, tmp_path):
    assert_cli_refused(
        runner.invoke(args=["apply", str(tmp_path)]), f"{tmp_path} has no .yaml file; nothing was applied."
    )


def test_a_page_save_between_the_diff_and_the_write_makes_the_apply_change_nothing(app, folder, client, database):
    edit(folder / "builder.yaml", "label: Builder\n", "label: Builder from git\n")
    edit(folder / "catalog.yaml", "label: Catalog\n", "label: Catalog from git\n")
    planned = policy_files.plan(database, policy_files.folder_files(folder), default_registry().parameters_by_name())
    page = client.post(
        "/agents/builder/edit", data=agent_form_data({**client.get("/api/agents/builder").get_json(), "label": "Mine"})
    )
    assert page.status_code == 303

    with pytest.raises(RevisionConflict):
        policy_files.apply(database, planned)

    assert [agent["label"] for agent in agents_of(client)] == ["Catalog", "Mine"]
    assert agent_store.origins(database) == {}


def test_a_page_save_based_on_a_revision_before_the_apply_is_refused(runner, folder, client):
    form = agent_form_data({**client.get("/api/agents/builder").get_json(), "label": "Mine"})
    edit(folder / "builder.yaml", "label: Builder\n", "label: Builder from git\n")
    runner.invoke(args=["apply", str(folder)])

    response = client.post("/agents/builder/edit", data=form)

    assert response.status_code == 409
    assert client.get("/api/agents/builder").get_json()["label"] == "Builder from git"


def test_an_applied_agent_is_changed_only_through_its_file(runner, folder, client, tmp_path):
    runner.invoke(args=["apply", str(folder)])
    agent = client.get("/api/agents/builder").get_json()
    managed = (
        f'The agent "builder" is managed by the policy file {folder}/builder.yaml: change that file and apply it '
        "(flask --app app apply), or hand the agent back to the pages with flask --app app apply --release builder. "
        "Nothing was saved."
    )

    put = client.put("/api/agents/builder", json={**agent, "label": "API"})
    assert put.status_code == 409
    assert put.get_json() == {"error": managed, "field": None, "errors": {}, "managed_by": f"{folder}/builder.yaml"}
    assert client.delete("/api/agents/builder").status_code == 409
    assert client.post("/agents/builder/delete").status_code == 409
    (tmp_path / "one.yaml").write_text("id: builder\nlabel: One\n")
    assert_cli_refused(runner.invoke(args=["import-agent", "--replace", str(tmp_path / "one.yaml")]), managed)
    assert client.get("/api/agents/builder").get_json() == agent

    run = client.post("/api/agents/builder/runs", json={"message": "Hi", "overrides": {"max_rounds": 2}})
    assert run.status_code == 201 and run.get_json()["overrides"] == {"max_rounds": 2}


def test_release_hands_the_agent_back_to_the_pages(runner, folder, client):
    runner.invoke(args=["apply", str(folder)])

    released = runner.invoke(args=["apply", "--release", "builder"])

    assert (released.exit_code, released.output) == (
        1,
        f"~ builder (handed back to the pages)\n    - managed by: {folder}/builder.yaml\n"
        "1 released; 0 unchanged.\nApplied, in one transaction.\n",
    )
    agent = client.get("/api/agents/builder").get_json()
    assert client.put("/api/agents/builder", json={**agent, "label": "Mine"}).status_code == 200
    assert runner.invoke(args=["apply", "--release", "builder"]).exit_code == 0
    assert_cli_refused(
        runner.invoke(args=["apply", str(folder), "--release", "builder"]),
        "--release builder: a file applies this agent too",
    )


def test_export_agent_prints_the_policy_file_and_import_agent_reads_it(runner, stored, client, tmp_path):
    exported = runner.invoke(args=["export-agent", "catalog"])
    assert exported.exit_code == 0
    assert exported.output == (
        "# yaml-language-server: $schema=http://127.0.0.1:5000/schema/agent.json\n"
        "id: catalog\n"
        "label: Catalog\n"
        "system_prompt: |-\n"
        "  List the bundles.\n"
        "  Then stop.\n"
        "tools:\n"
        "  list_bundles: {}\n"
    )
    (tmp_path / "catalog.yaml").write_text(exported.output.replace("label: Catalog", "label: Catalog again"))

    imported = runner.invoke(args=["import-agent", str(tmp_path / "catalog.yaml")])

    assert imported.exit_code == 0, imported.output
    assert client.get("/api/agents/catalog").get_json()["label"] == "Catalog again"


def test_import_agent_names_the_line_of_a_bad_yaml_file(runner, stored, tmp_path):
    (tmp_path / "agent.yaml").write_text("id: catalog\nlabel: A\nlabel: B\n")

    result = runner.invoke(args=["import-agent", str(tmp_path / "agent.yaml")])

    assert_cli_refused(
        result, f'{tmp_path}/agent.yaml:3: the key "label" is given twice in the same mapping; nothing was imported.'
    )


def test_load_demo_replace_keeps_a_demo_agent_a_file_manages(runner, client, tmp_path):
    runner.invoke(args=["load-demo"])
    runner.invoke(args=["export-agents", str(tmp_path / "agents"), "canvas_builder"])
    edit(tmp_path / "agents" / "canvas_builder.yaml", "label: Canvas builder", "label: Our canvas builder")
    runner.invoke(args=["apply", str(tmp_path / "agents")])

    result = runner.invoke(args=["load-demo", "--replace"])

    assert result.exit_code == 0, result.output
    assert client.get("/api/agents/canvas_builder").get_json()["label"].startswith("Our canvas builder")
