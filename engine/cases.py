"""Regression cases: a recorded run becomes a script and an expectation, replayed against the agent as it is now
(SPEC §8, "Regression cases").

A case holds the user message, the overrides the run used, the **script** the model played — rebuilt from the
assistant messages of the run's transcript, so every argument is the string the model sent, malformed ones
included — the reviewers' **decisions** on the calls that required approval (inputs of the run as much as the
model's answers), and the **expectation**: the stop reason, the answer, and per round and call the status, reason and
message. Replaying runs `run_agent` with the scripted model playing that script; `compare_outcome` says which
pinned expectations still hold. Pure: no Flask, no database.
"""

import copy
import json
import re

from .approvals import TIMED_OUT, Decision
from .config import (
    ID_RULE,
    MESSAGE_MAX,
    SCRIPTED_PROVIDER,
    ValidationError,
    check_script,
    check_text,
    is_valid_id,
)
from .loop import run_agent
from .providers import MAX_RESPONSE_MB
from .proxy.recording import PROXY_SOURCE
from .proxy.replay import client_from_run, client_problem, play_client
from .round import ANSWERED, AWAITING_CLIENT, RETURN_DIRECTLY, ROUND_CAP
from .scripted import REFERENCE, resolve_references
from .types import AWAITING, AWAITING_APPROVAL, ERROR, EXECUTED, REJECTED

NAME_MAX = 200
CASE_FIELDS = ("agent_id", "name", "message", "overrides", "script", "decisions", "expected", "unpinned", "client")
# `client`: for a proxied run, the client's part (engine.proxy.replay), which a replay plays; None for the others.
OPTIONAL_FIELDS = {"overrides": {}, "decisions": {}, "unpinned": [], "client": None}
EXPECTED_FIELDS = ("stop_reason", "answer", "rounds")
EXPECTED_CALL_FIELDS = ("id", "name", "status", "reason", "message")
CALL_FIELDS = ("status", "reason", "message")  # what a case pins of each call
CALL_STATUSES = (EXECUTED, REJECTED, ERROR)
REPLAYABLE_STOP_REASONS = (ANSWERED, ROUND_CAP, RETURN_DIRECTLY)
REPLAY_OVERRIDES = ("provider", "script")  # a replay sets these itself, so a run's overrides of them are not kept

# A tool message that is one identifier (a UUID, say). When a later call's arguments repeat it, the model took it
# from that result: the script says so with a {{CALL_ID}} reference, so that a replay passes on the identifier the
# tool returns then, not the one it returned in the recorded run.
IDENTIFIER = re.compile(r"(?=\S*\d)[\w\-.:]{8,}", re.ASCII)


def replay_refusal(run):
    """Why the scripted model could not replay this run, or None when it can."""
    reason = run.get("stop_reason")
    if run.get("source") == PROXY_SOURCE and "client" not in run:
        return "it came through the policy proxy before proxied runs kept what the client sent"
    if reason == AWAITING_CLIENT:
        return "the client never sent back the results of the calls it was handed last"
    if any((call.get("review") or {}).get("decision") == TIMED_OUT for call in _calls(run)):
        return "no one decided one of its calls within the approval timeout, and a replay cannot wait for that"
    if reason in REPLAYABLE_STOP_REASONS:
        return None
    if reason == "error":
        return "it stopped on a provider error, and the scripted model never fails"
    if reason == "tools_disabled":
        return "the model called tools on a request that offered none, and the scripted model never does"
    if reason is None:
        return "it has not ended"
    if reason == "stopped":
        return "a person stopped it, and a replay cannot"
    return f'it stopped with "{reason}", which the scripted model cannot play'


def _calls(run):
    return [call for round_ in run.get("rounds") or [] for call in round_.get("calls") or []]


def expectation_key(round_number, position, field):
    """The key of one pinned expectation: "rounds/N/I/FIELD" is FIELD of the I-th call of round N."""
    return f"rounds/{round_number}/{position}/{field}"


def expectation_from_run(run):
    """What a run decided: its stop reason, its answer, and each call's verdict in the rounds that had calls."""
    return {
        "stop_reason": run["stop_reason"],
        "answer": run.get("answer"),
        "rounds": [
            {
                "number": round_["number"],
                "calls": [{key: call.get(key) for key in EXPECTED_CALL_FIELDS} for call in round_["calls"]],
            }
            for round_ in run["rounds"]
            if round_["calls"]
        ],
    }


def expectation_values(expected):
    """Every expectation a case can pin, by key: "stop_reason", "answer" and expectation_key(...) for each call."""
    values = {"stop_reason": expected["stop_reason"], "answer": expected["answer"]}
    for round_ in expected["rounds"]:
        for position, call in enumerate(round_["calls"], start=1):
            for field in CALL_FIELDS:
                values[expectation_key(round_["number"], position, field)] = call[field]
    return values


def _with_references(raw, results):
    identifiers = {}
    for call_id, content in results.items():
        if IDENTIFIER.fullmatch(content) and REFERENCE.fullmatch("{{" + call_id + "}}"):
            identifiers.setdefault(content, call_id)
    if not identifiers:
        return raw
    alternatives = "|".join(re.escape(value) for value in sorted(identifiers, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w\-.:])(?:{alternatives})(?![\w\-.:])", re.ASCII)
    return pattern.sub(lambda match: "{{" + identifiers[match.group(0)] + "}}", raw)


def _script_arguments(raw, results):
    """The arguments of a script call that make the scripted model send exactly `raw` again: an object when
    it would serialise to `raw`, else the string itself."""
    text = _with_references(raw, results)
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and json.dumps(resolve_references(value, results)) == raw:
        return value
    return text


def _script_item(assistant, results, original_ids):
    calls = assistant.get("tool_calls") or []
    if not calls:
        return {"content": assistant.get("content") or ""}
    item = {"content": assistant["content"]} if assistant.get("content") else {}
    item["tool_calls"] = []
    for call in calls:
        sent_id = original_ids.get(call.get("id")) or call.get("id")
        entry = {"id": sent_id} if sent_id else {}
        entry["name"] = call["function"]["name"]
        entry["arguments"] = _script_arguments(call["function"]["arguments"], results)
        item["tool_calls"].append(entry)
    return item


def script_from_run(run):
    """The script the model played in this run: one item per assistant message of the transcript, with the ids
    the model sent (a repaired id's `original_id`, so the replay repairs it again; a missing id stays the
    repaired one, since the scripted model always sends one)."""
    original_ids = {
        call["id"]: call.get("original_id") for round_ in run.get("rounds") or [] for call in round_.get("calls") or []
    }
    script, results = [], {}
    for message in run["messages"]:
        if message.get("role") == "assistant":
            script.append(_script_item(message, results, original_ids))
        elif message.get("role") == "tool" and message.get("tool_call_id"):
            results[message["tool_call_id"]] = message.get("content") or ""
    return script


def decisions_from_run(run):
    """The reviewers' decisions of the run, by call id, in the form a run takes them (engine.approvals)."""
    decisions = {}
    for round_ in run["rounds"]:
        for call in round_["calls"]:
            review = call.get("review")
            if review is None:
                continue
            if review["decision"] == "rejected":
                decisions[call["id"]] = {"reject": review["reason"] or ""}
            elif review["arguments"] is not None:
                decisions[call["id"]] = {"approve": True, "arguments": copy.deepcopy(review["arguments"])}
            else:
                decisions[call["id"]] = {"approve": True}
    return decisions


def case_from_run(run, name):
    """A case that expects what this run did. The answer is not pinned when a tool's output was returned as it
    (a fresh UUID, say, differs on every run). Raises ValidationError on `run` when it cannot be replayed."""
    refusal = replay_refusal(run)
    if refusal:
        raise ValidationError({"run": f"cannot become a case: {refusal}"})
    return {
        "agent_id": run["agent_id"],
        "name": name,
        "message": run["message"],
        "overrides": {
            key: copy.deepcopy(value)
            for key, value in (run.get("overrides") or {}).items()
            if key not in REPLAY_OVERRIDES
        },
        "script": script_from_run(run),
        "decisions": decisions_from_run(run),
        "expected": expectation_from_run(run),
        "unpinned": ["answer"] if run["stop_reason"] == RETURN_DIRECTLY else [],
        "client": client_from_run(run) if run.get("source") == PROXY_SOURCE else None,
    }


def _check_optional_text(errors, value, key):
    if value is not None and not isinstance(value, str):
        errors[key] = "must be a string or null"


def _check_fields(errors, data, allowed, where):
    """Unknown and missing keys of one object of the expectation."""
    for key in data:
        if key not in allowed:
            errors[f"{where}.{key}"] = "is not a field here"
    for key in allowed:
        if key not in data:
            errors[f"{where}.{key}"] = "is required"


def _check_call(errors, call, where):
    if not isinstance(call, dict):
        errors[where] = "must be an object with id, name, status, reason and message"
        return
    _check_fields(errors, call, EXPECTED_CALL_FIELDS, where)
    for key in ("id", "name"):
        if key in call and not isinstance(call[key], str):
            errors[f"{where}.{key}"] = "must be a string"
    if "status" in call and call["status"] not in CALL_STATUSES:
        errors[f"{where}.status"] = f"must be one of: {', '.join(CALL_STATUSES)}"
    for key in ("reason", "message"):
        _check_optional_text(errors, call.get(key), f"{where}.{key}")


def _text_bytes(texts):
    return sum(len(text.encode("utf-8", "surrogatepass")) for text in texts if isinstance(text, str))


def _too_large(size, what):
    """A case holding a model answer larger than a run takes could never pass: such an answer ends the run."""
    if size <= MAX_RESPONSE_MB * 1024 * 1024:
        return None
    return (
        f"{what} is larger than {MAX_RESPONSE_MB} MB ({size:,} bytes of text): a model answer that large ends a run "
        "with an error, so this case could never pass"
    )


def _check_script_sizes(errors, script):
    for index, item in enumerate(script, start=1):
        texts = [item.get("content")]
        for call in item.get("tool_calls", []):
            arguments = call.get("arguments", {})
            texts += [call.get("id"), call["name"], arguments if isinstance(arguments, str) else json.dumps(arguments)]
        problem = _too_large(_text_bytes(texts), f"response {index}")
        if problem:
            errors["script"] = problem
            return


def _check_expected(errors, expected):
    if not isinstance(expected, dict):
        errors["expected"] = "must be an object with stop_reason, answer and rounds"
        return
    _check_fields(errors, expected, EXPECTED_FIELDS, "expected")
    if "stop_reason" in expected and expected["stop_reason"] not in REPLAYABLE_STOP_REASONS:
        errors["expected.stop_reason"] = f"must be one of: {', '.join(REPLAYABLE_STOP_REASONS)}"
    _check_optional_text(errors, expected.get("answer"), "expected.answer")
    if expected.get("stop_reason") != RETURN_DIRECTLY:  # then the answer is the model's, not a tool's output
        problem = _too_large(_text_bytes([expected.get("answer")]), "it")
        if problem:
            errors["expected.answer"] = problem
    rounds = expected.get("rounds", [])
    if not isinstance(rounds, list):
        errors["expected.rounds"] = "must be a list of rounds"
        return
    previous = 0
    for index, round_ in enumerate(rounds, start=1):
        where = f"expected.rounds.{index}"
        if not isinstance(round_, dict):
            errors[where] = "must be an object with number and calls"
            continue
        _check_fields(errors, round_, ("number", "calls"), where)
        number = round_.get("number")
        if not isinstance(number, int) or isinstance(number, bool) or number <= previous:
            errors[f"{where}.number"] = f"must be a whole number greater than {previous}"
        else:
            previous = number
        calls = round_.get("calls", [])
        if not isinstance(calls, list) or not calls:
            errors[f"{where}.calls"] = "must be a non-empty list of calls"
            continue
        for position, call in enumerate(calls, start=1):
            _check_call(errors, call, f"{where}.calls.{position}")


def _check_decisions(errors, decisions):
    if not isinstance(decisions, dict):
        errors["decisions"] = "must be an object mapping call ids to decisions"
        return
    for call_id, decision in decisions.items():
        try:
            Decision.from_json(decision, f"decisions.{call_id}")
        except ValidationError as error:
            errors.update(error.errors)


def validate_case(data):
    """A case's JSON form, checked, with the optional fields filled in. Raises ValidationError naming every bad
    field (`expected.rounds.2.calls.1.status`: the status of the first call of the second listed round)."""
    if not isinstance(data, dict):
        raise ValidationError({"case": "must be a JSON object"})
    case = {**copy.deepcopy(OPTIONAL_FIELDS), **copy.deepcopy(data)}
    errors = {}
    for key in case:
        if key not in CASE_FIELDS:
            errors[key] = "is not a case field"
    for key in CASE_FIELDS:
        if key not in case:
            errors[key] = "is required"
    if "agent_id" in case and not is_valid_id(case["agent_id"]):
        errors["agent_id"] = ID_RULE
    if "name" in case:
        check_text(errors, case, "name", NAME_MAX, required=True, one_line=True)
    if "message" in case:
        check_text(errors, case, "message", MESSAGE_MAX, required=True)
    if not isinstance(case["overrides"], dict):
        errors["overrides"] = "must be an object of agent fields and tool settings"
    if "script" in case:
        script_error = check_script(case["script"])
        if script_error:
            errors["script"] = script_error
        else:
            _check_script_sizes(errors, case["script"])
    _check_decisions(errors, case["decisions"])
    client = client_problem(case["client"]) if case["client"] is not None else None
    if client:
        errors[client[0]] = client[1]
    if "expected" in case:
        _check_expected(errors, case["expected"])
    if not isinstance(case["unpinned"], list) or not all(isinstance(key, str) for key in case["unpinned"]):
        errors["unpinned"] = "must be a list of expectation keys"
    elif not any(key.startswith("expected") for key in errors) and "expected" in case:
        known = expectation_values(case["expected"])
        unknown = [key for key in case["unpinned"] if key not in known]
        if unknown:
            errors["unpinned"] = f'"{unknown[0]}" is not an expectation of this case'
    if errors:
        raise ValidationError(errors)
    case["name"] = case["name"].strip()
    case["unpinned"] = list(dict.fromkeys(case["unpinned"]))
    return case


def replay_overrides(case):
    """The overrides of a replay: the case's own, with the scripted model playing the case's script."""
    return {**copy.deepcopy(case["overrides"]), "provider": SCRIPTED_PROVIDER, "script": copy.deepcopy(case["script"])}


def _shown(value):
    return "null" if value is None else json.dumps(value, ensure_ascii=False)


def _verdict(call):
    return f"{call['status']} ({call['reason']})" if call["reason"] else call["status"]


def _call_label(round_number, call):
    return f"round {round_number}, {call['id']} ({call['name']})"


def _compare_round(number, expected_calls, actual_calls, unpinned, differences):
    calls = []
    for position in range(1, max(len(expected_calls), len(actual_calls)) + 1):
        expected = expected_calls[position - 1] if position <= len(expected_calls) else None
        actual = actual_calls[position - 1] if position <= len(actual_calls) else None
        pinned = [field for field in CALL_FIELDS if expectation_key(number, position, field) not in unpinned]
        if expected is None:
            differs = list(CALL_FIELDS)
            differences.append(f"{_call_label(number, actual)}: made, but not expected ({_verdict(actual)})")
        elif actual is None:
            differs = pinned
            if pinned:
                differences.append(f"{_call_label(number, expected)}: expected {_verdict(expected)}, but not made")
        else:
            differs = [field for field in pinned if expected[field] != actual[field]]
            if "status" in differs or "reason" in differs:
                differences.append(
                    f"{_call_label(number, expected)}: expected {_verdict(expected)}, got {_verdict(actual)}"
                )
            elif "message" in differs:
                differences.append(
                    f"{_call_label(number, expected)}: message expected {_shown(expected['message'])}, "
                    f"got {_shown(actual['message'])}"
                )
        calls.append(
            {
                "position": position,
                "expected": expected,
                "actual": actual,
                "pinned": pinned if expected is not None else [],
                "differs": differs,
            }
        )
    return {"number": number, "calls": calls, "differs": any(call["differs"] for call in calls)}


def compare_outcome(case, run):
    """The case's expectation against what the replay `run` did, round by round and call by call (calls are
    matched by their place in the round). `passed` is true when every pinned expectation holds and no call was
    made that the case does not expect; `differences` says what does not, one line each."""
    expected, actual = case["expected"], expectation_from_run(run)
    unpinned = set(case["unpinned"])
    differences = []
    outcome = {}
    for key, label in (("stop_reason", "stop reason"), ("answer", "answer")):
        pinned = key not in unpinned
        differs = pinned and expected[key] != actual[key]
        if differs:
            differences.append(f"{label}: expected {_shown(expected[key])}, got {_shown(actual[key])}")
        outcome[key] = {"expected": expected[key], "actual": actual[key], "pinned": pinned, "differs": differs}
    expected_rounds = {round_["number"]: round_["calls"] for round_ in expected["rounds"]}
    actual_rounds = {round_["number"]: round_["calls"] for round_ in actual["rounds"]}
    rounds = [
        _compare_round(number, expected_rounds.get(number, []), actual_rounds.get(number, []), unpinned, differences)
        for number in sorted(set(expected_rounds) | set(actual_rounds))
    ]
    return {"passed": not differences, "error": None, "differences": differences, **outcome, "rounds": rounds}


def failed_check(error):
    """The result of a check that could not replay the case at all."""
    return {"passed": False, "error": error, "differences": [error], "stop_reason": None, "answer": None, "rounds": []}


def check_case(agent, case, **options):
    """Replay the case against `agent` (its JSON form, as stored now) and compare with the expectation.
    `options` go to run_agent (documents, registry...). A case the agent can no longer run (a tool it names was
    removed, say) fails with that reason."""
    try:
        if case["client"] is not None:
            run = play_client(agent, case["client"], replay_overrides(case), options.get("registry"))
        else:
            run = run_agent(agent, case["message"], replay_overrides(case), decisions=case["decisions"], **options)
    except ValidationError as error:
        return failed_check(f"The case cannot run against the agent as it is now: {error}")
    outcome = compare_outcome(case, run)
    if run.get("state") == AWAITING:
        pending = run["pending_round"]
        waiting = [call["id"] for call in pending["calls"] if call["status"] == AWAITING_APPROVAL]
        undecided = ", ".join(call_id for call_id in waiting if call_id not in case["decisions"])
        difference = f"round {pending['number']}: waits for approval of {undecided}, which the case has no decision on"
        outcome = {**outcome, "passed": False, "differences": [*outcome["differences"], difference]}
    return {**outcome, "agent_revision": agent.get("revision"), "duration_ms": run["duration_ms"]}
