"""Policy files on the pages (issue 34): Export (a zip, or one agent's file), Import (upload, see the same diff as
apply --dry-run, apply on confirmation, CSRF on), and an agent a file manages shown read-only."""

import io
import zipfile

import pytest

from tests.html_reader import parse_html, text_of
from tests.support import agent_form_data

pytestmark = pytest.mark.both_engines

BUILDER = {"label": "Builder", "tools": {"place_component": {"restrict_multiple_calls": True}}}


@pytest.fixture
def builder(client):
    assert client.put("/api/agents/builder", json=BUILDER).status_code == 201


def upload(client, *files):
    data = {"files": [(io.BytesIO(content), name) for name, content in files]}
    return client.post("/agents/import", data=data, content_type="multipart/form-data")


def confirmation(response):
    """What the preview's Apply button posts: its token, fingerprint and every file carried (lists kept)."""
    form = next(
        element
        for element in parse_html(response.get_data(as_text=True)).elements()
        if element.attrs.get("id") == "confirm-import"
    )
    posted = {}
    for element in form.elements():
        if element.tag == "input" and element.attrs.get("name"):
            posted.setdefault(element.attrs["name"], []).append(element.attrs.get("value", ""))
    return posted


def diff_of(response):
    pre = next(
        element
        for element in parse_html(response.get_data(as_text=True)).elements()
        if "policy-diff" in element.classes
    )
    return pre.text


def test_the_agents_list_offers_export_and_import(client, builder):
    page = parse_html(client.get("/agents").get_data(as_text=True))
    links = {element.text: element.attrs["href"] for element in page.elements() if element.tag == "a"}

    assert links["Export"] == "/agents/export" and links["Import"] == "/agents/import"


def test_export_is_a_zip_of_the_files_export_agents_writes(client, runner, builder, tmp_path):
    client.put("/api/agents/reader", json={"label": "Reader"})
    runner.invoke(args=["export-agents", str(tmp_path)])

    response = client.get("/agents/export")

    assert response.status_code == 200 and response.headers["Content-Disposition"] == "attachment; filename=agents.zip"
    archive = zipfile.ZipFile(io.BytesIO(response.data))
    assert {name: archive.read(name) for name in archive.namelist()} == {
        "builder.yaml": (tmp_path / "builder.yaml").read_bytes(),
        "reader.yaml": (tmp_path / "reader.yaml").read_bytes(),
    }
    assert client.get("/agents/export").data == response.data  # the same agents, the same bytes


def test_an_agent_page_exports_its_one_file(client, runner, builder):
    response = client.get("/agents/builder/export")

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/yaml; charset=utf-8"
    assert response.headers["Content-Disposition"] == "attachment; filename=builder.yaml"
    assert response.get_data(as_text=True) == runner.invoke(args=["export-agent", "builder"]).output
    assert client.get("/agents/ghost/export").status_code == 404


def test_import_shows_the_dry_run_diff_and_applies_it_on_confirmation(client, runner, builder, tmp_path):
    changed = client.get("/agents/builder/export").data.replace(b"label: Builder", b"label: Builder\nmax_rounds: 6")
    (tmp_path / "builder.yaml").write_bytes(changed)
    (tmp_path / "reader.yaml").write_bytes(b"id: reader\nlabel: Reader\n")
    dry_run = runner.invoke(args=["apply", "--dry-run", str(tmp_path)]).output
    cli_diff = dry_run.replace(f"{tmp_path}/", "").removesuffix("Dry run: nothing was changed.\n").rstrip("\n")

    preview = upload(client, ("builder.yaml", changed), ("reader.yaml", b"id: reader\nlabel: Reader\n"))

    assert preview.status_code == 200
    assert diff_of(preview) == cli_diff
    assert "~ max_rounds: 10 → 6" in cli_diff and "+ reader (reader.yaml)" in cli_diff
    assert client.get("/api/agents/builder").get_json()["max_rounds"] == 10
    assert client.get("/api/agents/reader").status_code == 404

    applied = client.post("/agents/import/apply", data=confirmation(preview))

    assert applied.status_code == 303 and applied.headers["Location"] == "/agents"
    assert "Applied 2 changes from the policy files." in text_of(client.get("/agents"))
    assert client.get("/api/agents/builder").get_json()["max_rounds"] == 6
    assert client.get("/api/agents/reader").get_json()["label"] == "Reader"
    assert "Managed by the policy file builder.yaml" in text_of(client.get("/agents"))


def test_import_of_files_that_change_nothing_offers_nothing_to_apply(client, builder):
    client.post(
        "/agents/import/apply",
        data=confirmation(upload(client, ("builder.yaml", client.get("/agents/builder/export").data))),
    )

    again = upload(client, ("builder.yaml", client.get("/agents/builder/export").data))

    assert diff_of(again) == "No changes; 1 unchanged."
    assert "there is nothing to apply" in text_of(again) and "Apply these changes" not in text_of(again)


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ([("builder.yaml", b"id: builder\nlabel: A\nlabel: B\n")], 'builder.yaml:3: the key "label" is given twice'),
        (
            [("builder.yaml", b"id: builder\nlabel: A\nmax_rounds: 101\n")],
            "builder.yaml:3: max_rounds: must be from 0 to 100",
        ),
        ([("builder.json", b'{"id": "builder"}')], "builder.json: is not a policy file (ID.yaml)"),
        ([], "Choose one or more policy files (ID.yaml)."),
    ],
)
def test_a_bad_upload_names_the_problem_and_changes_nothing(client, builder, files, problem):
    before = client.get("/api/agents").get_json()

    response = upload(client, *files)

    assert response.status_code == 400
    assert "Nothing was applied." in text_of(response) and problem in text_of(response)
    assert client.get("/api/agents").get_json() == before


def test_a_confirmation_after_the_agent_changed_shows_the_new_diff_and_applies_nothing(client, builder):
    changed = client.get("/agents/builder/export").data.replace(b"label: Builder", b"label: Builder\nmax_rounds: 6")
    preview = upload(client, ("builder.yaml", changed))
    agent = client.get("/api/agents/builder").get_json()
    client.post("/agents/builder/edit", data=agent_form_data({**agent, "max_rounds": 4}))

    response = client.post("/agents/import/apply", data=confirmation(preview))

    assert response.status_code == 409
    assert "Not applied: the agents changed since the preview." in text_of(response)
    assert "~ max_rounds: 4 → 6" in diff_of(response)
    assert client.get("/api/agents/builder").get_json()["max_rounds"] == 4


def test_a_confirmation_whose_files_were_tampered_with_applies_nothing(client, builder):
    posted = confirmation(
        upload(client, ("builder.yaml", client.get("/agents/builder/export").data + b"max_rounds: 2\n"))
    )
    posted["file_content"] = ["not base64!"]

    response = client.post("/agents/import/apply", data=posted)

    assert response.status_code == 400 and "upload them again" in text_of(response)
    assert client.get("/api/agents/builder").get_json()["max_rounds"] == 10


def test_import_and_its_confirmation_need_the_csrf_token(csrf_app):
    client = csrf_app.test_client()
    client.put("/api/agents/builder", json=BUILDER)
    file = client.get("/agents/builder/export").data + b"max_rounds: 2\n"

    refused = upload(client, ("builder.yaml", file))
    assert refused.status_code == 400 and "It was missing its security token" in text_of(refused)
    assert client.post("/agents/import/apply", data={"file_name": ["builder.yaml"]}).status_code == 400
    assert client.get("/api/agents/builder").get_json()["max_rounds"] == 10


@pytest.fixture
def managed(client, builder):
    preview = upload(client, ("builder.yaml", client.get("/agents/builder/export").data))
    assert client.post("/agents/import/apply", data=confirmation(preview)).status_code == 303


def test_a_managed_agent_shows_its_settings_read_only_with_the_file_to_change(client, managed):
    edit_page = client.get("/agents/builder/edit")
    view_page = client.get("/agents/builder")

    assert edit_page.status_code == 200
    text = text_of(edit_page)
    assert "Settings of Builder" in text
    assert "Managed by the policy file builder.yaml . Its settings are read-only here" in text
    assert "flask --app app apply --release builder" in text
    root = parse_html(edit_page.get_data(as_text=True))
    assert any(element.tag == "fieldset" and "disabled" in element.attrs for element in root.elements())
    assert not any(element.tag == "button" and element.text == "Save agent" for element in root.elements())
    assert "Managed by the policy file builder.yaml" in text_of(view_page)
    links = [element.text for element in parse_html(view_page.get_data(as_text=True)).elements() if element.tag == "a"]
    assert "Settings" in links and "Delete" not in links and "Edit" not in links


def test_a_managed_agents_form_post_is_refused_and_changes_nothing(client, managed):
    agent = client.get("/api/agents/builder").get_json()

    response = client.post("/agents/builder/edit", data=agent_form_data({**agent, "label": "Mine"}))

    assert response.status_code == 409 and "Managed by the policy file builder.yaml" in text_of(response)
    assert client.get("/api/agents/builder").get_json() == agent


@pytest.mark.parametrize("agent_id", ["export", "import"])
def test_the_ids_of_the_export_and_import_pages_are_reserved(client, agent_id):
    response = client.put(f"/api/agents/{agent_id}", json={"label": "X"})

    assert response.status_code == 400 and response.get_json()["field"] == "id"
