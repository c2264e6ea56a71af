"""How a run is stored: each fact once, the other views derived when it is read.

A run as the engine returns it repeats itself: its listing columns (agent id, message, answer, counts) are also in
the run, the agent snapshot has a column of its own, the transcript (`messages`) holds again what the rounds hold
(the system prompt, the user's message, each assistant message and every tool output), each round's assistant
lists the calls its `calls` list again, and every round carries the same tool schemas until the cap. Stored, a value
that has a column is a `null` in `result` (so the keys keep their order), every transcript message that can be
rebuilt from the rounds is a `null` in `messages`, the assistant's calls are a `null`, a round's `tools_sent` the
number of an earlier round that sent the same, and the rounds and their calls are tables that name their keys
once. Reading puts them back.

Nothing is dropped on trust: a value moves to its column only when the column gives back exactly that value, and
a transcript message becomes `null` only when the one rebuilt is the same JSON, key order included. Anything else
(a shape the engine may produce tomorrow) is stored as it is, so `stored_row` then `run_from_row` always gives back
the run byte for byte.
"""

import json

TEXT_COLUMNS = ("agent_id", "message", "stop_reason", "answer")
INTEGER_COLUMNS = ("tool_calls", "rejected_calls")
REAL_COLUMNS = ("duration_ms",)
JSON_COLUMNS = {"overrides": "overrides", "agent": "agent_snapshot"}  # run key: column
# The stored forms, each read by run_from_row: 1, migration step 0007's; 2, a round's offered tools `true` when they
# are the names of the tools it sent.
FORMS = (1, 2)
FORM = FORMS[-1]


def _compact_json(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _same(first, second):
    return json.dumps(first) == json.dumps(second)


def _column_keeps(key, value):
    """Whether the column of `key` gives `value` back exactly (a REAL column turns 5 into 5.0, and so on)."""
    if key in JSON_COLUMNS or value is None:
        return True
    if key in TEXT_COLUMNS:
        return type(value) is str
    if key in INTEGER_COLUMNS:
        return type(value) is int
    return type(value) is float


def _assistant_message(assistant):
    calls = assistant["tool_calls"]
    message = {"role": "assistant", "content": assistant["content"] or ""}
    if calls:
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call["arguments"], str)
                    else json.dumps(call["arguments"]),
                },
            }
            for call in calls
        ]
    return message


def _said_calls(round_):
    """What the assistant said it called, as the round records it beside its calls."""
    return [{"id": call["id"], "name": call["name"], "arguments": call["arguments"]} for call in round_["calls"]]


def _as_table(records):
    """A list of dicts with the same keys in the same order as {"keys", "rows"}: each key named once, not once a
    record. Anything else stays as it is (a list, so a dict here always means a table)."""
    if not records or not all(isinstance(record, dict) for record in records):
        return records
    keys = list(records[0])
    if any(list(record) != keys for record in records):
        return records
    return {"keys": keys, "rows": [list(record.values()) for record in records]}


def _from_table(value):
    if isinstance(value, dict):
        return [dict(zip(value["keys"], row, strict=True)) for row in value["rows"]]
    return value


def _sent_names(tools_sent):
    """The function names of the tools a request sent, or None for a shape this module does not know."""
    try:
        return [tool["function"]["name"] for tool in tools_sent]
    except (KeyError, TypeError):
        return None


def _compact_round(round_, earlier, form):
    """The round with the assistant's tool calls null when its calls repeat them (a round without calls keeps its
    empty list, so a null always means "the calls"), the names of the tools it offered `true` when they are the
    names of the tools it sent, the tools it sent as the number of an earlier round that sent the same (the same
    tools go out every round until the cap), and its calls as a table."""
    try:
        said = _said_calls(round_)
        if said and _same(round_["assistant"]["tool_calls"], said):
            round_ = {**round_, "assistant": {**round_["assistant"], "tool_calls": None}}
    except (KeyError, TypeError):
        pass
    sent = round_.get("tools_sent")
    offered = round_.get("tools_offered")
    if form >= 2 and isinstance(sent, list) and isinstance(offered, list) and _same(offered, _sent_names(sent)):
        round_ = {**round_, "tools_offered": True}
    if sent is not None:
        same = next((number for number, other in enumerate(earlier) if _same(other.get("tools_sent"), sent)), None)
        if same is not None:
            round_ = {**round_, "tools_sent": same}
    if isinstance(round_.get("calls"), list):
        round_ = {**round_, "calls": _as_table(round_["calls"])}
    return round_


def _compact_rounds(rounds, form):
    """The rounds as a table; when every round's calls are a table with the same keys, those keys are named once,
    as the table's "call_keys", and each round keeps only its calls' rows."""
    if not all(isinstance(round_, dict) for round_ in rounds):
        return rounds
    table = _as_table([_compact_round(round_, rounds[:number], form) for number, round_ in enumerate(rounds)])
    if not isinstance(table, dict):
        return table
    column = table["keys"].index("calls") if "calls" in table["keys"] else None
    calls = [row[column] for row in table["rows"]] if column is not None else []
    tables = [value for value in calls if isinstance(value, dict)]
    if tables and all(value["keys"] == tables[0]["keys"] for value in tables):
        table["call_keys"] = tables[0]["keys"]
        for row in table["rows"]:
            if isinstance(row[column], dict):
                row[column] = {"rows": row[column]["rows"]}
    return table


def _full_rounds(stored):
    call_keys = stored.get("call_keys") if isinstance(stored, dict) else None
    rounds = []
    for round_ in _from_table(stored):
        if isinstance(round_, dict):
            if isinstance(round_.get("calls"), dict):
                calls = round_["calls"]
                round_ = {**round_, "calls": _from_table({"keys": calls.get("keys", call_keys), "rows": calls["rows"]})}
            if type(round_.get("tools_sent")) is int:
                round_ = {**round_, "tools_sent": rounds[round_["tools_sent"]]["tools_sent"]}
            if round_.get("tools_offered") is True:
                round_ = {**round_, "tools_offered": _sent_names(round_["tools_sent"])}
            assistant = round_.get("assistant")
            if isinstance(assistant, dict) and assistant.get("tool_calls", []) is None and round_.get("calls"):
                round_ = {**round_, "assistant": {**assistant, "tool_calls": _said_calls(round_)}}
        rounds.append(round_)
    return rounds


def _rebuilt_transcript(run):
    """The transcript messages that the rest of the run implies, in order. Retrieved context is not among them:
    the documents may have changed since."""
    messages = []
    try:
        system_prompt = (run.get("agent") or {}).get("system_prompt")
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": run.get("message")})
        for round_ in run.get("rounds") or []:
            messages.append(_assistant_message(round_["assistant"]))
            for call in round_["calls"]:
                content = (call.get("artifact") or call["output"]) if call["status"] == "executed" else call["message"]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
            if round_.get("reminder"):
                messages.append({"role": "system", "content": round_["reminder"]})
    except (AttributeError, KeyError, TypeError):  # a shape this module does not know: rebuild what came before
        pass
    return messages


def _compact_transcript(messages, rebuilt):
    """`messages` with each one that is the next rebuilt message replaced by null."""
    compact, position = [], 0
    for message in messages:
        if position < len(rebuilt) and _same(message, rebuilt[position]):
            compact.append(None)
            position += 1
        else:
            compact.append(message)
    return compact


def _full_transcript(compact, rebuilt):
    position, messages = 0, []
    for message in compact:
        if message is None:
            message = rebuilt[position]
            position += 1
        messages.append(message)
    return messages


def stored_row(run, form=FORM):
    """The runs row for `run` (without `id` and `created_at`): the listing columns, the agent snapshot and
    `result`, the rest of the run, in the stored `form` (FORMS; a migration step names the form of its time)."""
    result = {key: value for key, value in run.items() if key not in ("id", "created_at")}
    row = {
        "agent_id": run.get("agent_id"),
        "message": run.get("message"),
        "stop_reason": run.get("stop_reason"),
        "answer": run.get("answer"),
        "tool_calls": run.get("tool_calls", 0),
        "rejected_calls": run.get("rejected_calls", 0),
        "duration_ms": run.get("duration_ms"),
        "overrides": _compact_json(run.get("overrides")),
        "agent_snapshot": _compact_json(run.get("agent")),
    }
    for key in (*TEXT_COLUMNS, *INTEGER_COLUMNS, *REAL_COLUMNS, *JSON_COLUMNS):
        if key in result and _column_keeps(key, result[key]):
            result[key] = None
    if isinstance(run.get("messages"), list):
        result["messages"] = _compact_transcript(run["messages"], _rebuilt_transcript(run))
    if isinstance(run.get("rounds"), list):
        result["rounds"] = _compact_rounds(run["rounds"], form)
    row["result"] = _compact_json(result)
    return row


def run_from_row(row):
    """The run as the engine returned it, with its `id` and `created_at`."""
    run = {"id": row["id"]}
    run.update(json.loads(row["result"]))
    for key in (*TEXT_COLUMNS, *INTEGER_COLUMNS, *REAL_COLUMNS):
        if key in run and run[key] is None:
            run[key] = row[key]
    for key, column in JSON_COLUMNS.items():
        if key in run and run[key] is None:
            run[key] = json.loads(row[column])
    if isinstance(run.get("rounds"), (list, dict)):
        run["rounds"] = _full_rounds(run["rounds"])
    if isinstance(run.get("messages"), list):
        run["messages"] = _full_transcript(run["messages"], _rebuilt_transcript(run))
    run["created_at"] = row["created_at"]
    return run
