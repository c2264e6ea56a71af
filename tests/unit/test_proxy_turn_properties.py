"""Properties of the client's turn (engine.proxy.turn), for every API the proxy speaks: a client drives a random
conversation through the proxy (engine.proxy.serve, as the app does) twice, once plain and once with what real
clients put beside their tool results — text blocks, Claude Code's `<system-reminder>` blocks, images, cache markers,
system messages, reasoning items, metadata — and both drives count the same calls, hit the cap at the same request,
and join the same runs: nothing beside a result starts a turn."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import load_agent
from engine.proxy import chat_completions, messages, responses
from engine.proxy.serve import RunsInMemory, answer_and_record
from engine.proxy.turn import current_turn
from tests import strategies
from tests.doubles import ModelDouble, completion

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}
NAMES = ("note", "place")
REQUESTS = 8  # a drive ends after this many requests, answered or not
IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/screen.png"}}

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
reminders = texts.map(lambda text: f"<system-reminder>{text}</system-reminder>")
# What may stand beside tool results: (what, its text, where among the results it goes, from 0 to 1).
extras = st.lists(
    st.tuples(
        st.sampled_from(["text", "reminder", "system", "cache", "metadata", "reasoning", "note"]),
        texts,
        st.floats(0, 1),
    ),
    max_size=4,
)


@st.composite
def agents(draw):
    names = draw(st.lists(st.sampled_from(NAMES), unique=True))
    limits = strategies.tool_settings(required=("max_calls_per_run", "max_identical_calls", "restrict_multiple_calls"))
    return {
        "id": "turns",
        "label": "Turns",
        "max_rounds": draw(st.integers(0, 3)),
        "on_round_cap": draw(st.sampled_from(["final_answer", "message"])),
        "client_tools": {name: draw(limits) for name in names},
    }


@st.composite
def upstream_answers(draw):
    """The upstream's answers in turn: text, or calls with ids unique in the conversation."""
    answers = []
    for number in range(draw(st.integers(1, 10))):
        calls = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 1)), max_size=3))
        calls = [(f"call_{number}_{index}", name, {"n": n}) for index, (name, n) in enumerate(calls)]
        answers.append(completion(calls=calls) if calls else completion("Said."))
    return answers


def placed(items, additions, where):
    """`items` with each addition put where its fraction says."""
    items = list(items)
    for addition, fraction in zip(additions, where, strict=True):
        items.insert(round(fraction * len(items)), addition)
    return items


class ChatClient:
    """A Chat Completions client: tool messages, with system and developer messages, text parts and a user's note
    (the text a bridge from Anthropic's API sends after the results) beside them."""

    api = chat_completions

    def prompt(self, text, added):
        return [{"role": "user", "content": text}]

    def body(self, conversation):
        tools = [{"type": "function", "function": {"name": name, "parameters": SCHEMA}} for name in NAMES]
        return {"model": "m", "messages": conversation, "tools": tools}

    def answered(self, exchange, request):
        message = exchange.completion["choices"][0]["message"]
        return [message], [call["id"] for call in message.get("tool_calls") or []]

    def results(self, ids, added):
        results = [{"role": "tool", "tool_call_id": call_id, "content": f"ran {call_id}"} for call_id in ids]
        beside, where, notes = [], [], []
        for kind, text, fraction in added:
            if kind in ("text", "reminder") and results:  # a tool message's content as text parts
                result = results[int(fraction * (len(results) - 1))]
                if isinstance(result["content"], str):
                    result["content"] = [{"type": "text", "text": result["content"]}]
                result["content"].append(part_of(kind, text))
            elif kind == "metadata" and results:
                results[0]["name"] = "client"
            elif kind in ("system", "cache", "reasoning"):
                beside.append({"role": "developer" if kind == "cache" else "system", "content": text or "Note."})
                where.append(fraction)
            elif kind == "note":  # a user message after the results (what a bridge makes of Claude Code's)
                notes.append({"role": "user", "content": [part_of("reminder", text), part_of("text", text)]})
        return [*placed(results, beside, where), *notes]


class MessagesClient:
    """An Anthropic Messages client (Claude Code's way): tool_result blocks in a user message, with text, reminder and
    image blocks beside them, cache markers on its blocks, system messages around it, and reminders around the user's
    prompt."""

    api = messages

    def prompt(self, text, added):
        blocks = [{"type": "text", "text": text}]
        blocks = placed(blocks, [part_of("reminder", text) for _, text, _ in added], [f for _, _, f in added])
        return [{"role": "user", "content": blocks}]

    def body(self, conversation):
        tools = [{"name": name, "input_schema": SCHEMA} for name in NAMES]
        return {"model": "claude-x", "max_tokens": 100, "messages": conversation, "tools": tools}

    def answered(self, exchange, request):
        content = self.api.answer(exchange, request)["content"]
        ids = [block["id"] for block in content if block["type"] == "tool_use"]
        return [{"role": "assistant", "content": content}], ids

    def results(self, ids, added):
        blocks = [{"type": "tool_result", "tool_use_id": call_id, "content": f"ran {call_id}"} for call_id in ids]
        beside, where, before, after = [], [], [], []
        for kind, text, fraction in added:
            if kind in ("text", "reminder", "reasoning", "note"):  # a text block, a reminder, or an image
                beside.append(part_of(kind, text) if kind != "reasoning" else IMAGE)
                where.append(fraction)
            elif kind == "system":  # a system message before or after the results, as Claude Code sends its own
                (before if fraction < 0.5 else after).append({"role": "system", "content": [part_of("text", text)]})
            elif blocks:  # a cache marker, or any key a client adds to a block
                key = "cache_control" if kind == "cache" else "citations"
                blocks[int(fraction * (len(blocks) - 1))][key] = {"type": "ephemeral"} if kind == "cache" else None
        return [*before, {"role": "user", "content": placed(blocks, beside, where)}, *after]


class ResponsesClient:
    """An OpenAI Responses client (Codex's, the Agents SDK's way): function_call_output items, with system and
    developer messages, reasoning items, item metadata and a user message with an image (Codex's view_image) beside
    them, the whole input sent each time."""

    api = responses

    def prompt(self, text, added):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}]

    def body(self, conversation):
        tools = [{"type": "function", "name": name, "parameters": SCHEMA} for name in NAMES]
        return {"model": "m", "input": conversation, "tools": tools, "store": False}

    def answered(self, exchange, request):
        output = self.api.answer(exchange, request)["output"]
        return output, [item["call_id"] for item in output if item["type"] == "function_call"]

    def results(self, ids, added):
        results = [{"type": "function_call_output", "call_id": call_id, "output": f"ran {call_id}"} for call_id in ids]
        beside, where, notes = [], [], []
        for kind, text, fraction in added:
            if kind in ("text", "reminder") and results:  # an output as input_text parts
                result = results[int(fraction * (len(results) - 1))]
                if isinstance(result["output"], str):
                    result["output"] = [{"type": "input_text", "text": result["output"]}]
                result["output"].append({**part_of(kind, text), "type": "input_text"})
            elif kind == "metadata" and results:
                results[0].update({"id": "fco_1", "status": "completed"})
            elif kind == "reasoning":
                beside.append({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": text}]})
                where.append(fraction)
            elif kind in ("system", "cache"):
                role = "developer" if kind == "cache" else "system"
                beside.append({"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]})
                where.append(fraction)
            elif kind == "note":  # the image a view_image call attached, as Codex sends it after the output
                image = {"type": "input_image", "image_url": IMAGE["source"]["url"]}
                notes.append({"type": "message", "role": "user", "content": [image]})
        return [*placed(results, beside, where), *notes]


def part_of(kind, text):
    return {"type": "text", "text": f"<system-reminder>{text}</system-reminder>" if kind == "reminder" else text}


def drive(client, agent, answers, prompts, added):
    """Each request of a conversation the client drives through the proxy: what its turn counted, what the proxy did
    and which run it joined. It runs every call it gets, then sends the next prompt after an answer, until the
    prompts or the requests run out. `added`: what it puts beside its results and its prompts, per request."""
    config, merged = load_agent(agent)
    upstream, runs = ModelDouble(*answers, then=completion("Said."), ignores_tools=True), RunsInMemory()
    conversation = client.prompt(prompts[0], added[0])
    prompts_left, seen = list(prompts[1:]), []
    for number in range(REQUESTS):
        request = client.api.read(client.body(conversation))
        turn = current_turn(request)
        exchange, run = answer_and_record(config, merged, request, upstream.answer, runs)
        seen.append(
            {
                "counted": (turn.rounds_used, turn.calls_so_far, turn.identical_so_far),
                "proxy": (exchange.stop_reason, exchange.requests, exchange.rounds_used, exchange.answer),
                "run": (run["id"], run["continues_run"], len(run["rounds"]), run["message"]),
            }
        )
        assert exchange.rounds_used <= config.max_rounds
        said, ids = client.answered(exchange, request)
        if ids:
            conversation = [*conversation, *said, *client.results(ids, added[number + 1])]
        elif prompts_left:
            conversation = [*conversation, *said, *client.prompt(prompts_left.pop(0), added[number + 1])]
        else:
            break
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    client=st.sampled_from([ChatClient(), MessagesClient(), ResponsesClient()]),
    agent=agents(),
    answers=upstream_answers(),
    prompts=st.lists(st.sampled_from(["Build it.", "Now the footer."]), min_size=1, max_size=3),
    added=st.lists(extras, min_size=REQUESTS + 1, max_size=REQUESTS + 1),
)
def test_what_stands_beside_tool_results_never_changes_the_counts_the_cap_or_the_run(
    client, agent, answers, prompts, added
):
    plain = drive(client, agent, answers, prompts, [[]] * (REQUESTS + 1))
    with_extras = drive(client, agent, answers, prompts, added)
    assert with_extras == plain


def test_the_drive_sees_a_cap_and_a_second_turn():
    """The property above compares drives that reach the cap and the next prompt, not only answers."""
    agent = {"id": "turns", "label": "Turns", "max_rounds": 1, "on_round_cap": "message"}
    answers = [completion(calls=[("call_0_0", "note", {"n": 1})]), completion("Said.")]
    seen = drive(MessagesClient(), agent, answers, ["Build it.", "Now the footer."], [[("reminder", "x", 1.0)]] * 9)
    assert [entry["proxy"][0] for entry in seen] == ["awaiting_client", "round_cap", "answered"]
    assert [entry["run"][:2] for entry in seen] == [(1, None), (1, None), (2, 1)]
    assert seen[0]["run"][3] == "Build it."  # the user's text, not the reminder beside it
