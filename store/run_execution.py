"""Execute a run and store it: the one path the run page, the runs API and the CLI share.

Load the agent and the provider connections from the store, hand the engine the app's documents table (on the
same connection), call `engine.run_agent`, then save the run and its log entries in one transaction. Bad input
(an unknown agent, an empty message, a bad override or script) raises before anything is stored. No Flask here:
the caller passes the database and the options, so the CLI and the benchmarks use it outside a request.
"""

import engine
from engine.config import SCRIPTED_PROVIDER, ValidationError

from . import agents as agent_store
from . import log as log_store
from . import providers as provider_store
from . import runs as run_store
from .db import write_transaction
from .documents import DocumentTable


def execute_and_store_run(
    db,
    agent_id,
    message,
    overrides=None,
    *,
    registry=None,
    environ=None,
    transport=None,
    model=None,
    repeated_from=None,
):
    """Run the stored agent on `message` with `overrides`, store the run and return it with its `id`.
    `repeated_from` is the id of the run this one repeats (Run again, Change and run again), kept with it so the
    two can be compared.

    Raises store.NotFound for an unknown agent and ValidationError naming the field for bad input; nothing is
    stored then. A provider failure is not an exception: it is a stored run with stop_reason "error".
    """
    agent = agent_store.get_agent(db, agent_id)
    providers = {provider["id"]: provider for provider in provider_store.list_providers(db)}
    provider = overrides.get("provider") if isinstance(overrides, dict) else None
    if isinstance(provider, str) and provider != SCRIPTED_PROVIDER and provider not in providers:
        # The agent form and the agents API refuse such a provider: a run's overrides must too.
        raise ValidationError({"provider": f'no provider connection has the id "{provider}"'})
    run = engine.run_agent(
        agent,
        message,
        overrides,
        providers=providers,
        documents=DocumentTable(db),
        registry=registry,
        environ=environ,
        transport=transport,
        model=model,
    )
    if repeated_from is not None:
        run = {**run, "repeated_from": repeated_from}
    return run_store.save_run(db, run)


def repeat_and_store_run(db, run_id, **options):
    """Run again with a stored run's message and overrides, against the agent as it is stored now."""
    previous = run_store.get_run(db, run_id)
    return execute_and_store_run(
        db, previous["agent_id"], previous["message"], previous["overrides"], repeated_from=run_id, **options
    )


def review_and_log_gate(db, agent_id, tool_calls, overrides=None, calls_so_far=None, *, artifacts=None, registry=None):
    """The gate's verdict on one response of the stored agent, for clients that drive their own loop.

    Nothing executes. A restricted tool called more than once is a policy violation like in a run: it is
    written to the log (without a run). Raises store.NotFound or ValidationError naming the field.
    """
    agent = agent_store.get_agent(db, agent_id)
    review = engine.review_tool_calls(
        agent, tool_calls, overrides, registry=registry, calls_so_far=calls_so_far, artifacts=artifacts
    )
    if review["log"]:
        with write_transaction(db):
            log_store.add_entries(db, review["log"])
    return review
