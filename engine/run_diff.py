"""Two runs side by side: what each round and call did in one and in the other, what differs, and which settings
differ between the agent snapshots they ran with. Pure: it reads two run dicts (SPEC §8 shape)."""

from .config import AGENT_DEFAULTS, TOOL_MAPS, fill_defaults

SUMMARY_FIELDS = ("message", "stop_reason", "answer", "tool_calls", "rejected_calls", "rounds_used", "model_requests")
CALL_FIELDS = ("name", "arguments", "status", "reason", "message", "output")
NOT_A_SETTING = ("revision",)  # changes on every save; the pages show it beside each run instead


def _pair(items, position):
    return items[position] if position < len(items) else None


def _compare_calls(first, second):
    calls = []
    for position in range(max(len(first), len(second))):
        one, other = _pair(first, position), _pair(second, position)
        if one is None or other is None:
            differs = list(CALL_FIELDS)
        else:
            differs = [field for field in CALL_FIELDS if one.get(field) != other.get(field)]
        calls.append({"position": position + 1, "first": one, "second": other, "differs": differs})
    return calls


def _offered(round_):
    """Which tools a request offered; the order follows the agent's tool list, which an edit may reorder."""
    offered = round_.get("tools_offered")
    return None if offered is None else sorted(offered)


def _compare_round(number, one, other):
    differs = []
    if one is None or other is None:
        differs = ["round"]
    else:
        if _offered(one) != _offered(other):
            differs.append("tools_offered")
        if one["assistant"].get("content") != other["assistant"].get("content"):
            differs.append("content")
    calls = _compare_calls((one or {}).get("calls", []), (other or {}).get("calls", []))
    return {
        "number": number,
        "first": one,
        "second": other,
        "calls": calls,
        "differs": differs,
        "any_difference": bool(differs) or any(call["differs"] for call in calls),
    }


def agent_changes(before, after):
    """The settings that differ between two agent snapshots: [{"setting", "before", "after"}], agent fields first,
    then per tool ("tools.NAME" when it was enabled in one only, "tools.NAME.KEY" for a setting), then per client
    tool the same way ("client_tools.NAME…"). Keys missing from an older snapshot count as their defaults."""
    before, after = fill_defaults(before or {}), fill_defaults(after or {})
    changes = []
    for key in ("id", *AGENT_DEFAULTS):
        if key in NOT_A_SETTING or key in TOOL_MAPS:
            continue
        if before.get(key) != after.get(key):
            changes.append({"setting": key, "before": before.get(key), "after": after.get(key)})
    for field, defaults in TOOL_MAPS.items():
        changes += _tool_changes(field, defaults, before.get(field) or {}, after.get(field) or {})
    return changes


def _tool_changes(field, defaults, tools_before, tools_after):
    changes = []
    for name in [*tools_before, *(name for name in tools_after if name not in tools_before)]:
        one, other = tools_before.get(name), tools_after.get(name)
        if one is None or other is None:
            changes.append(
                {
                    "setting": f"{field}.{name}",
                    "before": "enabled" if one is not None else "not enabled",
                    "after": "enabled" if other is not None else "not enabled",
                }
            )
            continue
        keys = [*defaults, *(key for key in {**one, **other} if key not in defaults)]
        changes += [
            {"setting": f"{field}.{name}.{key}", "before": one.get(key), "after": other.get(key)}
            for key in keys
            if one.get(key) != other.get(key)
        ]
    return changes


def compare_runs(first, second):
    """Both runs round by round (by number) and call by call (by place in the round), each difference named:
    {"summary": [{"field", "first", "second", "differs"}], "rounds": [...], "agent_changes": [...],
    "identical": bool}."""
    summary = [{"field": field, "first": first.get(field), "second": second.get(field)} for field in SUMMARY_FIELDS]
    for entry in summary:
        entry["differs"] = entry["first"] != entry["second"]
    first_rounds = {round_["number"]: round_ for round_ in first.get("rounds", [])}
    second_rounds = {round_["number"]: round_ for round_ in second.get("rounds", [])}
    rounds = [
        _compare_round(number, first_rounds.get(number), second_rounds.get(number))
        for number in sorted(set(first_rounds) | set(second_rounds))
    ]
    changes = agent_changes(first.get("agent"), second.get("agent"))
    identical = not changes and not any(entry["differs"] for entry in summary)
    identical = identical and not any(round_["any_difference"] for round_ in rounds)
    return {"summary": summary, "rounds": rounds, "agent_changes": changes, "identical": identical}
