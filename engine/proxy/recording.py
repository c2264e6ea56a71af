"""Proxied conversations as runs (SPEC §8): each client request is recorded into a run with source `proxy`.

A request whose conversation extends what an earlier request of the same agent got back — the same messages up to
the assistant message the proxy answered with, then the client's tool results — continues that run: its calls
become "run by the client" with their output, and the new request's rounds follow. A request whose turn starts
after that answer (engine.proxy.turn: a step with the user's input and no result) starts the next run of the
conversation (a run is one user message driven to an answer), linked to the one it continues. Anything else starts
a new run.

The run keeps every message sent upstream, hidden rounds included; `conversation` says how much of it stands for
what the client has seen (`key`, a digest of the client's view) so the next request can find it and put the rounds
the client never saw back before asking the model again.
"""

import hashlib
import json

from ..types import ALLOWED, AWAITING, CLIENT, EXECUTED, FINISHED, REJECTED, RunRecord, sum_usage

PROXY_SOURCE = "proxy"


def _canonical(message):
    """What identifies a message whatever client library or API sent it back: its role, text (or parts), call ids,
    names and arguments as JSON (no arguments at all read as the empty object a client sends back for them), and
    the call id a tool message answers."""
    content = message.get("content")
    if isinstance(content, list) and all(isinstance(part, dict) and part.get("type") == "text" for part in content):
        content = "".join(part.get("text", "") for part in content)
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        try:
            if isinstance(arguments, str):
                arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            pass
        calls.append([call.get("id"), function.get("name"), arguments])
    entry = [message.get("role"), content or "", calls, message.get("tool_call_id")]
    return json.dumps(entry, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _digest_message(digest, message):
    digest.update(_canonical(message).encode())
    digest.update(b"\n")


def conversation_key(messages):
    """A digest of a conversation as the client holds it."""
    digest = hashlib.sha256()
    for message in messages:
        _digest_message(digest, message)
    return digest.hexdigest()


class ClientConversation:
    """The conversation a client sent, digested once (it grows with every round, and is read on every request):
    `point`, the (key, length) of its part up to the client's last assistant message — the answer an earlier
    request got, which a stored run may hold — or None when it has none; and `key_with(answer)`, the key of the
    conversation with the answer this request gets."""

    def __init__(self, messages):
        self.messages = messages
        last = max((index for index, message in enumerate(messages) if message["role"] == "assistant"), default=None)
        self._digest = hashlib.sha256()
        self.point = None
        for index, message in enumerate(messages):
            _digest_message(self._digest, message)
            if index == last:
                self.point = (self._digest.hexdigest(), last + 1)

    def key_with(self, answer):
        digest = self._digest.copy()
        _digest_message(digest, answer)
        return digest.hexdigest()


def restored_history(stored, messages, length):
    """What to send upstream: the stored run's conversation as the model saw it (with the rounds the client never
    saw), then the client's messages after the first `length` — but a tool message for a call id the restored part
    already answers: a client that sends a request again while the first is in flight must not make the upstream
    see one call answered twice (it refuses such a transcript). The stored run's messages are taken as they are: it
    was read for this request, and messages are never changed once in a transcript."""
    restored = stored["messages"][: stored["conversation"]["upstream_length"]]
    answered = {message.get("tool_call_id") for message in restored if message.get("role") == "tool"}
    added = [
        message
        for message in messages[length:]
        if message.get("role") != "tool" or message.get("tool_call_id") not in answered
    ]
    return [*restored, *added]


def _conversation(exchange, conversation, previous=None):
    if exchange.completion is None:
        return previous
    key = conversation.key_with(exchange.completion["choices"][0]["message"])
    return {"key": key, "upstream_length": len(exchange.messages)}


def run_counts(rounds):
    """The run's counts over its rounds (as JSON), as RunRecord.to_json counts them."""
    calls = [call for round_ in rounds for call in round_["calls"]]
    return {
        "tool_calls": sum(1 for call in calls if call["status"] != REJECTED),
        "rejected_calls": sum(1 for call in calls if call["status"] == REJECTED),
        "usage": sum_usage(round_.get("usage") for round_ in rounds),
    }


def new_run(agent, exchange, conversation, duration_ms, request, opening_length, continues_run=None):
    """The run of a request that continues no stored one (or starts the next turn of `continues_run`), with the API
    its client spoke. What a replay of the run as its client needs (engine.proxy.replay): the `request`'s tools, as
    the client sent them (in Chat Completions' shape when it spoke another API); `opening_length`, how many of the
    exchange's messages came before its first round (the client's, or the history restored for them)."""
    record = RunRecord(
        agent_id=agent["id"],
        message=exchange.message,
        overrides={},
        agent=agent,
        stop_reason=exchange.stop_reason,
        answer=exchange.answer,
        error=exchange.error.message if exchange.error else None,
        rounds=exchange.rounds,
        messages=exchange.messages,
        rounds_used=exchange.rounds_used,
        max_rounds=agent["max_rounds"],
        sources=(),
        layout=(),
        log=exchange.log,
        duration_ms=duration_ms,
        model_requests=exchange.requests,
        pending_round=exchange.pending_round,
    )
    return {
        **record.to_json(),
        "source": PROXY_SOURCE,
        "conversation": _conversation(exchange, conversation),
        "continues_run": continues_run,
        "api": request.api,
        "client": {"tools": list(request.tools), "opening_length": opening_length},
        **({"left_out_tools": list(request.left_out_tools)} if request.left_out_tools else {}),
        **({"left_out_fields": list(request.left_out_fields)} if request.left_out_fields else {}),
    }


def _run_by_client(call, results):
    """The call as run by the client when one of its tool messages (`results`: call id -> content) answers it."""
    if call["status"] != ALLOWED or call["id"] not in results:
        return call
    output = results[call["id"]]
    return {
        **call,
        "status": EXECUTED,
        "run_by": CLIENT,
        "output": output if isinstance(output, str) else json.dumps(output),
    }


def continued_run(stored, agent, exchange, conversation, length, duration_ms):
    """The stored run with this request's exchange added: the calls the client ran (answered by its tool messages
    after the first `length`) marked as run by the client with their output, then the new rounds."""
    results = {
        message["tool_call_id"]: message.get("content")
        for message in conversation.messages[length:]
        if message["role"] == "tool"
    }
    rounds = [
        {**round_, "calls": [_run_by_client(call, results) for call in round_["calls"]]} for round_ in stored["rounds"]
    ]
    for number, round_ in enumerate(exchange.rounds, start=len(rounds) + 1):
        rounds.append(round_.to_json() | {"number": number})
    run = {
        **stored,
        "agent": agent,
        "state": FINISHED if exchange.stop_reason is not None else AWAITING,
        "stop_reason": exchange.stop_reason,
        "answer": exchange.answer,
        "error": exchange.error.message if exchange.error else None,
        "pending_round": exchange.pending_round.to_json() if exchange.pending_round is not None else None,
        "rounds": rounds,
        "messages": list(exchange.messages),
        "rounds_used": exchange.rounds_used,
        "max_rounds": agent["max_rounds"],
        "model_requests": stored.get("model_requests", 0) + exchange.requests,
        "log": [*stored.get("log", []), *exchange.log],
        "duration_ms": round(stored.get("duration_ms", 0) + duration_ms, 3),
        "conversation": _conversation(exchange, conversation, stored["conversation"]),
        **run_counts(rounds),
    }
    return {key: value for key, value in run.items() if key not in ("id", "created_at")}
