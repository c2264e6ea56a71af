"""Command-line interface: `flask --app app COMMAND`. The commands use the same store functions, and so the
same validation, as the pages and the API.

`run-agent` takes the path the run page and the API take (store.run_service.execute_and_store_run), so the run
is stored and shows up in the history; it prints each round, its calls and rejections, and the answer, or with
--json the run as `POST /api/agents/<id>/runs` returns it.

Bad input (an argument, a file, an agent that does not exist) is a message and exit status 2, never a traceback.
"""

import json
import os
import re
import sqlite3
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.etree import ElementTree

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy.exc import ArgumentError, OperationalError
from werkzeug.security import generate_password_hash

from engine.config import is_valid_unicode, printable
from engine.tools.documents import load_corpus_files
from engine.types import AWAITING_APPROVAL
from services import cases as case_service
from services import demo, policy_files, run_texts
from services import runs as run_service
from services import tool_servers as tool_server_service
from services.policy_files import PolicyInputError
from services.policy_format import FileProblem, read_policy
from services.settings import (
    allowed_networks,
    configured_names,
    is_loopback,
    login_enabled,
    run_options,
    schema_url,
    tool_registry,
)
from services.tracing import traced
from store import ManagedByFile, NotFound, RevisionConflict, ValidationError, migrations, row_exists
from store import agents as agent_store
from store import cases as case_store
from store import copy as copy_store
from store import db as store_db
from store import documents as document_store
from store import runs as run_store
from store import tool_servers as tool_server_store
from store.db import get_db

# What XML 1.0 cannot hold: every character but tab, line feed, carriage return and the rest of Unicode outside
# the surrogates, U+FFFE and U+FFFF.
NOT_IN_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
OUTPUT_PREVIEW = 300  # characters of a tool output shown in the text report; --json has all of it


class BadInput(click.ClickException):
    """Bad input: the message, exit status 2 (as click's own usage errors). What the message quotes from the input
    is kept printable, so showing it cannot fail."""

    exit_code = 2

    def __init__(self, message):
        super().__init__(printable(message))


class UnicodeText(click.ParamType):
    """A text argument. Bytes that are not UTF-8 reach Python as lone surrogates; they are refused here."""

    name = "text"

    def convert(self, value, param, ctx):
        if not is_valid_unicode(value):
            self.fail("is not valid UTF-8 text", param, ctx)
        return value


TEXT = UnicodeText()


# A database whose every step is this recent was created by the command just before (make run's check-host).
JUST_CREATED_SECONDS = 120


@click.command("init-db")
@with_appcontext
def init_db_command():
    """Create the database, or upgrade it to the current schema.

    The app migrates when it starts, which `flask` does before running this command: what start-up did is
    reported with what this command applies itself."""
    schema = current_app.extensions["toolgate_schema"]
    applied = schema["applied"] + migrations.migrate(get_db())
    path = store_db.describe(current_app.config["DATABASE_URL"])
    if schema["created"]:
        click.echo(f"Created the database at {path} ({len(applied)} migration steps: {', '.join(applied)}).")
    elif not applied and migrations.created_since(get_db(), JUST_CREATED_SECONDS):
        steps = migrations.applied_migrations(get_db())
        click.echo(f"Created the database at {path} moments ago ({len(steps)} migration steps: {', '.join(steps)}).")
    elif applied:
        click.echo(f"Upgraded the database at {path}: applied {', '.join(applied)}.")
    else:
        click.echo(f"The database at {path} is up to date: no migration step was pending.")


@click.command("load-demo")
@with_appcontext
@click.option("--replace", is_flag=True, help="Overwrite demo agents and documents that already exist.")
@click.option("--if-empty", is_flag=True, help="Load nothing when the database has agents already (make run).")
def load_demo_command(replace, if_empty):
    """Load the demo agents (one per tool family) and the sample documents."""
    if if_empty and agent_store.list_agents(get_db()):
        click.echo("The database has agents already; demo not loaded.")
        return
    loaded = demo.load_demo(get_db(), tool_registry().parameters_by_name(), replace=replace)
    agents = ", ".join(loaded["agents"]) or "none new"
    click.echo(
        f"Demo agents: {agents}; sample documents: {len(loaded['documents'])} loaded; "
        f"regression cases: {len(loaded['cases'])} (check them with flask check-cases)."
    )
    if not replace and loaded["skipped_agents"]:
        click.echo(f"Kept as they are: {', '.join(loaded['skipped_agents'])} (use --replace to reset them).")


@click.command("export-agent")
@with_appcontext
@click.argument("agent_id", type=TEXT)
def export_agent_command(agent_id):
    """Print an agent as its policy file (YAML; export-agents writes several)."""
    try:
        [(_name, text)] = policy_files.export(get_db(), [agent_id], schema_url())
    except NotFound as error:
        raise BadInput(str(error)) from None
    click.echo(text, nl=False)


def _agent_file_data(file):
    """The agent in an import-agent file: JSON when it starts with { or [ (JSON's own rules, as before policy files
    existed), a policy file (YAML) otherwise."""
    content = file.read()
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{file.name} is not UTF-8 text; nothing was imported.") from None
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise BadInput(f"{file.name} is not valid JSON: {error}") from None
        except RecursionError:
            raise BadInput(f"{file.name} is nested too deeply; nothing was imported.") from None
    try:
        return read_policy(content)[0]
    except FileProblem as problem:
        raise BadInput(f"{problem.describe(file.name)}; nothing was imported.") from None


@click.command("import-agent")
@with_appcontext
@click.argument("file", type=click.File("rb"))
@click.option("--replace", is_flag=True, help="Replace an existing agent whatever revision the file carries.")
def import_agent_command(file, replace):
    """Create or replace an agent from a policy file, YAML or JSON ("-" reads standard input). A bad file changes
    nothing."""
    data = _agent_file_data(file)
    db = get_db()
    if replace and isinstance(data, dict) and isinstance(data.get("id"), str):
        try:
            data["revision"] = agent_store.get_agent(db, data["id"])["revision"]
        except NotFound:
            pass
    try:
        agent = agent_store.save_agent(db, data, tool_registry().parameters_by_name())
    except ValidationError as error:
        details = "\n".join(f"  {field}: {message}" for field, message in error.errors.items())
        raise BadInput(f"{file.name} is not a valid agent; nothing was imported:\n{details}") from None
    except RevisionConflict as conflict:
        raise BadInput(f"{conflict} Use --replace to overwrite it.") from None
    except ManagedByFile as managed:
        raise BadInput(str(managed)) from None
    click.echo(f'Imported the agent "{agent["id"]}" (revision {agent["revision"]}).')


@click.command("export-agents")
@with_appcontext
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.argument("agent_ids", nargs=-1, metavar="[AGENT_ID]...", type=TEXT)
def export_agents_command(folder, agent_ids):
    """Write every agent (or those named) to FOLDER as a policy file, FOLDER/ID.yaml, for apply."""
    try:
        files = policy_files.export(get_db(), agent_ids, schema_url())
    except NotFound as error:
        raise BadInput(f"{error} Nothing was exported.") from None
    if not files:
        click.echo("There are no agents; nothing was exported.")
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files:
            (folder / name).write_bytes(text.encode("utf-8"))
    except OSError as error:
        raise BadInput(f"Could not write to {folder}: {error.strerror}.") from None
    click.echo(f"Exported {_counted(len(files), 'agent')} to {folder}: {', '.join(name for name, _text in files)}")


@click.command("apply")
@with_appcontext
@click.argument("folder", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.option("--prune", is_flag=True, help="Remove the agents no file in FOLDER names.")
@click.option("--release", multiple=True, metavar="ID", type=TEXT, help="Hand this agent back to the pages.")
def apply_command(folder, dry_run, prune, release):
    """Apply the policy files in FOLDER (ID.yaml, as export-agents writes them): validate all of them, print per
    agent what changes, and apply the whole set in one transaction. The agents they apply are managed by their
    files from then on. Exit status: 0 nothing to change, 1 changed (or would change, with --dry-run), 2 bad
    input (nothing changed)."""
    if folder is None and not release:
        raise BadInput("Name the folder of policy files to apply (or an agent to hand back with --release ID).")
    if prune and folder is None:
        raise BadInput("--prune removes the agents no file in the folder names: name the folder.")
    files = policy_files.folder_files(folder) if folder else []
    if folder and not files:
        raise BadInput(f"{folder} has no .yaml file; nothing was applied.")
    db = get_db()
    try:
        planned = policy_files.plan(db, files, tool_registry().parameters_by_name(), prune=prune, release=release)
    except PolicyInputError as error:
        raise BadInput("Nothing was applied:\n" + "\n".join(error.problems)) from None
    click.echo(planned.text())
    if not planned.changes:
        return
    if dry_run:
        click.echo("Dry run: nothing was changed.")
    else:
        try:
            policy_files.apply(db, planned)
        except (RevisionConflict, ValidationError, NotFound) as error:
            raise BadInput(f"{error} Nothing was applied; run apply again to see what changes now.") from None
        click.echo("Applied, in one transaction.")
    sys.exit(1)


def _one_line(value, limit=None):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def _round_facts(round_):
    facts = []
    if round_.get("finish_reason"):
        facts.append(f"finish reason {round_['finish_reason']}")
    if round_.get("usage"):
        facts.append(run_texts.usage_text(round_["usage"]))
    if round_.get("latency_ms") is not None:
        facts.append(f"{round_['latency_ms']:.1f} ms")
    return " · ".join(facts)


def format_run(run):
    """The run as text for a terminal: a header, each round with its calls, then the answer and the counts."""
    agent = run.get("agent") or {}
    lines = [
        f"Run #{run['id']} of {run['agent_id']} (revision {agent.get('revision', '?')})",
        f"Message: {run['message']}",
    ]
    if run.get("overrides"):
        lines.append(f"Overrides: {_one_line(run['overrides'])}")
    for round_ in run["rounds"]:
        offered = ", ".join(round_["tools_offered"]) if round_["tools_offered"] else "no tools"
        lines += ["", f"Round {round_['number']} — tools offered: {offered}"]
        content = round_["assistant"]["content"]
        lines.append(f"  The model said: {_one_line(content) if content else '(no text)'}")
        facts = _round_facts(round_)
        if facts:
            lines.append(f"  {facts}")
        rejected = sum(1 for call in round_["calls"] if call["status"] == "rejected")
        if round_["calls"] and rejected == len(round_["calls"]):
            lines.append(f"  All {rejected} call(s) rejected — nothing executed")
        for call in round_["calls"]:
            status = run_texts.status_text(call["status"]).upper()
            reason = f" ({run_texts.reason_text(call['reason'])})" if call["reason"] else ""
            repaired = " (id repaired)" if call.get("original_id") is not None else ""
            lines.append(f"  [{status}] {call['id']}{repaired} {call['name']} {_one_line(call['arguments'])}{reason}")
            sent = call["output"] if call["status"] == "executed" else call["message"]
            lines.append(f"      → {_one_line(sent or '', OUTPUT_PREVIEW)}")
        if round_.get("reminder"):
            lines.append(f"  Reminder sent: {round_['reminder']}")
    lines.append("")
    pending = run.get("pending_round")
    if pending:
        waiting = [call["id"] for call in pending["calls"] if call["status"] == AWAITING_APPROVAL]
        lines.append(
            f"Round {pending['number']} awaits approval of {', '.join(waiting)}: nothing of it has run. Decide on "
            f"/runs/{run['id']}, or POST /api/runs/{run['id']}/decisions."
        )
    elif run["stop_reason"] == "error":
        if run.get("model_requests", 0) > len(run["rounds"]):
            lines.append(f"Request {run['model_requests']} failed.")
        lines.append(f"Error: {run.get('error')}")
    else:
        lines.append(f"Answer: {run['answer'] or ''}")
        if run["stop_reason"] in run_texts.CUT_OFF_TEXTS:
            lines.append(run_texts.CUT_OFF_TEXTS[run["stop_reason"]])
    lines.append(
        f"Stop reason: {run_texts.stop_reason_text(run)} · rounds used {run['rounds_used']} of {run['max_rounds']}"
        f" · {run['tool_calls']} call(s) executed, {run['rejected_calls']} rejected · {run['duration_ms']:.1f} ms"
    )
    lines.append(
        f"Model requests: {run.get('model_requests', len(run['rounds']))} · "
        f"{run_texts.usage_text(run.get('usage')) or 'no token usage reported'}"
    )
    if run.get("sources"):
        lines.append("Sources: " + "; ".join(f"{source['title']} ({source['id']})" for source in run["sources"]))
    if run.get("layout"):
        lines.append(f"Canvas layout: {_one_line(run['layout'])}")
    for entry in run.get("log") or []:
        lines.append(f"Log ({entry['level']}): {entry['message']}")
    return "\n".join(lines)


@click.command("run-agent")
@with_appcontext
@click.argument("agent_id", type=TEXT)
@click.argument("message", type=TEXT)
@click.option("--overrides", "overrides_text", type=TEXT, default=None, help="Per-run overrides as a JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON, as the runs API returns it.")
def run_agent_command(agent_id, message, overrides_text, as_json):
    """Run an agent on MESSAGE, store the run, and print each round and the answer."""
    overrides = None
    if overrides_text is not None:
        try:
            overrides = json.loads(overrides_text)
        except json.JSONDecodeError as error:
            raise BadInput(f"--overrides is not valid JSON: {error}") from None
        except RecursionError:
            raise BadInput("--overrides is nested too deeply; nothing was run.") from None
    try:
        run = traced(
            run_service.execute_and_store_run(
                current_app.config["DATABASE_URL"], agent_id, message, overrides, source="cli", **run_options()
            )
        )
    except NotFound as error:
        raise BadInput(str(error)) from None
    except ValidationError as error:
        raise BadInput(f"Nothing was run: {error}") from None
    click.echo(json.dumps(run, indent=2, ensure_ascii=False) if as_json else format_run(run))
    if run["stop_reason"] == "error":
        sys.exit(1)


@click.command("import-documents")
@with_appcontext
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Overwrite documents whose id already exists.")
def import_documents_command(folder, replace):
    """Import the .md and .txt files of FOLDER as documents: the id is the file name without its extension, the
    title the first line. All files are imported, or none (a bad file is named)."""
    try:
        documents = load_corpus_files(folder)
    except ValueError as error:
        raise BadInput(f"{error} Nothing was imported.") from None
    if not documents:
        raise BadInput(f"{folder} has no non-empty .md or .txt file.")
    for document in documents:
        try:
            document_store.validate_document(document)
        except ValidationError as error:
            raise BadInput(f'The file "{document["id"]}" cannot be imported ({error}); nothing was imported.') from None
    written = document_store.import_documents(get_db(), documents, replace=replace)
    skipped = len(documents) - len(written)
    click.echo(
        f"Imported {len(written)} document(s) from {click.format_filename(folder)}"
        + (f"; kept {skipped} existing (use --replace to overwrite)." if skipped else ".")
    )


def _case_line(case):
    check = case["last_check"]
    verdict = "PASS" if check["passed"] else "FAIL"
    lines = [f"{verdict}  {case['agent_id']}: {case['name']} (case {case['id']})"]
    if not check["passed"]:
        lines += [f"      {difference}" for difference in check["differences"]]
    return "\n".join(lines)


def _xml_text(text):
    """`text` as XML 1.0 can hold it: a character it cannot (most control characters, a lone surrogate, U+FFFE,
    U+FFFF) is written as its escape, `\\x01`. A model's answer or a tool's output quoted in a difference can hold
    any of them, and one makes CI refuse the whole report."""
    return NOT_IN_XML.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def junit_xml(cases):
    """The checked cases as JUnit XML: one test suite per agent, one test case per case; a case that could not
    run is an error, one whose expectations do not hold a failure."""
    suites = ElementTree.Element("testsuites", name="toolgate cases")
    by_agent = {}
    for case in cases:
        by_agent.setdefault(case["agent_id"], []).append(case)
    for agent_id, agent_cases in by_agent.items():
        agent = _xml_text(agent_id)
        suite = ElementTree.SubElement(suites, "testsuite", name=agent, tests=str(len(agent_cases)))
        failures = errors = 0
        for case in agent_cases:
            check = case["last_check"]
            seconds = f"{(check.get('duration_ms') or 0) / 1000:.3f}"
            name = _xml_text(case["name"])
            element = ElementTree.SubElement(suite, "testcase", classname=agent, name=name, time=seconds)
            if check["error"]:
                errors += 1
                error = _xml_text(check["error"])
                ElementTree.SubElement(element, "error", message=error).text = error
            elif not check["passed"]:
                failures += 1
                count = len(check["differences"])
                message = f"{count} expectation{'s' if count != 1 else ''} changed"
                differences = _xml_text("\n".join(check["differences"]))
                ElementTree.SubElement(element, "failure", message=message).text = differences
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
    ElementTree.indent(suites)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _check_junit_folder(path):
    """Before any case runs: the JUnit file's folder must be there to write into (a case failing is exit status 1,
    so a report that cannot be written must be found out first, and said in words)."""
    folder = path.parent
    if not folder.exists():
        raise BadInput(f"The folder {folder} does not exist, so the JUnit file cannot be written; nothing was checked.")
    if not folder.is_dir():
        raise BadInput(f"{folder} is not a folder, so the JUnit file cannot be written; nothing was checked.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"The folder {folder} cannot be written to; nothing was checked.")


@click.command("check-cases")
@with_appcontext
@click.argument("agent_ids", nargs=-1, metavar="[AGENT_ID]...", type=TEXT)
@click.option("--junit", "junit_file", type=click.Path(dir_okay=False, writable=True), help="Write JUnit XML here.")
def check_cases_command(agent_ids, junit_file):
    """Replay the regression cases of these agents (all agents with cases when none is named) against the agents
    as they are stored now. Prints one line per case; exits with 1 when any case fails."""
    db = get_db()
    if junit_file:
        _check_junit_folder(Path(junit_file))
    for agent_id in agent_ids:
        if not agent_store.agent_exists(db, agent_id):
            raise BadInput(f'No agent with id "{agent_id}"; nothing was checked.')
    cases = [
        case for agent_id in agent_ids or case_store.case_agent_ids(db) for case in case_store.list_cases(db, agent_id)
    ]
    checked = case_service.check_cases(db, cases, registry=tool_registry())
    for case in checked:
        click.echo(_case_line(case))
    click.echo(case_service.checked_summary(checked))
    if junit_file:
        try:
            Path(junit_file).write_text(junit_xml(checked), encoding="utf-8")
        except OSError as error:
            raise BadInput(f"Could not write the JUnit file {junit_file}: {error.strerror}.") from None
    if any(not case["last_check"]["passed"] for case in checked):
        sys.exit(1)


def _file_name(agent_id, name, taken):
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "case"
    candidate, number = f"{agent_id}.{slug}.json", 1
    while candidate in taken:
        number += 1
        candidate = f"{agent_id}.{slug}-{number}.json"
    taken.add(candidate)
    return candidate


@click.command("export-cases")
@with_appcontext
@click.argument("agent_id", type=TEXT)
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def export_cases_command(agent_id, folder):
    """Write each regression case of AGENT_ID to FOLDER as a JSON file (AGENT_ID.NAME.json), for import-cases."""
    db = get_db()
    cases = case_store.list_cases(db, agent_id)
    if not cases and not agent_store.agent_exists(db, agent_id):
        raise BadInput(f'No agent with id "{agent_id}".')
    if not cases:
        click.echo(f'The agent "{agent_id}" has no cases; nothing was exported.')
        return
    folder.mkdir(parents=True, exist_ok=True)
    taken = set()
    for case in cases:
        path = folder / _file_name(agent_id, case["name"], taken)
        path.write_text(json.dumps(case_store.case_json(case), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    click.echo(f"Exported {len(cases)} case(s) of {agent_id} to {folder}: {', '.join(sorted(taken))}")


def _read_case_file(db, path, known_tools):
    """The case in one file, checked; raises BadInput naming the file and the field."""
    try:
        return case_store.validate(db, json.loads(path.read_text(encoding="utf-8")), known_tools)
    except UnicodeDecodeError:
        raise BadInput(f"  {path.name}: is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise BadInput(f"  {path.name}: is not valid JSON ({error})") from None
    except RecursionError:  # parsing it, or copying and checking what was parsed
        raise BadInput(f"  {path.name}: is nested too deeply") from None
    except ValidationError as error:
        details = "\n".join(f"  {path.name}: {field}: {message}" for field, message in error.errors.items())
        raise BadInput(details) from None


@click.command("import-cases")
@with_appcontext
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
def import_cases_command(folder):
    """Import the regression cases in FOLDER's .json files (as export-cases writes them). A case replaces the
    agent's case of the same name. All files are imported, or none: a bad file is named with its bad field."""
    db = get_db()
    paths = sorted(path for path in folder.glob("*.json") if path.is_file())
    if not paths:
        raise BadInput(f"{folder} has no .json file.")
    cases, problems, seen = [], [], {}
    for path in paths:
        try:
            case = _read_case_file(db, path, tool_registry().names())
        except BadInput as problem:
            problems.append(problem.message)
            continue
        key = (case["agent_id"], case["name"])
        if key in seen:
            problems.append(f'  {path.name}: name: is the name of the case in {seen[key]} too (agent "{key[0]}")')
        seen[key] = path.name
        cases.append(case)
    if problems:
        raise BadInput("Nothing was imported:\n" + "\n".join(problems))
    added, replaced = case_store.import_cases(db, cases)
    click.echo(f"Imported {len(cases)} case(s) from {folder}: {len(added)} added, {len(replaced)} replaced.")


@click.command("backup")
@with_appcontext
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Overwrite FILE if it exists.")
def backup_command(file, replace):
    """Copy the database to FILE, safely while the app serves (SQLite's online backup: one consistent snapshot)."""
    path = store_db.sqlite_path(current_app.config["DATABASE_URL"])
    if path is None:
        raise BadInput(
            f"backup copies a SQLite database; {store_db.describe(current_app.config['DATABASE_URL'])} is not one. "
            "Back up PostgreSQL with its own tools: pg_dump --format=custom --file=FILE DATABASE_URL."
        )
    database = Path(path)
    if file.exists() and file.resolve() == database.resolve():
        raise BadInput(f"{file} is the database itself; choose another file.")
    if file.exists() and not replace:
        raise BadInput(f"{file} exists; nothing was written (use --replace to overwrite it).")
    if not file.parent.is_dir():
        raise BadInput(f"The folder {file.parent} does not exist; nothing was written.")
    store_db.backup(get_db(), str(file))
    copy = sqlite3.connect(file)
    try:
        runs, agents = (copy.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("runs", "agents"))
    finally:
        copy.close()
    click.echo(
        f"Backed up {database} to {file}: {_counted(agents, 'agent')}, {_counted(runs, 'run')}, "
        f"{file.stat().st_size:,} bytes."
    )


@click.command("copy-database")
@with_appcontext
@click.option("--to", "target_url", required=True, help="The URL of an empty database: postgresql://user:pass@host/db.")
def copy_database_command(target_url):
    """Copy everything of this app's database into an empty database (PostgreSQL, for several replicas): its schema
    is created there first, a database that holds rows is refused, and the rows of every table are counted on both
    sides and printed."""
    source = get_db()
    if "://" not in target_url:
        raise BadInput(f"--to takes a database URL (postgresql://user:password@host:port/db), not {target_url!r}.")
    try:
        described = store_db.describe(target_url)
        target = store_db.open_db(target_url)
    except (ValueError, ArgumentError) as error:
        raise BadInput(f"--to: {error}") from None
    except OperationalError as error:
        raise BadInput(f"{described} could not be reached: {error.orig}") from None
    try:
        migrations.migrate(target)
        copied = copy_store.copy_database(source, target)
    except copy_store.TargetNotEmpty as error:
        raise BadInput(f"{described}: {error}") from None
    finally:
        target.close()
    expected = copy_store.row_counts(source)
    for table, count in copied.items():
        click.echo(
            f"{table}: {count:,}" + ("" if count == expected[table] else f" (the source has {expected[table]:,})")
        )
    if copied != expected:
        raise click.ClickException(f"The counts of {described} differ from the source's: see above.")
    click.echo(f"Copied {store_db.describe(current_app.config['DATABASE_URL'])} to {described}: every count matches.")


@click.command("prune-runs")
@with_appcontext
@click.option("--older-than", "days", type=click.IntRange(min=0), required=True, help="Age in days (0: every run).")
@click.option("--agent", "agent_id", default=None, help="Only the runs of this agent id.")
def prune_runs_command(days, agent_id):
    """Delete the runs older than DAYS days, and their log entries, in one transaction."""
    if agent_id is not None and not agent_id.strip():
        raise click.BadParameter("must be an agent id (leave the option out for every agent)", param_hint="--agent")
    cutoff = (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="seconds")
    runs, entries = run_store.prune_runs(get_db(), cutoff, agent_id)
    whose = f' of the agent "{agent_id}"' if agent_id else ""
    click.echo(
        f"Deleted {_counted(runs, 'run')}{whose} created before {cutoff}, "
        f"with their {_counted(entries, 'log entry', 'log entries')}."
    )


def _counted(count, singular, plural=None):
    return f"{count:,} {singular if count == 1 else plural or singular + 's'}"


@click.command("check-host")
@with_appcontext
@click.argument("host", type=TEXT)
def check_host_command(host):
    """Refuse (exit status 2) to serve on HOST, an address other machines can reach, without a login. `make run`
    calls it first."""
    if is_loopback(host) or login_enabled():
        return
    raise BadInput(
        f"Not serving on {host} without a login: anyone who can reach it could read every prompt and run, and "
        "spend the model account. Set an administrator password first, for example\n"
        f"  TOOLGATE_ADMIN_PASSWORD='a long passphrase' make run HOST={host}\n"
        "or put a hash of it (flask --app app hash-password) in TOOLGATE_ADMIN_PASSWORD_HASH. Add the host name "
        "people will use to TOOLGATE_ALLOWED_HOSTS."
    )


@click.command("hash-password")
@click.password_option("--password", prompt="Administrator password", help="Asked for when not given.")
def hash_password_command(password):
    """Print a hash of the administrator password, for TOOLGATE_ADMIN_PASSWORD_HASH."""
    if not is_valid_unicode(password):
        raise BadInput("The password is not valid UTF-8 text.")
    click.echo(generate_password_hash(password))


@click.command("add-tool-server")
@with_appcontext
@click.argument("server_id", type=TEXT)
@click.option("--url", default="", type=TEXT, help="A streamable-HTTP MCP server, e.g. http://127.0.0.1:8765/mcp.")
@click.option("--command", "command", default="", type=TEXT, help="A local MCP server to start, spoken to over stdio.")
@click.option("--label", default=None, type=TEXT, help="The name shown on the pages (default: the id).")
@click.option("--headers", "headers_text", default="{}", type=TEXT, help="Extra headers as JSON (with --url).")
@click.option("--timeout", default=30.0, type=float, help="Seconds one call may take, connecting included.")
@click.option("--replace", is_flag=True, help="Replace a server with this id.")
def add_tool_server_command(server_id, url, command, label, headers_text, timeout, replace):
    """Add an MCP tool server: connects, lists its tools and stores both. Only here may a server be a command."""
    try:
        headers = json.loads(headers_text)
    except json.JSONDecodeError as error:
        raise BadInput(f"--headers is not valid JSON: {error}") from None
    data = {"id": server_id, "label": label or server_id, "url": url, "command": command, "headers": headers}
    db = get_db()
    try:
        server = tool_server_service.save_tool_server(
            db,
            {**data, "timeout": timeout},
            create=not (replace and row_exists(db, "tool_servers", server_id)),
            key_variables=configured_names("KEY_VARIABLES"),
            allow_command=True,
            allowed_networks=allowed_networks(),
        )
    except ValidationError as error:
        details = "\n".join(f"  {field}: {message}" for field, message in error.errors.items())
        raise BadInput(f"The tool server was not added:\n{details}") from None
    names = ", ".join(tool["name"] for tool in server["tools"]) or "none"
    click.echo(f'Added the tool server "{server["id"]}" with {len(server["tools"])} tool(s): {names}.')


@click.command("refresh-tool-servers")
@with_appcontext
def refresh_tool_servers_command():
    """List every tool server's tools again and keep them; a server that fails keeps the list it had."""
    db = get_db()
    failed = 0
    for server in tool_server_store.list_tool_servers(db):
        refreshed, error = tool_server_service.connect(db, server["id"], configured_names("KEY_VARIABLES"))
        if error:
            failed += 1
            click.echo(f"{server['id']}: not refreshed: {error}.")
        else:
            click.echo(f"{server['id']}: {len(refreshed['tools'])} tool(s).")
    if failed:
        sys.exit(1)


def register(app):
    for command in (
        init_db_command,
        load_demo_command,
        export_agent_command,
        import_agent_command,
        export_agents_command,
        apply_command,
        run_agent_command,
        import_documents_command,
        check_cases_command,
        export_cases_command,
        import_cases_command,
        backup_command,
        copy_database_command,
        prune_runs_command,
        check_host_command,
        hash_password_command,
        add_tool_server_command,
        refresh_tool_servers_command,
    ):
        app.cli.add_command(command)
