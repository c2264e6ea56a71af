"""Command-line interface: `flask --app app COMMAND`. The commands use the same store functions, and so the
same validation, as the pages and the API."""

import json

import click
from flask import current_app
from flask.cli import with_appcontext

import demo
import migrations
from blueprints import tool_registry
from db import get_db
from engine.config import AgentValidationError
from store import NotFound, RevisionConflict
from store import agents as agent_store


@click.command("init-db")
@with_appcontext
def init_db_command():
    """Create the database, or upgrade it to the current schema."""
    applied = migrations.migrate(get_db())
    path = current_app.config["DATABASE"]
    if applied:
        click.echo(f"Applied {', '.join(applied)} to {path}.")
    else:
        click.echo(f"The database at {path} is up to date.")


@click.command("load-demo")
@with_appcontext
@click.option("--replace", is_flag=True, help="Overwrite demo agents and documents that already exist.")
def load_demo_command(replace):
    """Load the demo agents (one per tool family) and the sample documents."""
    loaded = demo.load_demo(get_db(), tool_registry().names(), replace=replace)
    agents = ", ".join(loaded["agents"]) or "none new"
    click.echo(f"Demo agents: {agents}; sample documents: {len(loaded['documents'])} loaded.")
    if not replace and loaded["skipped_agents"]:
        click.echo(f"Kept as they are: {', '.join(loaded['skipped_agents'])} (use --replace to reset them).")


@click.command("export-agent")
@with_appcontext
@click.argument("agent_id")
def export_agent_command(agent_id):
    """Print an agent as JSON."""
    try:
        agent = agent_store.get_agent(get_db(), agent_id)
    except NotFound as error:
        raise click.ClickException(str(error)) from None
    click.echo(json.dumps(agent, indent=2, ensure_ascii=False))


@click.command("import-agent")
@with_appcontext
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--replace", is_flag=True, help="Replace an existing agent whatever revision the file carries.")
def import_agent_command(file, replace):
    """Create or replace an agent from a JSON file ("-" reads standard input). A bad file changes nothing."""
    try:
        data = json.load(file)
    except json.JSONDecodeError as error:
        raise click.ClickException(f"{file.name} is not valid JSON: {error}") from None
    db = get_db()
    if replace and isinstance(data, dict) and isinstance(data.get("id"), str):
        try:
            data["revision"] = agent_store.get_agent(db, data["id"])["revision"]
        except NotFound:
            pass
    try:
        agent = agent_store.save_agent(db, data, tool_registry().names())
    except AgentValidationError as error:
        details = "\n".join(f"  {field}: {message}" for field, message in error.errors.items())
        raise click.ClickException(f"{file.name} is not a valid agent; nothing was imported:\n{details}") from None
    except RevisionConflict as conflict:
        raise click.ClickException(f"{conflict} Use --replace to overwrite it.") from None
    click.echo(f'Imported the agent "{agent["id"]}" (revision {agent["revision"]}).')


def register(app):
    for command in (init_db_command, load_demo_command, export_agent_command, import_agent_command):
        app.cli.add_command(command)
