"""Answer a request to an agent's policy proxy and record it as a run: the one path the proxy takes (SPEC §8).

Load the agent and the provider connections, read the client's body, find the proxied run the conversation
continues (engine.proxy_runs), answer under the agent's policy (engine.proxy), then store the run: the continued
one, or a new one. Bad input (an unknown agent, a body the proxy cannot forward) raises before anything is sent
or stored. No Flask here.
"""

import time

from engine.config import SCRIPTED_PROVIDER
from engine.proxy import answer_request
from engine.proxy_request import read_request
from engine.proxy_runs import ClientConversation, continued_run, new_run, restored_history, starts_a_turn
from engine.proxy_upstream import upstream_for_agent
from engine.tools import default_registry

from . import NotFound
from . import agents as agent_store
from . import providers as provider_store
from . import runs as run_store


def answer_and_record(db, agent_id, body, *, registry=None, environ=None, transport=None):
    """(the engine.proxy.Exchange, the stored run). Raises store.NotFound for an unknown agent and
    ValidationError naming the field of a bad body; a failed upstream request is a stored run with stop_reason
    "error" and the Exchange's `error`."""
    config, merged = agent_store.get_agent_config(db, agent_id, registry or default_registry())
    request = read_request(body)
    conversation = ClientConversation(request.messages)
    point = conversation.point
    stored = run_store.proxied_run_with_conversation(db, agent_id, point[0]) if point else None
    history = restored_history(stored, request.messages, point[1]) if stored else None
    providers = _connection_of(db, config.provider)
    started = time.perf_counter()
    ask = upstream_for_agent(config, request.model, providers, environ, transport)
    exchange = answer_request(config, request, ask, history)
    duration_ms = (time.perf_counter() - started) * 1000
    if stored is not None and not starts_a_turn(request.messages, point[1]):
        run = continued_run(stored, merged, exchange, conversation, point[1], duration_ms)
        saved = run_store.continue_run(db, stored["id"], run, point[0], exchange.log)
        if saved is not None:
            return exchange, saved
    continues = stored["id"] if stored is not None else None
    opening = len(request.messages if history is None else history)
    run = new_run(merged, exchange, conversation, duration_ms, request.tools, opening, continues)
    return exchange, run_store.save_run(db, run)


def _connection_of(db, provider_id):
    """{id: connection} of the one connection the agent names; empty for the scripted model, or when the
    connection is gone (the upstream then says so)."""
    if provider_id == SCRIPTED_PROVIDER:
        return {}
    try:
        return {provider_id: provider_store.get_provider(db, provider_id)}
    except NotFound:
        return {}
