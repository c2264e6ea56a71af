"""The client's turn (SPEC §8, "The turn"): where it starts, what its conversation says happened in it, and whether
a request continues the run an earlier request of its conversation recorded.

The proxy keeps no state per conversation to be correct: the rounds used, the calls per tool and the identical
calls are counted from the messages the client sends, over its current turn (a turn is one user message driven to
an answer, as a run of the loop is). A call counts as run when a tool message answers its id.

Where the turn starts, by the rule every API the proxy speaks shares (SPEC §8): what a client sends between two of
the model's messages is one step, and a step that carries the result of a call continues the turn, whatever else
stands beside the results — text blocks, Claude Code's `<system-reminder>` blocks, images, cache markers, system
messages, a note from the user. Only a step that brings the user's input and no result starts a turn. Each API's
reader keeps what the client sent in one step together in the canonical conversation: Messages puts a user
message's `tool_result` blocks first as tool messages, then the rest of that message (and Anthropic reads
consecutive user messages as one); the Responses API's `function_call_output` items and the items sent after them
(Codex sends an image it was asked to view as a user message after the output) stay in order; Chat Completions'
tool messages and the messages sent after them are the client's own. So the turn's start is marked once, when the
body is read (ProxyRequest.turn_start, engine.proxy.request), and nothing else derives it.
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


def turn_start(messages):
    """The index in canonical `messages` of the first message of the step that started the client's current turn:
    the last step that brings a user message and no tool message; 0 when none does."""
    start, step, has_input, has_results = 0, 0, False, False
    for index, message in enumerate([*messages, {"role": "assistant"}]):
        if message["role"] == "assistant":
            if has_input and not has_results:
                start = step
            step, has_input, has_results = index + 1, False, False
        elif message["role"] == "tool":
            has_results = True
        elif message["role"] == "user":
            has_input = True
    return start


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
    return Turn(rounds, calls, identical, _users_text(turn))


def continues_run(request, length):
    """Whether a request whose conversation extends the first `length` messages a stored run's client held continues
    that run: its turn started within them. A turn started after them is the next run of the conversation."""
    return request.turn_start < length


def _users_text(turn):
    """The user's own text in the step that started the turn: its last user message with text that is not a reminder
    Claude Code added (Codex sends its instructions and environment as user messages before the prompt), without
    the reminders; all the text of its last user message when none has any."""
    said = []
    for message in turn:
        if message["role"] == "assistant":
            break
        if message["role"] == "user":
            said.append(message.get("content"))
    own = [text for text in (_text_of(content, reminders=False) for content in said) if text]
    return own[-1] if own else _text_of(said[-1]) if said else ""


def _text_of(content, reminders=True):
    """A message's content as text: a string, or the joined text of its text parts; without the parts that are
    reminders unless `reminders`."""
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(parts, list):
        return ""
    texts = [part.get("text") for part in parts if isinstance(part, dict) and part.get("type") == "text"]
    return "".join(
        text for text in texts if isinstance(text, str) and (reminders or not text.lstrip().startswith(REMINDER))
    )
