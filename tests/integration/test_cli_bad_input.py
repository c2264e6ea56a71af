"""The command line never answers bad input with a traceback: a message naming what is wrong, exit status 2, and
nothing changed. `import-documents` refuses a link that leads out of the folder (it would import any file the
user running it can read)."""

import pytest

from tests.bad_input_support import AGENT_ID, assert_cli_refused, database_state, store_agent
from tests.run_scenarios import BUNDLES_MESSAGE


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["import-agent", "missing.json"], "'missing.json': No such file"),
        (["run-agent", "nobody", "Hello"], 'No agent with id "nobody"'),
        (["run-agent", AGENT_ID, " "], "message: must be a non-empty string"),
        (["run-agent", AGENT_ID, "x" * 10_001], "message: must be at most 10,000 characters"),
        (["run-agent", AGENT_ID, BUNDLES_MESSAGE, "--overrides", "[1, 2]"], "overrides: must be a JSON object"),
        (["run-agent", AGENT_ID, BUNDLES_MESSAGE, "--overrides", "[" * 100_000], "--overrides is nested too deeply"),
        (
            ["run-agent", AGENT_ID, BUNDLES_MESSAGE, "--overrides", '{"max_rounds": NaN}'],
            "overrides.max_rounds: is NaN",
        ),
        (["run-agent", AGENT_ID, BUNDLES_MESSAGE, "--overrides", '{"id": "other"}'], "overrides.id: cannot be"),
        (["export-agent", "nobody"], 'No agent with id "nobody"'),
        (["import-documents", "no-such-folder"], "'no-such-folder' does not exist"),
    ],
)
def test_bad_arguments_get_a_message_and_exit_status_2(runner, client, database, args, text):
    store_agent(client)
    before = database_state(database)
    assert_cli_refused(runner.invoke(args=args), text)
    assert database_state(database) == before


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "is not UTF-8 text"),
        (b'{"id": "bundles", "label": "X", "max_rounds": Infinity}', "max_rounds: is NaN or Infinity"),
        (b'{"id": "bundles", "label": "X", "script": {"content": "Hi"}}', "script: must be a list"),
        (b'{"id": "bundles", "label": "X", "script": [' + b"[" * 50 + b"]" * 50 + b"]}", "script[0]: is nested more"),
    ],
)
def test_import_agent_refuses_bad_files_with_a_message(runner, client, database, tmp_path, content, text):
    store_agent(client)
    before = database_state(database)
    path = tmp_path / "agent.json"
    path.write_bytes(content)
    assert_cli_refused(runner.invoke(args=["import-agent", "--replace", str(path)]), text)
    assert database_state(database) == before


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nText.\n")
    return folder


def test_import_documents_refuses_a_link_to_a_file_outside_the_folder(runner, database, folder, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("Private\nThe server's own file.\n")
    (folder / "notes.txt").symlink_to(secret)
    result = runner.invoke(args=["import-documents", str(folder)])
    assert_cli_refused(result, 'The file "notes.txt" is a link to a file outside the folder.', "Nothing was imported.")
    assert database["documents"].count == 0


def test_import_documents_refuses_a_link_to_a_system_file(runner, database, folder):
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    assert_cli_refused(runner.invoke(args=["import-documents", str(folder)]), '"passwd.txt" is a link')
    assert database["documents"].count == 0


def test_import_documents_refuses_a_relative_link_that_climbs_out(runner, database, folder, tmp_path):
    (tmp_path / "outside.md").write_text("# Outside\n\nNot for import.\n")
    (folder / "climb.md").symlink_to("../outside.md")
    assert_cli_refused(runner.invoke(args=["import-documents", str(folder)]), '"climb.md" is a link')
    assert database["documents"].count == 0


def test_import_documents_follows_links_that_stay_in_the_folder(runner, database, folder):
    (folder / "same.md").symlink_to(folder / "good.md")
    result = runner.invoke(args=["import-documents", str(folder)])
    assert result.exit_code == 0, result.output
    assert {row["id"] for row in database["documents"].rows} == {"good", "same"}
