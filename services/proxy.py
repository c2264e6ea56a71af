"""Answer a request to an agent's policy proxy and record it as a run, in the app's database (SPEC §8).

Load the agent and its provider connection, read the client's body, then engine.proxy.serve: the one sequence that
finds the run the conversation continues, answers under the agent's policy and records the run — here into the
runs table, where a response held for approval waits in its run's row, and the agent's approval webhook is told
(services.approval_webhooks). Bad input (an unknown agent, a body the proxy cannot forward) raises before anything
is sent or stored. No Flask here.
"""

import json
import threading
import time
from contextlib import contextmanager

from engine.addresses import NOTHING_ALLOWED
from engine.config import SCRIPTED_PROVIDER, ValidationError
from engine.proxy import chat_completions
from engine.proxy.responses import NotStored
from engine.proxy.serve import KEEP_ALIVE_SECONDS, StreamedAnswer
from engine.proxy.serve import answer_and_record as serve
from engine.proxy.upstream import upstream_for_agent
from engine.round import log_entry, write_log
from engine.tools import default_registry
from services.approval_webhooks import ApprovalWebhook
from services.runs import LEASE_SECONDS
from store import NotFound, settings_generation
from store import agents as agent_store
from store import log as log_store
from store import providers as provider_store
from store import responses as response_store
from store import runs as run_store
from store import tool_servers as tool_server_store
from store.db import pooled_db, write_transaction

REFUSED = "proxy_refused"  # the log's kind for a request the proxy could not serve
# How many proxied requests of a process do their own work at once (the token check, the agent read, the checks, the
# gate, the run recorded); the others wait for a turn without taking the CPU or a database connection, and a
# request waiting for its model, or for a decision, holds no turn. Under gevent (`make run`) every request that is
# ready runs in turn, so without turns a page asked during a burst of a thousand proxied requests waited for all of
# their work first, and on PostgreSQL for a connection behind all of theirs (bench.gateway: GET /agents, p95).
# A request takes its turn before anything of it runs (blueprints.proxy.TakingTurns).
TURNS = 32
_turns = threading.BoundedSemaphore(TURNS)
_under_way = [0]  # proxied requests of this process from their arrival to their answer's last byte
_under_way_lock = threading.Lock()


@contextmanager
def turn():
    """One of the process's turns, for the whole of a proxied request's own work."""
    with _turns:
        yield


@contextmanager
def without_turn():
    """Inside a turn, a wait that takes no CPU of this process: the turn is someone else's meanwhile."""
    _turns.release()
    try:
        yield
    finally:
        _turns.acquire()


def count_under_way(change):
    """A proxied request arrived (+1), or its answer ended (-1), a stream's when its last byte was written."""
    with _under_way_lock:
        _under_way[0] += change


def under_way():
    """How many proxied requests of this process are under way (count_under_way)."""
    return _under_way[0]


def _others_under_way():
    """Whether other proxied requests of this process are under way, and may record their runs in a moment: then a
    run is recorded in a group commit that gathers theirs (store.db.GATHER_SECONDS); alone, at once. Fifty streams
    ending together were otherwise recorded one after the other, each before the next could pass its last words on."""
    return under_way() > 1


class _WithoutTurn:
    """The upstream, asked without holding a turn: its answer takes the model's time, not this process's."""

    def __init__(self, upstream):
        self.upstream = upstream

    def __call__(self, body):
        with without_turn():
            return self.upstream(body)


class SettingsChanged(Exception):
    """The settings' generation a request went on under (the one its process saw last: store.settings_generation) is
    not the current one, as its look-up found before its model was asked: nothing was sent or stored, and the request
    goes round again under `generation`, its token checked again (blueprints.proxy)."""

    def __init__(self, generation):
        super().__init__(f"The settings changed (generation {generation}).")
        self.generation = generation


class StoredRuns:
    """The agent's proxied runs in the database, as engine.proxy.serve keeps runs; a response held for approval waits
    in its run's row (its state and loop state), so a decision taken by any process releases it. Each look-up and
    each write takes a connection of the pool for itself alone and gives it back: a proxied request spends most of
    its time waiting, for its model or for a decision, and holds no connection meanwhile (on PostgreSQL, a thousand
    requests in flight would otherwise hold a thousand server connections). A run is recorded with none at all: it
    is handed in to the group commit by the database's URL, and only the request that commits the group takes one
    (store.db.write_many_together), so the runs answered at one moment are committed together however few
    connections the pool has."""

    def __init__(self, database_url, agent_id, webhook=None, lease_seconds=LEASE_SECONDS, unconfirmed=None):
        self.database_url = database_url
        self.agent_id = agent_id
        self.webhook = webhook  # the agent's ApprovalWebhook, told when a call starts waiting
        self.lease_seconds = lease_seconds
        self.unconfirmed = unconfirmed  # the settings' generation the request went on under, for its look-up to confirm

    def find(self, conversation_key):
        return self.find_each([conversation_key])[conversation_key]

    def find_each(self, conversation_keys):
        """The runs with these keys; the first look-up raises SettingsChanged when the settings' generation it reads
        with them is not the one the request went on under (engine.proxy.serve looks up before anything else)."""
        with pooled_db(self.database_url) as db:
            found, generation = run_store.proxied_runs_and_generation(db, self.agent_id, conversation_keys)
        expected, self.unconfirmed = self.unconfirmed, None
        if expected is not None and generation != expected:
            raise SettingsChanged(generation)
        return found

    def save(self, run):
        return run_store.save_run(self.database_url, run, gather=_others_under_way())

    def continue_run(self, run_id, run, conversation_key, new_log):
        return run_store.continue_run(
            self.database_url, run_id, run, conversation_key, new_log, gather=_others_under_way()
        )

    def hold(self, replaces, run, loop_state, new_log):
        run_id, conversation_key = replaces or (None, None)
        saved = run_store.hold_proxied_run(
            self.database_url, run_id, run, conversation_key, loop_state, new_log, gather=_others_under_way()
        )
        if self.webhook is not None:
            self.webhook.notify(saved)
        return saved

    def held(self, run_id):
        with pooled_db(self.database_url) as db:
            return run_store.held_state(db, run_id)

    def take(self, run_id, claim):
        with pooled_db(self.database_url) as db:
            return run_store.claim_run(db, run_id, claim, time.time() + self.lease_seconds)

    def put_loop(self, run_id, loop_state):
        with pooled_db(self.database_url) as db:
            run_store.save_loop_state(db, run_id, loop_state)

    def let_go(self, run_id):
        with pooled_db(self.database_url) as db:
            run_store.let_go(db, run_id)

    def pause(self, seconds):
        """How a held request waits between two looks at its run."""
        time.sleep(seconds)


class _StoredWithoutTurn(StoredRuns):
    """Runs recorded, and decisions waited for, without holding a turn: the runs answered at the same moment are
    committed together (store.db.write_together), and a group held to the requests that have a turn would commit far
    more often; a request waiting for a person takes no CPU."""

    def save(self, run):
        with without_turn():
            return super().save(run)

    def continue_run(self, run_id, run, conversation_key, new_log):
        with without_turn():
            return super().continue_run(run_id, run, conversation_key, new_log)

    def hold(self, replaces, run, loop_state, new_log):
        with without_turn():
            return super().hold(replaces, run, loop_state, new_log)

    def pause(self, seconds):
        with without_turn():
            super().pause(seconds)


def answer_and_record(
    database_url,
    agent_id,
    body,
    api=chat_completions,
    *,
    registry=None,
    tool_secrets=None,
    settings_generation=None,
    generation_confirmed=False,
    environ=None,
    transport=None,
    creator=None,
    run_url="/runs/{run_id}",
    allowed_networks=NOTHING_ALLOWED,
):
    """(the ProxyRequest read from `body` in the client's `api` — a module of engine.proxy —, the
    engine.proxy.core.Exchange, the stored run). Raises store.NotFound for an unknown agent, ValidationError naming the
    field of a bad body, engine.proxy.responses.NotStored for a reference to a response not kept (by `creator`, the
    request's credential, with the login on); a failed upstream request is a stored run with stop_reason "error" and the
    Exchange's `error`. `settings_generation`: the settings' generation the request's token was checked under, read for
    it (`generation_confirmed`) or the one its process saw last; None with the login off, when the request goes on under
    the one its process saw last. Raises SettingsChanged, before anything is sent or stored, when its look-up finds that
    one is not current. A response held for approval tells the agent's webhook (`run_url`: a run's page, with {run_id};
    `allowed_networks`: what the address rule allows besides its own). No connection is held while the model answers or
    a decision is awaited (StoredRuns). Called inside the request's turn (`turn()`), which it gives back while it
    waits."""
    webhooks = (run_url, allowed_networks)
    tools = (registry or default_registry(), tool_secrets)
    generation = (settings_generation, generation_confirmed)
    config, merged, request, upstream, webhook, unconfirmed = _prepared(
        database_url, agent_id, body, api, tools, generation, environ, transport, creator, webhooks
    )
    runs = _StoredWithoutTurn(database_url, agent_id, webhook, unconfirmed=unconfirmed)
    exchange, run = serve(config, merged, request, _WithoutTurn(upstream), runs)
    keep_answer(database_url, agent_id, api, request, exchange, run, creator)
    return request, exchange, run


def stream_and_record(
    database_url,
    agent_id,
    body,
    api=chat_completions,
    *,
    registry=None,
    tool_secrets=None,
    settings_generation=None,
    generation_confirmed=False,
    environ=None,
    transport=None,
    creator=None,
    keep_alive_seconds=KEEP_ALIVE_SECONDS,
    run_url="/runs/{run_id}",
    allowed_networks=NOTHING_ALLOWED,
):
    """(the ProxyRequest, the engine.proxy.serve.StreamedAnswer, the answer's pieces as the upstream writes them).
    The run is recorded (and the answer kept, for the Responses API) when the stream ends, however it ends: the
    stream outlives the request that started it. Raises as answer_and_record before anything is sent."""
    webhooks = (run_url, allowed_networks)
    tools = (registry or default_registry(), tool_secrets)
    generation = (settings_generation, generation_confirmed)
    config, merged, request, upstream, webhook, unconfirmed = _prepared(
        database_url, agent_id, body, api, tools, generation, environ, transport, creator, webhooks
    )
    # Its reads and checks are done in the request's turn; what it streams is not (a slow client would hold a turn
    # while it reads): the turn is given back before the upstream is asked (blueprints.proxy).
    runs = StoredRuns(database_url, agent_id, webhook, unconfirmed=unconfirmed)
    streamed = StreamedAnswer(config, merged, request, upstream, runs, keep_alive_seconds)

    def pieces():
        try:
            yield from streamed.pieces()
        finally:
            keep_answer(database_url, agent_id, api, request, streamed.live.exchange, streamed.run, creator)

    return request, streamed, pieces()


def _prepared(database_url, agent_id, body, api, tools, generation, environ, transport, creator, webhooks):
    """What serving the request needs, read under the settings' `generation` — (the number or None, whether it was
    read for this request) —, and that number when the request's look-up must confirm it, else None."""
    with pooled_db(database_url) as db:
        number, confirmed = generation if generation[0] is not None else settings_generation.to_go_on_under(db)
        try:
            settings = _agent_settings(db, database_url, agent_id, tools, number)
            request = api.read(
                body, lambda response_id: response_store.find_response(db, agent_id, response_id, creator)
            )
        except (NotFound, ValidationError, NotStored):
            # Refused under settings not known to be current: an agent created meanwhile elsewhere is not unknown.
            current = number if confirmed else settings_generation.current(db)
            if current != number:
                raise SettingsChanged(current) from None
            raise
    config, connections = settings.config, settings.connections
    key_variable = connections[config.provider]["api_key_env"] if connections else None
    # Not `environ or {}`: the truth of a KeyEnviron counts the whole process environment.
    secret = environ.get(key_variable) if key_variable and environ is not None else None
    upstream = settings.upstream(request.model, environ, secret, transport)
    merged = json.loads(settings.agent_json)  # each request's own: its run keeps it as the agent's snapshot
    run_url, allowed_networks = webhooks
    webhook = ApprovalWebhook(config.approval_webhook, run_url, allowed_networks, secret)
    return config, merged, request, upstream, webhook, None if confirmed else number


class _AgentSettings:
    """What a proxied request reads of an agent's settings, as read under one settings generation
    (store.settings_generation): its frozen AgentConfig, its JSON form as text, its provider connection, and the
    upstreams built from them, one for each model a client names and key it is given."""

    def __init__(self, config, agent_json, connections):
        self.config = config
        self.agent_json = agent_json
        self.connections = connections
        self._upstreams = {}

    def upstream(self, model_name, environ, secret, transport):
        if not self.connections:  # the scripted model (or no connection): built for each request, as a run does
            return upstream_for_agent(self.config, model_name, self.connections, environ, transport)
        key = (model_name, secret, transport)
        upstream = self._upstreams.get(key)
        if upstream is None:
            upstream = upstream_for_agent(self.config, model_name, self.connections, environ, transport)
            if len(self._upstreams) < SETTINGS_KEPT:
                self._upstreams[key] = upstream
        return upstream


# The agents' settings a process keeps, each under the generation it was read at: a proxied request reads one small
# row (the generation) instead of the agent, its tools and its provider connection, and builds nothing again while
# none of them changed, here or on another replica. At most this many agents (and models of each) are kept.
SETTINGS_KEPT = 256
_settings = settings_generation.Kept(SETTINGS_KEPT)  # (database URL, agent id, registry, tool secrets): settings


def _agent_settings(db, database_url, agent_id, tools, generation):
    """The agent's _AgentSettings as stored under the settings' `generation`, its tools checked against `tools` —
    (the built-in and installed tools' registry, where tool server headers read their secrets) — and the stored tool
    servers' (which are settings too). Raises store.NotFound."""
    registry, tool_secrets = tools

    def read():
        with_servers = tool_server_store.registry_with_servers(db, registry, tool_secrets)
        config, merged = agent_store.get_agent_config(db, agent_id, with_servers)
        return _AgentSettings(config, json.dumps(merged), _connection_of(db, config.provider))

    return _settings.get((database_url, agent_id, registry, tool_secrets), generation, read)


def keep_answer(database_url, agent_id, api, request, exchange, run, creator=None):
    """Keep what the client's API refers back to of the answer (a Responses API response), with the run it joined
    and the credential that asked (`creator`, None with the login off)."""
    kept = api.kept(exchange, request)
    if kept is not None:
        with pooled_db(database_url) as db:
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
