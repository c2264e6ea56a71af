"""Answer a request to an agent's policy proxy and record it as a run, in the app's database (SPEC §8).

Load the agent and its provider connection, read the client's body, then engine.proxy.serve: the one sequence that
finds the run the conversation continues, answers under the agent's policy and records the run — here into the
runs table. Bad input (an unknown agent, a body the proxy cannot forward) raises before anything is sent or stored.
No Flask here.
"""

import threading
from contextlib import ExitStack, contextmanager

from engine.config import SCRIPTED_PROVIDER
from engine.proxy import chat_completions
from engine.proxy.serve import StreamedAnswer
from engine.proxy.serve import answer_and_record as serve
from engine.proxy.upstream import upstream_for_agent
from engine.round import log_entry, write_log
from engine.tools import default_registry
from store import NotFound
from store import agents as agent_store
from store import log as log_store
from store import providers as provider_store
from store import responses as response_store
from store import runs as run_store
from store.db import pooled_db, write_transaction

REFUSED = "proxy_refused"  # the log's kind for a request the proxy could not serve
# How many proxied requests of a process do their own work at once (the agent read, the checks, the gate, the run
# recorded); the others wait for a turn without taking the CPU, and a request waiting for its model holds no turn.
# Under gevent (`make run`) every request that is ready runs in turn, so without turns a page asked during a burst
# of a thousand proxied requests waited for all of their work first (bench.gateway: GET /agents, p95).
TURNS = 32
_turns = threading.BoundedSemaphore(TURNS)


@contextmanager
def _without_turn():
    """Inside a turn, a wait that takes no CPU of this process: the turn is someone else's meanwhile."""
    _turns.release()
    try:
        yield
    finally:
        _turns.acquire()


class _WithoutTurn:
    """The upstream, asked without holding a turn: its answer takes the model's time, not this process's."""

    def __init__(self, upstream):
        self.upstream = upstream

    def __call__(self, body):
        with _without_turn():
            return self.upstream(body)


class StoredRuns:
    """The agent's proxied runs in the database, as engine.proxy.serve keeps runs."""

    def __init__(self, db, agent_id):
        self.db = db
        self.agent_id = agent_id

    def find(self, conversation_key):
        return run_store.proxied_run_with_conversation(self.db, self.agent_id, conversation_key)

    def save(self, run):
        return run_store.save_run(self.db, run)

    def continue_run(self, run_id, run, conversation_key, new_log):
        return run_store.continue_run(self.db, run_id, run, conversation_key, new_log)


class _StoredWithoutTurn(StoredRuns):
    """Runs recorded without holding a turn: the runs answered at the same moment are committed together
    (store.db.write_together), and a group held to the requests that have a turn would commit far more often."""

    def save(self, run):
        with _without_turn():
            return super().save(run)

    def continue_run(self, run_id, run, conversation_key, new_log):
        with _without_turn():
            return super().continue_run(run_id, run, conversation_key, new_log)


def answer_and_record(
    db, agent_id, body, api=chat_completions, *, registry=None, environ=None, transport=None, creator=None
):
    """(the ProxyRequest read from `body` in the client's `api` — a module of engine.proxy —, the
    engine.proxy.core.Exchange, the stored run). Raises store.NotFound for an unknown agent, ValidationError naming
    the field of a bad body, engine.proxy.responses.NotStored for a reference to a response not kept (by `creator`,
    the request's credential, with the login on); a failed upstream request is a stored run with stop_reason
    "error" and the Exchange's `error`."""
    with _turns:
        config, merged, request, upstream = _prepared(db, agent_id, body, api, registry, environ, transport, creator)
        exchange, run = serve(config, merged, request, _WithoutTurn(upstream), _StoredWithoutTurn(db, agent_id))
        keep_answer(db, agent_id, api, request, exchange, run, creator)
    return request, exchange, run


def stream_and_record(
    database_path, agent_id, body, api=chat_completions, *, registry=None, environ=None, transport=None, creator=None
):
    """(the ProxyRequest, the engine.proxy.serve.StreamedAnswer, the answer's pieces as the upstream writes them).
    The pieces hold a connection of their own until the stream ends, however it ends, and the run is recorded (and
    the answer kept, for the Responses API) then: the stream outlives the request that started it. Raises as
    answer_and_record before anything is sent."""
    held = ExitStack()
    db = held.enter_context(pooled_db(database_path))
    try:
        config, merged, request, upstream = _prepared(db, agent_id, body, api, registry, environ, transport, creator)
        streamed = StreamedAnswer(config, merged, request, upstream, StoredRuns(db, agent_id))
    except BaseException:
        held.close()
        raise

    def pieces():
        with held:
            try:
                yield from streamed.pieces()
            finally:
                keep_answer(db, agent_id, api, request, streamed.live.exchange, streamed.run, creator)

    return request, streamed, pieces()


def _prepared(db, agent_id, body, api, registry, environ, transport, creator):
    config, merged = agent_store.get_agent_config(db, agent_id, registry or default_registry())
    request = api.read(body, lambda response_id: response_store.find_response(db, agent_id, response_id, creator))
    upstream = upstream_for_agent(config, request.model, _connection_of(db, config.provider), environ, transport)
    return config, merged, request, upstream


def keep_answer(db, agent_id, api, request, exchange, run, creator=None):
    """Keep what the client's API refers back to of the answer (a Responses API response), with the run it joined
    and the credential that asked (`creator`, None with the login off)."""
    kept = api.kept(exchange, request)
    if kept is not None:
        response_store.save_response(db, agent_id, run["id"], kept, creator)


def kept_response(db, agent_id, response_id, creator=None):
    """A response the agent's proxy kept, as its client got it. Raises store.NotFound for an unknown agent or
    response, or one another credential created (with the login on, `creator` is the request's)."""
    agent_store.get_agent(db, agent_id)
    return response_store.get_response(db, agent_id, response_id, creator)


def _connection_of(db, provider_id):
    """{id: connection} of the one connection the agent names; empty for the scripted model, or when the
    connection is gone (the upstream then says so)."""
    if provider_id == SCRIPTED_PROVIDER:
        return {}
    try:
        return {provider_id: provider_store.get_provider(db, provider_id)}
    except NotFound:
        return {}


def log_refusal(db, agent_id, method, path, status, reason):
    """A request the proxy could not serve (an unknown path or agent, a body it cannot read) in the log, with the
    agent it named, the path and why: no run records it, and the client alone would know otherwise."""
    entries = []
    write_log(
        [log_entry("warning", REFUSED, agent_id, f"{method} {path} was refused with HTTP {status}: {reason}")], entries
    )
    with write_transaction(db):
        log_store.add_entries(db, entries)
