"""The client's turn (SPEC §8, "The turn"): where it starts, what its conversation says happened in it, and whether
a request continues the run an earlier request of its conversation recorded.

The proxy keeps no state per conversation to be correct: the rounds used, the calls per tool and the identical
calls are counted from the messages the client sends, over its current turn (a turn is one user message driven to
an answer, as a run of the loop is). A call counts as run when a tool message answers its id.

Where the turn starts is each API's to say, by its own rules, as its reader translates the client's body
(ProxyRequest.turn_start): at the client's last message that carries no result of a call and brings the user's
input. A message that carries results continues the turn whatever stands beside them in it — text blocks,
`<system-reminder>` blocks, images, cache markers — and system messages never start one. In Chat Completions and
the Responses API results are messages (items) of their own, so the turn starts at the last user message
(`last_user_message`); in the Messages API a user message holds its `tool_result` blocks beside its text, and the
Messages reader marks where the last user message without one landed in the canonical conversation. Nothing else
re-derives it.
"""

from collections import Counter
from dataclasses import dataclass

from ..gate import identical_call_key
from ..types import ToolCall

REMINDER = "<system-reminder>"  # how Claude Code opens the blocks it adds to a user's message


@dataclass(frozen=True)
class Turn:
    """What the client's conversation says happened in its current turn."""

    rounds_used: int  # assistant messages with tool calls
    calls_so_far: Counter  # calls per tool answered by a tool message: they ran on the client
    identical_so_far: Counter  # the same per gate.identical_call_key
    message: str  # the user's own text that started the turn ("" when there is none)


def last_user_message(messages):
    """The index of the last user message of canonical `messages`, 0 when there is none: where the turn starts for
    an API whose results are messages of their own."""
    return max((index for index, message in enumerate(messages) if message["role"] == "user"), default=0)


def current_turn(request):
    """The Turn of a ProxyRequest's conversation, from its turn_start on."""
    turn = request.messages[request.turn_start :]
    answered = {message["tool_call_id"] for message in turn if message["role"] == "tool"}
    rounds, calls, identical = 0, Counter(), Counter()
    for message in turn:
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        rounds += 1
        for data in message["tool_calls"]:
            if data["id"] not in answered:
                continue
            name = data["function"]["name"]
            calls[name] += 1
            arguments, error = ToolCall(data["id"], name, data["function"].get("arguments", "")).parsed_arguments()
            if error is None:
                identical[identical_call_key(name, arguments)] += 1
    return Turn(rounds, calls, identical, _users_text(turn[0]) if turn else "")


def continues_run(request, length):
    """Whether a request whose conversation extends the first `length` messages a stored run's client held continues
    that run: its turn started within them. A turn started after them is the next run of the conversation."""
    return request.turn_start < length


def _users_text(message):
    """The user's own text in the message that started the turn: its text that is not a reminder Claude Code added,
    or all its text when there is nothing else."""
    if message["role"] != "user":
        return ""
    return _text_of(message.get("content"), reminders=False) or _text_of(message.get("content"))


def _text_of(content, reminders=True):
    """A message's content as text: a string, or the joined text of its text parts; without the parts that are
    reminders unless `reminders`."""
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(parts, list):
        return ""
    return "".join(
        part.get("text", "")
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and (reminders or not part.get("text", "").lstrip().startswith(REMINDER))
    )
