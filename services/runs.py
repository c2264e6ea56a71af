"""Execute a run and store it: the one path the run page, the runs API and the CLI share.

A run is stored when it starts (no stop reason yet) and again after every step, each time in its own short
transaction; the model is never asked inside one. Each step holds the run while it works (store/runs.py), so
two requests never step one run at once, whichever worker thread or process they reach: a step finds the run
held, or not running any more, and says so (RunConflict). `execute_and_store_run` is start, then step until the
run ends or waits for approval; the live run page takes one step per request instead.

A service that may wait on a model or a tool (a step, decisions whose round runs, a whole run) takes the database's
URL, not a connection, and holds none while it waits: each look-up and each write takes a connection of the pool
for itself alone and gives it back, as the policy proxy does (services/proxy.py), and so does each read of the
documents the run's tools make (store.documents.DocumentTable). On PostgreSQL the pool has a cap, and runs holding
their connections while their models answer would leave every other request of the process waiting for one. The
short services that never wait on the network (start, stop, resume) take the caller's connection.

The engine gets the agent and the provider connections from the store and the app's documents table. Bad input (an
unknown agent, an empty message, a bad override, script or decision) raises before anything is stored. No Flask
here: the caller passes the database and the options, so the CLI and the benchmarks use it outside a request.
"""

import secrets
import time
from contextlib import nullcontext

import engine
from engine.addresses import NOTHING_ALLOWED
from engine.approvals import PendingRound
from engine.config import SCRIPTED_PROVIDER, ValidationError
from engine.proxy.approvals import DecisionRefused, decide_held, is_held, stop_held
from engine.proxy.recording import PROXY_SOURCE
from engine.review import GATE_KEY, decided_gate_run, held_gate_run
from engine.types import AWAITING, FINISHED, INTERRUPTED, RUNNING
from services.approval_webhooks import ApprovalWebhook
from store import agents as agent_store
from store import log as log_store
from store import providers as provider_store
from store import runs as run_store
from store.db import pooled_db, write_transaction
from store.documents import DocumentTable

# How long past its model's timeout a step may take, and how long a run waits for its next step, before it
# reads "interrupted".
LEASE_SECONDS = 15.0
# What a stored run has that the engine's run does not: added when it is read.
READ_KEYS = ("id", "created_at", "started_at", "stop_requested")
# Stop on a held proxied run waits this long at most for a decision being written to let the run go.
STOP_ATTEMPTS, STOP_PAUSE_SECONDS = 20, 0.05


class RunConflict(Exception):
    """The run cannot do this now: it has ended, it does not wait for approval, it was interrupted, or another
    request is stepping it. The text is shown to people."""


def _from_pool(database_url):
    """A connection for each store call: one of the pool, given back as the call ends."""
    return lambda: pooled_db(database_url)


def _on(db):
    """Every store call on the caller's connection."""
    return lambda: nullcontext(db)


def _providers(db):
    return {provider["id"]: provider for provider in provider_store.list_providers(db)}


def _step_lease(run, providers, lease_seconds):
    """How long a step holds the run: its model's timeout, plus the lease."""
    connection = providers.get((run.get("agent") or {}).get("provider"))
    return (float(connection["timeout"]) if connection else 0.0) + lease_seconds


def _claim(db, run_id, claim, lease_until):
    if not run_store.claim_run(db, run_id, claim, lease_until):
        raise RunConflict(_why_not(run_store.get_run(db, run_id), claim))


def _why_not(run, claim):
    """Why the run cannot be held for `claim` (store.runs.CLAIMS)."""
    state = run.get("state", "finished")
    if state == FINISHED:
        return "The run has already ended."
    if claim == "decide" and state != AWAITING:
        return "The run is not awaiting approval: nothing waits for a decision."
    if claim in ("step", "resume") and state == AWAITING:
        return "The run is awaiting approval: decide on its waiting calls first."
    if claim == "step" and state == INTERRUPTED:
        return "The run was interrupted: Resume it to go on."
    if claim == "resume" and state == RUNNING:
        return "The run is not interrupted: it is running."
    return "Another request is taking this run's next step; try again in a moment."


def _engine_state(run, loop):
    return {"run": {key: value for key, value in run.items() if key not in READ_KEYS}, "loop": loop}


def _carried(stored, state):
    """The engine's next state, with what the store added to the run (repeated_from, say) kept."""
    extra = {key: value for key, value in stored.items() if key not in READ_KEYS and key not in state["run"]}
    return {**state, "run": {**state["run"], **extra}}


def _stopped_if_asked(state):
    def next_state(stop_requested):
        if stop_requested and state["run"]["state"] != "finished":
            return engine.stop_run(state)
        return state

    return next_state


def _held(connect, run_id, take_step, lease_seconds, hold=False):
    """`take_step(stored run, engine state) -> next state` on a run the caller holds, stored; the run let go unless
    `hold` (and it runs on), alive for `lease_seconds` more. `connect()` gives the connection of each store call
    (_from_pool, _on): no connection is held by this function while `take_step` works."""
    try:
        with connect() as db:
            stored, loop = run_store.step_input(db, run_id)
        state = _carried(stored, take_step(stored, _engine_state(stored, loop)))
    except BaseException:
        with connect() as db:
            run_store.let_go(db, run_id)
        raise
    logged = len(stored.get("log") or [])
    lease_until = time.time() + lease_seconds
    with connect() as db:
        return run_store.save_step(db, run_id, _stopped_if_asked(state), lease_until, logged, hold=hold)


def _advance(database_url, providers, options):
    def advance(stored, state):
        if stored["stop_requested"]:
            return engine.stop_run(state, registry=options.get("registry"))
        documents = DocumentTable(database_url)
        return engine.advance_run(state, providers=providers, documents=documents, **options)

    return advance


def start_stored_run(
    db,
    agent_id,
    message,
    overrides=None,
    *,
    source,
    registry=None,
    repeated_from=None,
    lease_seconds=LEASE_SECONDS,
):
    """Store a new run of the stored agent on `message` with `overrides`, before its first model request; returns
    its id. `source` says where it came from: "page", "api" or "cli" (store.runs.SOURCES). `repeated_from` is the id
    of the run this one repeats (Run again, Change and run again), kept with it so the two can be compared.

    Raises store.NotFound for an unknown agent and ValidationError naming the field for bad input; nothing is
    stored then."""
    agent = agent_store.get_agent(db, agent_id)
    provider = overrides.get("provider") if isinstance(overrides, dict) else None
    if isinstance(provider, str) and provider != SCRIPTED_PROVIDER and provider not in _providers(db):
        # The agent form and the agents API refuse such a provider: a run's overrides must too.
        raise ValidationError({"provider": f'no provider connection has the id "{provider}"'})
    state = engine.start_run(agent, message, overrides, registry=registry)
    run = {**state["run"], "source": source}
    if repeated_from is not None:
        run["repeated_from"] = repeated_from
    return run_store.insert_started_run(db, run, state["loop"], time.time() + lease_seconds)


def _claim_step(database_url, run_id, lease_seconds):
    """Hold the running run for a step; (the provider connections, how long a step holds it)."""
    with pooled_db(database_url) as db:
        providers = _providers(db)
        step_lease = _step_lease(run_store.get_run(db, run_id), providers, lease_seconds)
        _claim(db, run_id, "step", time.time() + step_lease)
    return providers, step_lease


def step_stored_run(database_url, run_id, *, lease_seconds=LEASE_SECONDS, **options):
    """One step of a running run: one model request and the round it brings, stored. A run whose Stop was pressed
    stops instead. `options` are engine.advance_run's (registry, environ, http_client, model). Raises NotFound,
    RunConflict, or ValidationError when the run can no longer go on (a tool it uses was removed, say). A provider
    failure is not an exception: the run ends with stop_reason "error"."""
    providers, _ = _claim_step(database_url, run_id, lease_seconds)
    return _held(_from_pool(database_url), run_id, _advance(database_url, providers, options), lease_seconds)


def continue_stored_run(database_url, run_id, *, lease_seconds=LEASE_SECONDS, **options):
    """Step the run until it ends or waits for approval, holding it all along (no other request takes a step of
    it meanwhile); returns it. Raises as step_stored_run."""
    providers, step_lease = _claim_step(database_url, run_id, lease_seconds)
    advance = _advance(database_url, providers, options)
    while True:
        run = _held(_from_pool(database_url), run_id, advance, step_lease, hold=True)
        if run["state"] != RUNNING:
            return run


def decide_stored_run(database_url, run_id, decisions, *, complete=True, registry=None, lease_seconds=LEASE_SECONDS):
    """Record a reviewer's decisions on the run's waiting round ({call id: decision}, engine.approvals); with the
    last one the round runs. Each decision records when it was taken: now. Returns the run, waiting or running on.
    Raises NotFound, RunConflict (the run does not wait for approval) or ValidationError naming the call."""

    def decide(_stored, state):
        now = time.time()
        if is_held(state["loop"]):  # a proxied response: its request, waiting, carries the decisions out
            return decide_held(state, decisions, complete=complete, now=now)
        documents = DocumentTable(database_url)
        return engine.decide_run(state, decisions, complete=complete, now=now, documents=documents, registry=registry)

    with pooled_db(database_url) as db:
        _claim(db, run_id, "decide", time.time() + lease_seconds)
    try:
        return _held(_from_pool(database_url), run_id, decide, lease_seconds)
    except DecisionRefused as error:
        raise RunConflict(str(error)) from None


def stop_stored_run(db, run_id, *, registry=None, lease_seconds=LEASE_SECONDS):
    """Stop the run after its current step: now, when no step holds it. Returns the run (still running when a step
    holds it: that step stops it as it ends). A proxied run whose response is held for approval ends at once
    (_stop_held). Raises NotFound, or RunConflict when it has already ended."""
    if is_held(run_store.held_state(db, run_id)[1]):
        if run_store.get_run(db, run_id).get("source") != PROXY_SOURCE:
            raise RunConflict("A gate API request waits for the decisions on this run's calls: approve or reject them.")
        return _stop_held(db, run_id, lease_seconds)
    if not run_store.request_stop(db, run_id):
        raise RunConflict(_why_not(run_store.get_run(db, run_id), "stop"))
    if not run_store.claim_run(db, run_id, "stop", time.time() + lease_seconds):
        return run_store.get_run(db, run_id)
    return _held(_on(db), run_id, lambda _stored, state: engine.stop_run(state, registry=registry), lease_seconds)


def _stop_held(db, run_id, lease_seconds):
    """End a proxied run held for approval: stop reason `stopped`, none of its held calls for the client
    (engine.proxy.approvals.stop_held). Its request, if one still waits, in this process or another, sees it at its
    next look at the run and answers its client with the stop. A decision being written holds the run for an
    instant: Stop waits for it; a request that is carrying the decisions out holds it until the run ends."""
    for _attempt in range(STOP_ATTEMPTS):
        if run_store.claim_run(db, run_id, "stop", time.time() + lease_seconds):
            return _held(_on(db), run_id, lambda _stored, state: stop_held(state), lease_seconds)
        time.sleep(STOP_PAUSE_SECONDS)
    raise RunConflict(_why_not(run_store.get_run(db, run_id), "stop"))


def resume_stored_run(db, run_id, *, lease_seconds=LEASE_SECONDS):
    """Take an interrupted run back, alive again for its next step; returns it. Raises NotFound or RunConflict."""
    _claim(db, run_id, "resume", time.time() + lease_seconds)
    run_store.let_go(db, run_id)
    return run_store.get_run(db, run_id)


def execute_and_store_run(
    database_url,
    agent_id,
    message,
    overrides=None,
    *,
    source,
    repeated_from=None,
    registry=None,
    lease_seconds=LEASE_SECONDS,
    **options,
):
    """Run the stored agent on `message` with `overrides` until it ends or waits for approval, storing it as it
    goes; returns the run with its `id`. Raises as start_stored_run; a provider failure is a stored run with
    stop_reason "error". `options` are step_stored_run's."""
    with pooled_db(database_url) as db:
        run_id = start_stored_run(
            db,
            agent_id,
            message,
            overrides,
            source=source,
            registry=registry,
            repeated_from=repeated_from,
            lease_seconds=lease_seconds,
        )
    return continue_stored_run(database_url, run_id, registry=registry, lease_seconds=lease_seconds, **options)


def repeat_and_store_run(database_url, run_id, **options):
    """Run again with a stored run's message and overrides, against the agent as it is stored now (from the run's
    page)."""
    with pooled_db(database_url) as db:
        previous = run_store.get_run(db, run_id)
    return execute_and_store_run(
        database_url,
        previous["agent_id"],
        previous["message"],
        previous["overrides"],
        source="page",
        repeated_from=run_id,
        **options,
    )


def review_and_log_gate(
    db,
    agent_id,
    tool_calls,
    overrides=None,
    calls_so_far=None,
    *,
    artifacts=None,
    registry=None,
    request_id=None,
    lease_seconds=LEASE_SECONDS,
    run_url="/runs/{run_id}",
    allowed_networks=NOTHING_ALLOWED,
):
    """The gate's verdict on one response of the stored agent, for clients that drive their own loop.

    Nothing executes. Its rejections are written to the log exactly as a run writes those of the same response,
    without a run. A response with calls that await approval is kept as a run awaiting approval (its `request_id`,
    made up when the caller sent none, and `run_id` are in the answer); the caller asks again with the same
    `request_id` and gets the same answer until each call is decided (or the agent's approval timeout has passed),
    then the decided one; the agent's approval webhook is told (services.approval_webhooks: `run_url`, a run's page
    with {run_id}; `allowed_networks`, what its address may be besides the rule's). Raises store.NotFound or
    ValidationError naming the field.
    """
    agent = agent_store.get_agent(db, agent_id)
    if request_id is not None:
        held = run_store.proxied_run_with_conversation(db, agent_id, GATE_KEY + request_id)
        if held is not None:
            return _gate_outcome(db, held, registry, lease_seconds)
    review = engine.review_tool_calls(
        agent, tool_calls, overrides, registry=registry, calls_so_far=calls_so_far, artifacts=artifacts
    )
    if "pending" in review:
        request_id = request_id or secrets.token_hex(12)
        run, loop_state = held_gate_run(
            agent, overrides, {**review, "request_id": request_id}, request_id, registry=registry, now=time.time()
        )
        saved = run_store.save_run(db, {**run, "source": "api"}, loop_state)
        ApprovalWebhook(saved["agent"]["approval_webhook"], run_url, allowed_networks).notify(saved)
        return {**saved["gate_answer"], "run_id": saved["id"]}
    if review["log"]:
        with write_transaction(db):
            log_store.add_entries(db, review["log"])
    return review


def _gate_outcome(db, run, registry, lease_seconds):
    """A held gate API request asked again: the answer it had while its calls wait, else the decided one (the run
    then ends, its calls the client's to run)."""
    if run.get("state") == AWAITING:
        _state, loop_state = run_store.held_state(db, run["id"])
        pending = PendingRound.from_state(loop_state["proxy"]["pending"])
        waiting = pending.undecided() and time.time() < loop_state["proxy"]["deadline"]
        if not waiting and run_store.claim_run(db, run["id"], "release", time.time() + lease_seconds):
            decided, log = decided_gate_run(run, loop_state, registry=registry)
            run = run_store.continue_run(db, run["id"], decided, run["conversation"]["key"], log) or run
    return {**run["gate_answer"], "run_id": run["id"]}
