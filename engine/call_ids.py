"""Tool-call ids repaired before the gate (SPEC §4).

Every tool message answers one `tool_call_id`, so an id must be unique in the run. Real servers send no id, an
empty one, the same id for two parallel calls, or an id they used in an earlier round; answering such an id twice
makes the next request invalid. Each of those calls gets a fresh id, which the transcript uses from then on, and
keeps the one the model sent as `original_id`.
"""

from dataclasses import replace


def repair_call_ids(calls, round_number, used_ids):
    """The calls of one response with ids unique in the run. `used_ids` (a set of every id the run has sent back
    so far) gains this response's ids."""
    reserved = used_ids | {call.id for call in calls if call.id}
    repaired = []
    for index, call in enumerate(calls, start=1):
        if call.id and call.id not in used_ids:
            used_ids.add(call.id)
            repaired.append(call)
            continue
        fresh = _fresh_id(f"repaired_{round_number}_{index}", reserved)
        reserved.add(fresh)
        used_ids.add(fresh)
        repaired.append(replace(call, id=fresh, original_id=call.id or ""))
    return tuple(repaired)


def _fresh_id(base, taken):
    candidate, suffix = base, 2
    while candidate in taken:
        candidate, suffix = f"{base}_{suffix}", suffix + 1
    return candidate
