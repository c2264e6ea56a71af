"""One client request to an agent's policy proxy, answered and recorded: the one sequence the web layer, a case's
replay and the tests all run (SPEC §8).

Find the proxied run the client's conversation continues (engine.proxy.recording), answer under the agent's policy
(engine.proxy.core), then record the run: the continued one, or a new one. Where runs are kept is the caller's: the
app's database (services.proxy), or a `RunsInMemory` for a replay.
"""

import time

from .core import ProxyExchange, answer_request
from .recording import ClientConversation, continued_run, new_run, restored_history
from .stream import LiveAnswer
from .turn import continues_run


class _Conversation:
    """A client request's conversation, and the stored run it continues (if any): what answering it needs, and how
    its exchange is recorded."""

    def __init__(self, request, runs):
        self.request = request
        self.runs = runs
        self.digest = ClientConversation(request.messages)
        self.point = self.digest.point
        self.stored = runs.find(self.point[0]) if self.point else None
        self.history = restored_history(self.stored, request.messages, self.point[1]) if self.stored else None

    def record(self, agent, exchange, duration_ms):
        request, stored, point = self.request, self.stored, self.point
        if stored is not None and continues_run(request, point[1]):
            run = continued_run(stored, agent, exchange, self.digest, point[1], duration_ms)
            saved = self.runs.continue_run(stored["id"], run, point[0], exchange.log)
            if saved is not None:
                return saved
        continues = stored["id"] if stored is not None else None
        opening = len(request.messages if self.history is None else self.history)
        return self.runs.save(new_run(agent, exchange, self.digest, duration_ms, request, opening, continues))


def answer_and_record(config, agent, request, ask, runs):
    """(the Exchange, the recorded run). `config` and `agent`: the agent's AgentConfig and its JSON form (the run's
    snapshot); `request`: the ProxyRequest; `ask(body)`: the upstream (engine.proxy.upstream); `runs`: where proxied
    runs are kept — `find(conversation key)` the latest run whose client holds that conversation, or None;
    `save(run)` stores a new run and returns it with its id; `continue_run(run id, run, conversation key, new log
    entries)` replaces a run unless another request continued it first (then None)."""
    conversation = _Conversation(request, runs)
    started = time.perf_counter()
    exchange = answer_request(config, request, ask, conversation.history)
    return exchange, conversation.record(agent, exchange, (time.perf_counter() - started) * 1000)


class StreamedAnswer:
    """A streamed request, answered as the upstream writes and recorded when its stream ends, however it ends (the
    client going away included): `pieces()` for the client (engine.proxy.stream), then `run`, as recorded."""

    def __init__(self, config, agent, request, upstream, runs):
        self.agent = agent
        self.conversation = _Conversation(request, runs)
        own_id = f"chatcmpl-toolgate-{time.time_ns()}"
        self.live = LiveAnswer(ProxyExchange(config, request, self.conversation.history), upstream, own_id)
        self.run = None

    def pieces(self):
        started = time.perf_counter()
        try:
            yield from self.live.pieces()
        finally:
            duration_ms = (time.perf_counter() - started) * 1000
            self.run = self.conversation.record(self.agent, self.live.exchange, duration_ms)


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
