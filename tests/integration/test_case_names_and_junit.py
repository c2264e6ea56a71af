"""A case name is one line of text: a control character (a tab, a line break, NUL, ESC, DEL, a C1 control) is refused
where a case is named, renamed or imported, beside the field or naming the file and field, and nothing changes; a
run whose message holds one is still saved as a case, named without it. Whatever the cases hold (a name stored by an
older version, a model's answer or a tool's output quoted in a difference), `check-cases --junit` writes XML 1.0
that parses, the characters XML cannot hold written as their escapes."""

import json
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli import junit_xml
from engine.cases import validate_case
from engine.config import ValidationError
from store import cases as case_store
from tests.bad_input_support import database_state
from tests.run_scenarios import BUNDLES_MESSAGE, bundles_agent

CONTROL_CHARACTERS = ["\x00", "\t", "\n", "\x1b", "\x85"]  # NUL, a tab, a line break, ESC, a C1 control


def refusal(character, position):
    shown = character.encode("unicode_escape").decode("ascii")
    return f"must be one line without control characters (character {position} is {shown})"


@pytest.fixture
def run_id(client):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201
    return client.post("/api/agents/bundles/runs", json={"message": BUNDLES_MESSAGE}).get_json()["id"]


def save_case(client, run_id, name):
    return client.post(f"/runs/{run_id}/case", data={"name": name})


@pytest.mark.parametrize("character", CONTROL_CHARACTERS)
def test_a_control_character_in_a_new_case_name_is_refused_and_nothing_is_saved(client, run_id, database, character):
    before = database_state(database)
    response = save_case(client, run_id, f"Both{character}listings")
    assert response.status_code == 303 and response.headers["Location"] == f"/runs/{run_id}"
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert f"Not saved as a case: name: {refusal(character, 5)}." in page
    assert database_state(database) == before


@pytest.mark.parametrize("character", CONTROL_CHARACTERS)
def test_a_control_character_in_a_renamed_case_is_refused_beside_the_name(client, run_id, database, character):
    case_id = int(save_case(client, run_id, "Kept").headers["Location"].rsplit("/", 1)[1])
    response = client.post(f"/cases/{case_id}", data={"name": f"Renamed{character}", "pinned": ["answer"]})
    assert response.status_code == 400
    assert f"Case name {refusal(character, 8)}." in response.get_data(as_text=True)
    assert case_store.get_case(database, case_id)["name"] == "Kept"


@pytest.mark.parametrize("character", CONTROL_CHARACTERS)
def test_a_control_character_in_an_imported_case_name_is_refused_naming_file_and_field(
    runner, client, run_id, database, tmp_path, character
):
    save_case(client, run_id, "Exported")
    runner.invoke(args=["export-cases", "bundles", str(tmp_path)])
    path = tmp_path / "bundles.exported.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "name": f"{character}Imported"}))
    before = database_state(database)
    result = runner.invoke(args=["import-cases", str(tmp_path)])
    assert result.exit_code == 2
    assert f"  bundles.exported.json: name: {refusal(character, 1)}" in result.output
    assert database_state(database) == before


def test_every_control_character_is_refused_in_a_case_name_and_other_characters_are_kept(client, run_id, database):
    save_case(client, run_id, "Base")
    case = case_store.case_json(case_store.list_cases(database, "bundles")[0])
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        with pytest.raises(ValidationError) as refused:
            validate_case({**case, "name": f"A{chr(code)}"})
        assert refused.value.errors == {"name": refusal(chr(code), 2)}
    assert validate_case({**case, "name": "Ünïcode\xa0名前 ✓ \u200b"})["name"] == "Ünïcode\xa0名前 ✓ \u200b"


def test_a_run_whose_message_holds_control_characters_is_saved_under_a_one_line_name(client, database):
    assert client.put("/api/agents/bundles", json=bundles_agent()).status_code == 201
    message = "Which\x00bundles\x1b[31m do\tnodes\r\nhave?\x85"
    run = client.post("/api/agents/bundles/runs", json={"message": message}).get_json()
    assert save_case(client, run["id"], "").status_code == 303
    (case,) = case_store.list_cases(database, "bundles")
    assert case["name"] == f"Run #{run['id']}: Which bundles [31m do nodes have?"
    assert case["message"] == message  # the message itself is replayed as it was


def test_check_cases_writes_a_junit_file_that_parses_whatever_an_older_version_stored(
    runner, client, run_id, database, tmp_path
):
    case_id = int(save_case(client, run_id, "Stored").headers["Location"].rsplit("/", 1)[1])
    database.execute("UPDATE cases SET name = :name WHERE id = :id", {"name": "Old\x01name\x1b\ufffe", "id": case_id})
    junit = tmp_path / "cases.xml"
    runner.invoke(args=["check-cases", "--junit", str(junit)])
    testcase = ElementTree.parse(junit).getroot().find("testsuite/testcase")
    assert testcase.get("name") == "Old\\x01name\\x1b\\ufffe"


# Any text: control characters, lone surrogates and the noncharacters XML excludes included.
ANY_TEXT = st.text(st.characters(codec=None, categories=None, exclude_categories=()), max_size=40)
ALLOWED_IN_XML = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\ufffe\uffff").filter(
        lambda character: character in "\t\n\r" or character >= " "
    ),
    max_size=40,
)


def checked_case(name, error, differences):
    check = {"passed": False, "error": error, "differences": differences, "duration_ms": 3}
    return {"agent_id": "bundles", "name": name, "last_check": check}


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(name=ANY_TEXT, error=st.one_of(st.none(), ANY_TEXT.filter(bool)), differences=st.lists(ANY_TEXT, max_size=3))
def test_the_junit_report_is_xml_1_0_whatever_the_cases_hold(name, error, differences):
    report = junit_xml([checked_case(name, error, differences)])
    testcase = ElementTree.fromstring(report.encode("utf-8")).find("testsuite/testcase")
    assert testcase is not None
    detail = testcase.find("error" if error else "failure")
    assert detail is not None


@given(name=ALLOWED_IN_XML, difference=ALLOWED_IN_XML)
def test_text_xml_can_hold_reaches_the_report_unchanged(name, difference):
    report = junit_xml([checked_case(name, None, [difference])])
    testcase = ElementTree.fromstring(report.encode("utf-8")).find("testsuite/testcase")
    assert testcase.get("name") == name
    # An XML parser reads every line break in text as a line feed.
    assert (testcase.find("failure").text or "") == difference.replace("\r\n", "\n").replace("\r", "\n")
