"""Agents: the engine's JSON form in and out, stored as an `agents` row plus one `agent_tools` row per enabled
tool. Every save goes through `save_agent`, which validates with engine.config (the one validation path shared
by the pages, the API and the CLI), checks the revision, and writes in one transaction."""

import json
from functools import lru_cache

from sqlalchemy.exc import IntegrityError

from engine.addresses import NOTHING_ALLOWED, url_problem
from engine.config import AGENT_DEFAULTS, SCRIPTED_PROVIDER, ValidationError, load_agent, validate_agent, with_defaults

from . import ManagedByFile, NotFound, RevisionConflict, execute, insert_row, now, row_exists, select_rows
from .db import write_transaction

KEPT_OUT_OF_DATA = ("id", "revision", "tools")
RESERVED_IDS = ("new", "export", "import")  # /agents/new is the create page; the others, Export and Import
REVISION_MAX = 2**63 - 1  # the largest integer SQLite stores


def _agent_from_rows(row, tool_rows):
    data = json.loads(row["data"])
    data["id"] = row["id"]
    data["revision"] = row["revision"]
    data["tools"] = {tool["tool_name"]: json.loads(tool["settings"]) for tool in tool_rows}
    agent = with_defaults(data)
    return {"id": agent["id"], **{key: agent[key] for key in AGENT_DEFAULTS}}


def _stored_rows(db, agent_id):
    """(the agents row, its agent_tools rows in order): one statement, a round trip on PostgreSQL. Raises NotFound."""
    rows = select_rows(
        db,
        "SELECT agents.id, agents.revision, agents.data, agent_tools.tool_name, agent_tools.settings FROM agents "
        "LEFT JOIN agent_tools ON agent_tools.agent_id = agents.id WHERE agents.id = :id ORDER BY agent_tools.position",
        {"id": agent_id},
    )
    if not rows:
        raise NotFound(f'No agent with id "{agent_id}".')
    return rows[0], [row for row in rows if row["tool_name"] is not None]


def get_agent(db, agent_id):
    """The stored agent's JSON form, every default filled in. Raises NotFound."""
    return _agent_from_rows(*_stored_rows(db, agent_id))


def get_agent_config(db, agent_id, registry):
    """(the frozen AgentConfig, the agent's JSON form) of the stored agent, validated against the registry's tools,
    as engine.config.load_agent gives them. Validated once per version of the agent's rows: the key is the rows'
    content, so an edit, by another process too, is seen at once. The config is frozen and shared; each caller gets
    a JSON form of its own (a run keeps it as its snapshot). Raises NotFound."""
    row, tool_rows = _stored_rows(db, agent_id)
    tools = tuple((tool["tool_name"], tool["settings"]) for tool in tool_rows)
    config, agent_json = _loaded_agent(registry, row["id"], row["revision"], row["data"], tools)
    return config, json.loads(agent_json)


@lru_cache(maxsize=64)
def _loaded_agent(registry, agent_id, revision, data, tools):
    """(the AgentConfig, the JSON form as text): text, so no thread is handed a dict another one holds."""
    row = {"id": agent_id, "revision": revision, "data": data}
    tool_rows = [{"tool_name": name, "settings": settings} for name, settings in tools]
    config, agent = load_agent(_agent_from_rows(row, tool_rows), known_tools=registry.parameters_by_name())
    return config, json.dumps(agent)


def list_agents(db):
    """Every agent, ordered by label."""
    tools = {}
    for tool in select_rows(db, "SELECT * FROM agent_tools ORDER BY agent_id, position"):
        tools.setdefault(tool["agent_id"], []).append(tool)
    return [
        _agent_from_rows(row, tools.get(row["id"], []))
        for row in select_rows(db, "SELECT * FROM agents ORDER BY lower(label), id")
    ]


def agent_exists(db, agent_id):
    return row_exists(db, "agents", agent_id)


def agents_using_provider(db, provider_id):
    rows = select_rows(db, "SELECT id, data FROM agents ORDER BY id")
    return [row["id"] for row in rows if json.loads(row["data"]).get("provider") == provider_id]


def validate(db, data, known_tools, allowed_networks=NOTHING_ALLOWED):
    """engine.config.validate_agent, plus what only storage knows: the provider connection must exist; and the
    approval webhook must pass the address rule (engine.addresses, with what the operator allows in
    `allowed_networks`), as a provider connection's URL does. Returns the agent with defaults filled in; raises
    ValidationError."""
    errors = {}
    try:
        agent = validate_agent(data, known_tools)
    except ValidationError as error:
        errors = error.errors
        agent = None
    if isinstance(data, dict) and data.get("id") in RESERVED_IDS and "id" not in errors:
        errors["id"] = f'"{data["id"]}" is reserved; choose another id'
    if agent is not None and agent["revision"] > REVISION_MAX:
        errors["revision"] = f"must be a whole number from 1 to {REVISION_MAX}"
    provider = data.get("provider", SCRIPTED_PROVIDER) if isinstance(data, dict) else None
    if "provider" not in errors and isinstance(provider, str) and provider != SCRIPTED_PROVIDER:
        if not row_exists(db, "providers", provider):
            errors["provider"] = f'no provider connection has the id "{provider}"'
    if agent is not None and agent["approval_webhook"]:
        if problem := url_problem(agent["approval_webhook"], allowed_networks):
            errors["approval_webhook"] = problem
    if errors:
        raise ValidationError(errors)
    return agent


def _write_tools(db, agent):
    execute(db, "DELETE FROM agent_tools WHERE agent_id = :agent_id", {"agent_id": agent["id"]})
    rows = [
        {"agent_id": agent["id"], "tool_name": name, "position": position, "settings": json.dumps(settings)}
        for position, (name, settings) in enumerate(agent["tools"].items())
    ]
    if rows:
        execute(
            db,
            "INSERT INTO agent_tools (agent_id, tool_name, position, settings) "
            "VALUES (:agent_id, :tool_name, :position, :settings)",
            rows,
        )


def save_agent(db, data, known_tools, create=None, allowed_networks=NOTHING_ALLOWED):
    """Validate and store an agent, in one transaction; returns the stored agent.

    create=None creates or replaces (the API's PUT), True only creates (an id in use is a validation error on
    `id`), False only replaces (NotFound if the agent is gone). Replacing requires `revision` to equal the
    stored one (RevisionConflict otherwise) and increments it; a new agent starts at revision 1. An agent a policy
    file manages is not replaced (ManagedByFile): `apply_policy` is its one writer.
    """
    agent = validate(db, data, known_tools, allowed_networks)
    with write_transaction(db):
        _write_agent(db, agent, create)
    return get_agent(db, agent["id"])


def _write_agent(db, agent, create, origin=None):
    """save_agent's write of a validated agent, inside the caller's transaction. `origin`: None for a save from
    the pages, the API or the CLI, refused on a managed agent; (path, digest) for a policy file's, recorded."""
    stored_data = json.dumps({key: value for key, value in agent.items() if key not in KEPT_OUT_OF_DATA})
    timestamp = now()
    origin_path, origin_digest = origin or (None, None)
    updated = False
    if create is not True:
        # Compare-and-swap on the revision (and, for a save from the pages, on the agent being theirs), under the
        # write lock: no other save can slip in between the check and the write.
        origin_sql = ", origin_path = :origin_path, origin_digest = :origin_digest" if origin else ""
        only_unmanaged = "" if origin else " AND origin_path IS NULL"
        cursor = execute(
            db,
            f"UPDATE agents SET label = :label, data = :data, revision = revision + 1, updated_at = :updated_at"
            f"{origin_sql} WHERE id = :id AND revision = :revision{only_unmanaged}",
            {
                "label": agent["label"],
                "data": stored_data,
                "updated_at": timestamp,
                "origin_path": origin_path,
                "origin_digest": origin_digest,
                "id": agent["id"],
                "revision": agent["revision"],
            },
        )
        updated = cursor.rowcount == 1
    if not updated:
        current = select_rows(db, "SELECT revision, origin_path FROM agents WHERE id = :id", {"id": agent["id"]})
        if current and create is True:
            raise ValidationError({"id": f'is already used by another agent ("{agent["id"]}")'})
        if current and current[0]["origin_path"] is not None and origin is None:
            raise ManagedByFile(agent["id"], current[0]["origin_path"])
        if current:
            raise RevisionConflict(agent["id"], current[0]["revision"], agent["revision"])
        if create is False:
            raise NotFound(f'No agent with id "{agent["id"]}".')
        try:
            insert_row(
                db,
                "agents",
                {
                    "id": agent["id"],
                    "label": agent["label"],
                    "data": stored_data,
                    "revision": 1,
                    "created_at": timestamp,
                    "updated_at": timestamp,
                    "origin_path": origin_path,
                    "origin_digest": origin_digest,
                },
            )
        except IntegrityError:  # created by someone else since the check above
            raise ValidationError({"id": f'is already used by another agent ("{agent["id"]}")'}) from None
    _write_tools(db, agent)


def origins(db):
    """{agent id: {"path", "digest"}} of the agents policy files manage."""
    rows = select_rows(db, "SELECT id, origin_path, origin_digest FROM agents WHERE origin_path IS NOT NULL")
    return {row["id"]: {"path": row["origin_path"], "digest": row["origin_digest"]} for row in rows}


def origin(db, agent_id):
    """{"path", "digest"} of the policy file that manages the agent, or None when the pages do."""
    rows = select_rows(db, "SELECT origin_path, origin_digest FROM agents WHERE id = :id", {"id": agent_id})
    if not rows or rows[0]["origin_path"] is None:
        return None
    return {"path": rows[0]["origin_path"], "digest": rows[0]["origin_digest"]}


def apply_policy(db, writes, removals, releases):
    """What `flask apply` decided, in one transaction: `writes` [(validated agent, create, (path, digest))], each
    a compare-and-swap on the agent's `revision` as it was read; `removals` [(agent id, revision)];
    `releases` [agent id], handed back to the pages. Raises RevisionConflict (or, for an agent created meanwhile,
    ValidationError on `id`, or NotFound for one deleted) and then nothing is changed."""
    with write_transaction(db):
        for agent, create, file_origin in writes:
            _write_agent(db, agent, create, file_origin)
        for agent_id, revision in removals:
            _delete(db, agent_id, revision)
        for agent_id in releases:
            execute(db, "UPDATE agents SET origin_path = NULL, origin_digest = NULL WHERE id = :id", {"id": agent_id})


def delete_agent(db, agent_id, revision=None):
    """Delete an agent and its tool rows. With `revision`, refuse (RevisionConflict) if it is not current; an
    agent a policy file manages is refused (ManagedByFile): `flask apply --prune` removes it with its file."""
    with write_transaction(db):
        _delete(db, agent_id, revision, unmanaged_only=True)


def _delete(db, agent_id, revision, unmanaged_only=False):
    current = select_rows(db, "SELECT revision, origin_path FROM agents WHERE id = :id", {"id": agent_id})
    if not current:
        raise NotFound(f'No agent with id "{agent_id}".')
    if unmanaged_only and current[0]["origin_path"] is not None:
        raise ManagedByFile(agent_id, current[0]["origin_path"])
    if revision is not None and revision != current[0]["revision"]:
        raise RevisionConflict(agent_id, current[0]["revision"], revision)
    for table in ("agent_tools", "agent_tool_hints"):
        execute(db, f"DELETE FROM {table} WHERE agent_id = :agent_id", {"agent_id": agent_id})
    execute(db, "DELETE FROM agents WHERE id = :id", {"id": agent_id})
