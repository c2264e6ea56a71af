"""One client request to an agent's policy proxy, answered and recorded: the one sequence the web layer, a case's
replay and the tests all run (SPEC §8).

Find the proxied run the client's conversation continues (engine.proxy.recording), answer under the agent's policy
(engine.proxy.core), then record the run: the continued one, or a new one. Where runs are kept is the caller's: the
app's database (services.proxy), or a `RunsInMemory` for a replay.
"""

import time

from .core import answer_request
from .recording import ClientConversation, continued_run, new_run, restored_history, starts_a_turn


def answer_and_record(config, agent, request, ask, runs):
    """(the Exchange, the recorded run). `config` and `agent`: the agent's AgentConfig and its JSON form (the run's
    snapshot); `request`: the ProxyRequest; `ask(body)`: the upstream (engine.proxy.upstream); `runs`: where proxied
    runs are kept — `find(conversation key)` the latest run whose client holds that conversation, or None;
    `save(run)` stores a new run and returns it with its id; `continue_run(run id, run, conversation key, new log
    entries)` replaces a run unless another request continued it first (then None)."""
    conversation = ClientConversation(request.messages)
    point = conversation.point
    stored = runs.find(point[0]) if point else None
    history = restored_history(stored, request.messages, point[1]) if stored else None
    started = time.perf_counter()
    exchange = answer_request(config, request, ask, history)
    duration_ms = (time.perf_counter() - started) * 1000
    if stored is not None and not starts_a_turn(request.messages, point[1]):
        run = continued_run(stored, agent, exchange, conversation, point[1], duration_ms)
        saved = runs.continue_run(stored["id"], run, point[0], exchange.log)
        if saved is not None:
            return exchange, saved
    continues = stored["id"] if stored is not None else None
    opening = len(request.messages if history is None else history)
    run = new_run(agent, exchange, conversation, duration_ms, request, opening, continues)
    return exchange, runs.save(run)


class RunsInMemory:
    """Proxied runs kept in a list, for a replay that records what a client drives (engine.proxy.replay)."""

    def __init__(self):
        self.runs = []

    def find(self, conversation_key):
        return next(
            (run for run in reversed(self.runs) if (run.get("conversation") or {}).get("key") == conversation_key),
            None,
        )

    def save(self, run):
        run = {"id": len(self.runs) + 1, **run}
        self.runs.append(run)
        return run

    def continue_run(self, run_id, run, conversation_key, new_log):
        stored = self.runs[run_id - 1]
        if (stored.get("conversation") or {}).get("key") != conversation_key:
            return None
        self.runs[run_id - 1] = {"id": run_id, **run}
        return self.runs[run_id - 1]
