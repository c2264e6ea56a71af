"""Agents kept as policy files (issue 34): export them, and apply a set of files to the database — every file
validated first, a diff per agent a reviewer can read, then the whole set in one transaction.

The CLI (`export-agents`, `apply`, `export-agent`, `import-agent`) and the agents pages (Export, Import) call
these; the file format itself is services/policy_format.py.
"""

import base64
import binascii
import difflib
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import AGENT_DEFAULTS, TOOL_MAPS, TOOL_SETTING_DEFAULTS
from engine.tools.mcp import SEPARATOR
from services.policy_format import (
    FILE_FIELDS,
    NOT_IN_FILE,
    FileProblem,
    dump_policy,
    file_form,
    line_of,
    read_policy,
)
from store import NotFound, ValidationError
from store import agents as agent_store
from store import tool_servers as tool_server_store

SUFFIXES = (".yaml", ".yml")
TOOL_ENABLED = object()  # a flattened agent's mark for "this tool is enabled"
FIELD_ORDER = {key: index for index, key in enumerate(FILE_FIELDS)}


class PolicyInputError(ValueError):
    """Files (or --release ids) that cannot be applied: `problems`, one line each, naming the file, the line and
    the field."""

    def __init__(self, problems):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class PolicyFile:
    name: str  # as the user knows it: the path under the folder given, or the uploaded file's name
    content: bytes

    @property
    def digest(self):
        return "sha256:" + hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class AgentChange:
    agent_id: str
    kind: str  # "added", "changed", "removed" or "released"
    source: str  # the file, or why the agent is removed or released
    lines: tuple


@dataclass
class Plan:
    changes: list = field(default_factory=list)  # AgentChange, for the agents something happens to
    unchanged: list = field(default_factory=list)  # ids of the agents the files name as they are
    writes: list = field(default_factory=list)  # what store.agents.apply_policy takes
    removals: list = field(default_factory=list)
    releases: list = field(default_factory=list)

    def text(self):
        """The diff, as `apply --dry-run` prints it and the Import page shows it."""
        marks = {"added": "+", "changed": "~", "removed": "-", "released": "~"}
        lines = []
        for change in self.changes:
            lines.append(f"{marks[change.kind]} {change.agent_id} ({change.source})")
            lines += [f"    {line}" for line in change.lines]
        counts = {kind: sum(1 for change in self.changes if change.kind == kind) for kind in marks}
        summary = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
        lines.append(f"{summary or 'No changes'}; {len(self.unchanged)} unchanged.")
        return "\n".join(lines)

    def fingerprint(self):
        """Names this plan, so a confirmation applies what the person saw and nothing that changed since."""
        state = [self.text(), self.writes, self.removals, self.releases]
        return hashlib.sha256(json.dumps(state, default=str).encode()).hexdigest()


def folder_files(folder):
    """The policy files of a folder (not its subfolders), by name."""
    paths = sorted(path for path in Path(folder).iterdir() if path.suffix in SUFFIXES and path.is_file())
    return [PolicyFile(str(path), path.read_bytes()) for path in paths]


def export(db, agent_ids, schema_url):
    """[(file name, text)] of the agents named (every agent when none is), sorted by id. Raises NotFound."""
    agents = [agent_store.get_agent(db, agent_id) for agent_id in agent_ids] or agent_store.list_agents(db)
    return [(f"{agent['id']}.yaml", dump_policy(agent, schema_url)) for agent in sorted(agents, key=_agent_id)]


def export_zip(db, schema_url):
    """Every agent's policy file in one zip (its entries dated 1980-01-01, so the same agents give the same
    bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in export(db, [], schema_url):
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), text.encode("utf-8"))
    return buffer.getvalue()


def uploaded(named_contents):
    """PolicyFiles from (file name, bytes) pairs a browser sent: the name without any folder. Raises
    PolicyInputError for none, or for a file that is not .yaml."""
    files = [PolicyFile(Path(name.replace("\\", "/")).name, content) for name, content in named_contents if name]
    problems = [
        f"{file.name}: is not a policy file (ID.yaml)" for file in files if Path(file.name).suffix not in SUFFIXES
    ]
    if not files:
        problems.append("Choose one or more policy files (ID.yaml).")
    if problems:
        raise PolicyInputError(problems)
    return files


def carried(files):
    """The (name, base64 content) pairs a confirmation form carries."""
    return [(file.name, base64.b64encode(file.content).decode("ascii")) for file in files]


def from_carried(names, contents):
    """The files a confirmation form carried back. Raises PolicyInputError when they were tampered with."""
    try:
        return uploaded(zip(names, (base64.b64decode(content, validate=True) for content in contents), strict=True))
    except (binascii.Error, ValueError):
        raise PolicyInputError(
            ["The confirmation did not carry the files of the preview; upload them again."]
        ) from None


def _agent_id(agent):
    return agent["id"]


def read_agent(db, policy_file, known_tools):
    """The validated agent one file describes, with every default filled in (its revision aside). Raises
    FileProblem, or PolicyInputError listing every bad field with its line."""
    data, lines = read_policy(policy_file.content)
    problems = [
        FileProblem("is not part of a policy file: the database counts an agent's saves", line_of(lines, key), key)
        for key in NOT_IN_FILE
        if key in data
    ]
    stem = Path(policy_file.name).stem
    if isinstance(data.get("id"), str) and data["id"] != stem:
        message = f'is "{data["id"]}", but the file is named {Path(policy_file.name).name}: name it {data["id"]}.yaml'
        problems.append(FileProblem(message, line_of(lines, "id"), "id"))
    try:
        agent = agent_store.validate(
            db, {key: value for key, value in data.items() if key not in NOT_IN_FILE}, known_tools
        )
    except ValidationError as error:
        servers = {server["id"] for server in tool_server_store.list_tool_servers(db)}
        for key, message in error.errors.items():
            problems.append(FileProblem(_missing_server(key, servers) or message, line_of(lines, key), key))
        agent = None
    if problems:
        raise PolicyInputError([problem.describe(policy_file.name) for problem in problems])
    return {key: value for key, value in agent.items() if key not in NOT_IN_FILE}


def _missing_server(key, servers):
    """The message for a tool of a tool server that does not exist (`tools.SERVER__TOOL`), or None."""
    parts = key.split(".")
    if len(parts) != 2 or parts[0] != "tools" or SEPARATOR not in parts[1]:
        return None
    server = parts[1].split(SEPARATOR, 1)[0]
    if server in servers:
        return None
    return f'no tool server has the id "{server}" (add it with flask --app app add-tool-server, then apply again)'


def plan(db, files, known_tools, prune=False, release=()):
    """What applying `files` would do, checked in full first. Raises PolicyInputError listing every problem of
    every file; then nothing may be applied."""
    problems, agents, seen = [], {}, {}
    for policy_file in files:
        try:
            agent = read_agent(db, policy_file, known_tools)
        except FileProblem as problem:
            problems.append(problem.describe(policy_file.name))
            continue
        except PolicyInputError as error:
            problems += error.problems
            continue
        if agent["id"] in seen:
            problems.append(f'{policy_file.name}: id: "{agent["id"]}" is the agent of {seen[agent["id"]]} too')
        seen[agent["id"]] = policy_file.name
        agents[agent["id"]] = (agent, policy_file)
    for agent_id in release:
        if agent_id in agents:
            problems.append(f"--release {agent_id}: a file applies this agent too; release it, or apply its file")
        elif not agent_store.agent_exists(db, agent_id):
            problems.append(f'--release {agent_id}: no agent has the id "{agent_id}"')
    if problems:
        raise PolicyInputError(problems)
    result = Plan()
    origins = agent_store.origins(db)
    for agent_id, (agent, policy_file) in agents.items():
        _plan_agent(db, result, agent, policy_file, origins.get(agent_id))
    for agent_id in release:
        if agent_id in origins:
            result.changes.append(
                AgentChange(
                    agent_id, "released", "handed back to the pages", (f"- managed by: {origins[agent_id]['path']}",)
                )
            )
            result.releases.append(agent_id)
    if prune:
        for agent in sorted(agent_store.list_agents(db), key=_agent_id):
            if agent["id"] not in agents and agent["id"] not in release:
                result.changes.append(AgentChange(agent["id"], "removed", "no file names it", ()))
                result.removals.append((agent["id"], agent["revision"]))
    return result


def _plan_agent(db, result, agent, policy_file, origin):
    try:
        stored = agent_store.get_agent(db, agent["id"])
    except NotFound:
        stored = None
    file_origin = (policy_file.name, policy_file.digest)
    if stored is None:
        added = _flatten(file_form(agent))
        lines = [_line("+", path, None, value) for path, value in added.items() if path != "id"]
        result.changes.append(AgentChange(agent["id"], "added", policy_file.name, tuple(_lines(lines))))
        result.writes.append(({**agent, "revision": 1}, True, file_origin))
        return
    revision = stored.pop("revision")
    lines = agent_differences(stored, agent)
    if origin is None:
        lines.append(f"+ managed by: {policy_file.name}")
    elif origin["path"] != policy_file.name:
        lines.append(f"~ managed by: {origin['path']} → {policy_file.name}")
    elif origin["digest"] != policy_file.digest and not lines:
        lines.append("~ file content: comments or layout changed, the settings did not")
    if not lines:
        result.unchanged.append(agent["id"])
        return
    result.changes.append(AgentChange(agent["id"], "changed", policy_file.name, tuple(lines)))
    result.writes.append(({**agent, "revision": revision}, False, file_origin))


def apply(db, planned):
    """Apply a plan in one transaction (store.agents.apply_policy): RevisionConflict, and nothing changed, when an
    agent was saved (or created, or deleted) since the plan was made."""
    agent_store.apply_policy(db, planned.writes, planned.removals, planned.releases)


# --- The diff ---------------------------------------------------------------------------------------------------


def _flatten(form):
    """{path: value} of an agent's form, one entry per field, per tool (TOOL_ENABLED), per tool setting, per
    argument rule or description and per script response, in the form's order."""
    flat = {}
    for key, value in form.items():
        if key in TOOL_MAPS:
            for name, settings in value.items():
                flat[f"{key}.{name}"] = TOOL_ENABLED
                for setting, setting_value in settings.items():
                    if isinstance(setting_value, dict):
                        for argument, entry in setting_value.items():
                            flat[f"{key}.{name}.{setting}.{argument}"] = entry
                    else:
                        flat[f"{key}.{name}.{setting}"] = setting_value
        elif key == "script":
            flat.update((f"script[{index}]", response) for index, response in enumerate(value))
        else:
            flat[key] = value
    return flat


def _tool_of(path):
    parts = path.split(".")
    return ".".join(parts[:2]) if parts[0] in TOOL_MAPS and len(parts) > 2 else None


def agent_differences(before, after):
    """The diff lines between two validated forms of one agent (`~ max_rounds: 10 → 6`, `+ tools.NAME`, …).
    A tool enabled shows its settings that differ from the defaults; a tool disabled, only its name."""
    old, new = _flatten(before), _flatten(after)
    enabled = {path for path in new if new[path] is TOOL_ENABLED and path not in old}
    disabled = {path for path in old if old[path] is TOOL_ENABLED and path not in new}
    paths = [*new, *(path for path in old if path not in new)]
    paths.sort(key=lambda path: FIELD_ORDER[path.split(".")[0].split("[")[0]])
    lines = []
    for path in paths:
        tool = _tool_of(path)
        if tool in disabled or (tool in enabled and not _differs_from_default(path, new[path])):
            continue
        if path not in old:
            lines.append(_line("+", path, None, new[path]))
        elif path not in new:
            lines.append(_line("-", path, old[path], None))
        elif old[path] != new[path] or type(old[path]) is not type(new[path]):
            lines.append(_line("~", path, old[path], new[path]))
    return list(_lines(lines))


def _differs_from_default(path, value):
    setting = path.split(".")[2]
    default = TOOL_SETTING_DEFAULTS.get(setting, AGENT_DEFAULTS.get(setting))
    return setting in ("argument_rules", "argument_descriptions") or value != default


def _shown(value):
    return json.dumps(value, ensure_ascii=False)


def _line(mark, path, old, new):
    """One change as a line, or for a text of several lines a header and its line diff (a list)."""
    if old is TOOL_ENABLED or new is TOOL_ENABLED:
        return f"{mark} {path}"
    texts = [value for value in (old, new) if isinstance(value, str)]
    if any("\n" in text for text in texts):
        before = old.splitlines() if isinstance(old, str) else []
        after = new.splitlines() if isinstance(new, str) else []
        body = [line for line in difflib.unified_diff(before, after, lineterm="", n=1)][2:]
        return [f"{mark} {path}:", *(f"    {line}" for line in body)]
    if mark == "+":
        return f"+ {path}: {_shown(new)}"
    if mark == "-":
        return f"- {path}: {_shown(old)}"
    return f"~ {path}: {_shown(old)} → {_shown(new)}"


def _lines(entries):
    for entry in entries:
        if isinstance(entry, list):
            yield from entry
        else:
            yield entry
