"""One client request to an agent's policy proxy, answered and recorded: the one sequence the web layer, a case's
replay and the tests all run (SPEC §8).

Find the proxied run the client's conversation continues (engine.proxy.recording), answer under the agent's policy
(engine.proxy.core), then record the run: the continued one, or a new one. Where runs are kept is the caller's: the
app's database (services.proxy), or a `RunsInMemory` for a replay.

A response held for approval (a client tool with `require_approval`) is recorded at once as a run awaiting
approval, with the exchange so far, and the request waits for the decisions by asking `runs` again and again: a
decision taken in another process releases it. The same conversation sent again (a client that went away and
retries) attaches to the held run and waits in its place, instead of asking the model again. A person who stops the
held run (services.runs) ends it in its row; the request that waits sees it at its next look and answers its client
with the stop (engine.proxy.core.Stopped), recording the run as that client got it.
"""

import time
import uuid
from dataclasses import replace

from ..approvals import Decision, PendingRound
from ..round import STOPPED
from ..types import AWAITING, FINISHED, CallRecord
from .core import Decided, Held, ProxyExchange, Stopped, UpstreamError, drive
from .recording import ClientConversation, continued_run, conversation_key, new_run, restored_history
from .stream import KeepAlive, LiveAnswer
from .turn import continues_run

HELD_KEY = "held:"  # a held run's conversation key: this prefix and the key of the conversation its client sent
POLL_SECONDS = 0.25  # how often a held request asks whether its calls were decided
KEEP_ALIVE_SECONDS = 10.0  # a held stream's keep-alive, under the 15 seconds clients and proxies wait for a byte
ATTACH_ATTEMPTS = 20  # how many times a request that attaches tries to take the held run (a decision being written)


class Superseded(UpstreamError):
    """Another request of the same conversation now waits for the decisions in this one's place."""

    def __init__(self):
        super().__init__(
            409, "Another request of this conversation now waits for the decision on its calls.", "conflict"
        )


class _Conversation:
    """A client request's conversation, and the stored run it continues (if any): what answering it needs, and how
    its exchange is recorded."""

    def __init__(self, request, runs, keep_alive_seconds=KEEP_ALIVE_SECONDS):
        self.request = request
        self.runs = runs
        self.keep_alive_seconds = keep_alive_seconds
        self.digest = ClientConversation(request.messages)
        self.point = self.digest.point
        self.held_key = HELD_KEY + conversation_key(request.messages)
        found = runs.find_each([self.held_key, *([self.point[0]] if self.point else [])])  # one look-up for both
        held = found[self.held_key]
        self.attached = held if held is not None and held.get("state") == AWAITING else None
        self.stored = found[self.point[0]] if self.point else None
        self.history = restored_history(self.stored, request.messages, self.point[1]) if self.stored else None
        self.base = self.stored if self.stored is not None and continues_run(request, self.point[1]) else None
        self.opening = len(request.messages if self.history is None else self.history)
        self.held = None  # (run id, waiter) once this request's exchange is held
        self.held_run = None  # the run as recorded while held
        self.last_held = None  # the held exchange's state as this request held it or attached to it
        self.stopped = False  # a person stopped the run while this request waited
        self.waiting = False  # the request waits for decisions: whatever ends it, the held run stays as it is
        self.logged = 0  # how many of the exchange's log entries the held run has stored

    def run_of(self, agent, exchange, duration_ms):
        """(the run of the exchange, (the id, the conversation key) of the stored run it replaces, or None)."""
        if self.held is not None:
            replaces = (self.held[0], self.held_key)
        else:
            replaces = (self.base["id"], self.point[0]) if self.base is not None else None
        if self.base is not None:
            return continued_run(self.base, agent, exchange, self.digest, self.point[1], duration_ms), replaces
        return self.new_run(agent, exchange, duration_ms), replaces

    def new_run(self, agent, exchange, duration_ms):
        continues = self.stored["id"] if self.stored is not None else None
        return new_run(agent, exchange, self.digest, duration_ms, self.request, self.opening, continues)

    def record(self, agent, exchange, duration_ms):
        if self.waiting:  # the client went away, or another request took over: the decision stays pending
            return self.held_run
        run, replaces = self.run_of(agent, exchange, duration_ms)
        if replaces is not None:
            saved = self.runs.continue_run(replaces[0], run, replaces[1], exchange.log[self.logged :])
            if saved is not None:
                return saved
            if self.stopped:  # another request of the conversation recorded the stop first
                return self.held_run
            if self.base is not None:  # another request continued the run first: this one starts its own
                run = self.new_run(agent, exchange, duration_ms)
        return self.runs.save(run)

    def steps(self, agent, exchange, started):
        """`exchange.steps()` with its holds carried out here: yields each body to send upstream, and KeepAlive while
        the request waits for decisions; returns the Exchange."""
        resumed = None
        if self.attached is not None:
            resumed = yield from self.attach(exchange)
        inner = exchange.steps(resumed)
        value = None
        while True:
            try:
                item = inner.send(value)
            except StopIteration as done:
                return done.value
            if isinstance(item, Held):
                self.hold(agent, exchange, item, started)
                _state, value = yield from self.wait()
            else:
                value = yield item

    def attach(self, exchange):
        """Wait in the place of the request that holds the same conversation (it went away, or will give way);
        returns the (held state, Decided) the exchange resumes with."""
        run_id = self.attached["id"]
        self.waiting, self.held_run = True, self.attached
        for _attempt in range(ATTACH_ATTEMPTS):
            if self.runs.take(run_id, "attach"):
                break
            self.runs.pause(POLL_SECONDS)
        else:
            raise Superseded()
        run_state, loop = self.runs.held(run_id)
        if run_state != AWAITING or not (loop or {}).get("proxy"):
            self.runs.let_go(run_id)
            raise Superseded()
        waiter = uuid.uuid4().hex
        held = {**loop["proxy"], "waiter": waiter}
        self.runs.put_loop(run_id, {**loop, "proxy": held})
        self.base, self.stored, self.opening = (held["context"][key] for key in ("base", "stored", "opening"))
        exchange.restore(held)
        self.held, self.logged, self.last_held = (run_id, waiter), len(held["log"]), held
        return (yield from self.wait())

    def hold(self, agent, exchange, held, started):
        """Record the run as awaiting approval, with what carrying the exchange on needs."""
        duration_ms = (time.perf_counter() - started) * 1000
        run, replaces = self.run_of(agent, exchange.held_exchange(held.pending), duration_ms)
        run["conversation"] = {"key": self.held_key, "upstream_length": len(held.state["messages"])}
        waiter = uuid.uuid4().hex
        loop = {
            "proxy": {
                **held.state,
                "context": {"base": self.base, "stored": self.stored, "opening": self.opening},
                "deadline": time.time() + exchange.config.approval_timeout_seconds,
                "waiter": waiter,
                "schemas": {tool.name: tool.parameters for tool in exchange.request.declared},
            }
        }
        self.held_run = self.runs.hold(replaces, run, loop, exchange.log[self.logged :])
        self.held, self.last_held = (self.held_run["id"], waiter), loop["proxy"]
        self.logged = len(exchange.log)

    def wait(self):
        """Ask for the decisions until they are all taken or the time to take them has passed, with a KeepAlive
        now and then. Returns (the held state, the Decided); raises Superseded when another request took over."""
        self.waiting = True
        last = time.monotonic()
        while True:
            outcome = self.decided()
            if outcome is not None:
                self.waiting = False
                return outcome
            self.runs.pause(POLL_SECONDS)
            if time.monotonic() - last >= self.keep_alive_seconds:
                last = time.monotonic()
                yield KeepAlive()

    def decided(self):
        """(the held state, the Decided) once every call is decided or the deadline has passed and this request
        holds the run to carry it out (no other does, and no decision is being written); None meanwhile."""
        run_id, waiter = self.held
        run_state, loop = self.runs.held(run_id)
        held = (loop or {}).get("proxy")
        stopped = self.stopped_by_a_person(run_id) if run_state == FINISHED else None
        if stopped is not None:
            self.stopped = True
            return self.last_held, Stopped(stopped)
        if run_state != AWAITING or held is None or held["waiter"] != waiter:
            raise Superseded()
        if PendingRound.from_state(held["pending"]).undecided() and time.time() < held["deadline"]:
            return None
        if not self.runs.take(run_id, "release"):
            return None
        _run_state, loop = self.runs.held(run_id)
        held = loop["proxy"]
        if held["waiter"] != waiter:
            self.runs.let_go(run_id)
            raise Superseded()
        pending = PendingRound.from_state(held["pending"])
        return held, Decided(pending, held["deadline"])

    def stopped_by_a_person(self, run_id):
        """The held round as the stop left it (engine.proxy.approvals.stop_held) when the held run ended because a
        person stopped it (it is still the latest run of the held conversation), else None."""
        run = self.runs.find(self.held_key)
        if run is None or run["id"] != run_id or run.get("stop_reason") != STOPPED:
            return None
        held = PendingRound.from_state(self.last_held["pending"]).round
        calls = tuple(CallRecord.from_json(call) for call in run["rounds"][-1]["calls"])
        return replace(held, calls=calls, shown_to_client=False)


def answer_and_record(config, agent, request, ask, runs):
    """(the Exchange, the recorded run). `config` and `agent`: the agent's AgentConfig and its JSON form (the run's
    snapshot); `request`: the ProxyRequest; `ask(body)`: the upstream (engine.proxy.upstream); `runs`: where proxied
    runs are kept — `find(conversation key)` the latest run whose client holds that conversation, or None, and
    `find_each(keys)` {key: that run or None} for several keys at once;
    `save(run)` stores a new run and returns it with its id; `continue_run(run id, run, conversation key, new log
    entries)` replaces a run unless another request continued it first (then None); and for responses held for
    approval `hold`, `held`, `take`, `put_loop` and `let_go` (services.proxy.StoredRuns)."""
    conversation = _Conversation(request, runs)
    started = time.perf_counter()
    exchange = ProxyExchange(config, request, conversation.history)
    answered = drive(exchange, conversation.steps(agent, exchange, started), ask)
    return answered, conversation.record(agent, answered, (time.perf_counter() - started) * 1000)


class StreamedAnswer:
    """A streamed request, answered as the upstream writes and recorded when its stream ends, however it ends (the
    client going away included): `pieces()` for the client (engine.proxy.stream), then `run`, as recorded."""

    def __init__(self, config, agent, request, upstream, runs, keep_alive_seconds=KEEP_ALIVE_SECONDS):
        self.agent = agent
        self.conversation = _Conversation(request, runs, keep_alive_seconds)
        own_id = f"chatcmpl-toolgate-{time.time_ns()}"
        exchange = ProxyExchange(config, request, self.conversation.history)
        self.started = time.perf_counter()
        steps = self.conversation.steps(agent, exchange, self.started)
        self.live = LiveAnswer(exchange, upstream, own_id, steps)
        self.run = None

    def pieces(self):
        try:
            yield from self.live.pieces()
        finally:
            duration_ms = (time.perf_counter() - self.started) * 1000
            self.run = self.conversation.record(self.agent, self.live.exchange, duration_ms)


class RunsInMemory:
    """Proxied runs kept in a list, for a replay that records what a client drives (engine.proxy.replay). No person
    waits on a replay: a held call is decided at once by `decisions` ({call id: decision}, engine.approvals), or else
    is not decided in time (its deadline is the moment it is held)."""

    def __init__(self, decisions=None):
        self.runs = []
        self.decisions = decisions or {}
        self.loops = {}  # run id -> the loop state of a held run

    def find(self, conversation_key):
        return next(
            (run for run in reversed(self.runs) if (run.get("conversation") or {}).get("key") == conversation_key),
            None,
        )

    def find_each(self, conversation_keys):
        return {key: self.find(key) for key in conversation_keys}

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

    def hold(self, replaces, run, loop_state, new_log):
        held = loop_state["proxy"]
        pending = PendingRound.from_state(held["pending"])
        chosen = {
            call_id: Decision.from_json(self.decisions[call_id], call_id).taken_at(time.time())
            for call_id in pending.awaiting
            if call_id in self.decisions
        }
        saved = (replaces and self.continue_run(replaces[0], run, replaces[1], new_log)) or self.save(run)
        self.loops[saved["id"]] = {
            "proxy": {**held, "pending": pending.with_decisions(chosen).to_state(), "deadline": time.time()}
        }
        return saved

    def held(self, run_id):
        return AWAITING, self.loops.get(run_id)

    def take(self, run_id, claim):
        return True

    def put_loop(self, run_id, loop_state):
        self.loops[run_id] = loop_state

    def let_go(self, run_id):
        """Nothing holds a run kept in memory."""

    def pause(self, seconds):
        """How a held request waits between two looks at its run: a replay's calls are decided before it asks."""
        time.sleep(seconds)
