"""Approvals (SPEC §3 `require_approval`): a response whose calls passed the gate and include a call of a tool that
requires approval runs nothing until a person has decided on each such call.

A decision, as the API and the loop state spell it: `{"approve": true}`, `{"approve": true, "arguments": {...}}`
(approved with the reviewer's arguments in place of the model's) or `{"reject": "reason"}` (the reason may be
empty). The round that waits keeps the gate's verdicts and the decisions taken so far, as plain JSON, each with
when it was taken (`decided_at`, Unix time in seconds, as a round's `started_at`): the caller hands the time in
(`now`) when the decision is read, no client sends it. A round's review of a call says who decided, and when.
"""

from dataclasses import dataclass, field, replace

from . import texts
from .config import DESCRIPTION_MAX, ValidationError
from .gate import Verdict, review_edited_arguments
from .types import ALLOWED, AWAITING_APPROVAL, CallRecord, Round, ToolCall
from .types import REJECTED as CALL_REJECTED

REVIEWER = "a reviewer"  # who decided, until there are logins
APPROVED = "approved"
REJECTED = "rejected"
REVIEWER_REJECTED = "reviewer_rejected"  # the reason of a call a reviewer rejected
APPROVAL_TIMEOUT = "approval_timeout"  # the reason of a call no one decided on within approval_timeout_seconds
TIMED_OUT = "timed_out"  # what the round records of such a call's review
DECISION_RULE = 'must be {"approve": true}, {"approve": true, "arguments": {...}} or {"reject": "reason"}'


@dataclass(frozen=True)
class Decision:
    approve: bool
    arguments: dict | None = None  # the reviewer's arguments in place of the model's (approved calls only)
    reason: str = ""  # why a reviewer rejected the call
    by: str = REVIEWER
    at: float | None = None  # when it was taken (Unix time, seconds); None in a state stored before it was kept

    @classmethod
    def from_json(cls, data, where):
        """A decision in its JSON form; ValidationError on `where` when it is not one."""
        if not isinstance(data, dict) or set(data) not in ({"approve"}, {"approve", "arguments"}, {"reject"}):
            raise ValidationError({where: DECISION_RULE})
        if "reject" in data:
            reason = data["reject"]
            if not isinstance(reason, str):
                raise ValidationError({where: "the reason of a rejection must be a string (empty for none)"})
            if len(reason) > DESCRIPTION_MAX:
                raise ValidationError({where: f"the reason must be at most {DESCRIPTION_MAX:,} characters"})
            return cls(False, reason=reason.strip())
        if data["approve"] is not True:
            raise ValidationError({where: DECISION_RULE})
        if "arguments" in data and not isinstance(data["arguments"], dict):
            raise ValidationError({f"{where}.arguments": "must be a JSON object of the tool's arguments"})
        return cls(True, arguments=data.get("arguments"))

    def to_json(self):
        if not self.approve:
            return {"reject": self.reason}
        return {"approve": True, "arguments": self.arguments} if self.arguments is not None else {"approve": True}

    def taken_at(self, now):
        """The decision, taken at `now` (Unix time, seconds)."""
        return replace(self, at=round(now, 3))

    def to_state(self):
        """The JSON form with when it was taken, as a waiting round keeps it."""
        return {**self.to_json(), "decided_at": self.at} if self.at is not None else self.to_json()

    @classmethod
    def from_state(cls, data, where):
        decision = cls.from_json({key: value for key, value in data.items() if key != "decided_at"}, where)
        return replace(decision, at=data.get("decided_at"))

    def review(self):
        """What the round records of the decision."""
        return {
            "decision": APPROVED if self.approve else REJECTED,
            "by": self.by,
            "reason": self.reason or None,
            "arguments": self.arguments,
            "decided_at": self.at,
        }


def _verdict_state(verdict):
    return {
        "call": verdict.call.to_state(),
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "message": verdict.message,
        "arguments": verdict.arguments,
        "forced_arguments": verdict.forced_arguments,
        "replaced_placeholders": list(verdict.replaced_placeholders),
    }


def _verdict_from_state(data):
    return Verdict(
        **{
            **data,
            "call": ToolCall.from_state(data["call"]),
            "replaced_placeholders": tuple(data["replaced_placeholders"]),
        }
    )


@dataclass(frozen=True)
class PendingRound:
    """A round whose response passed the gate but waits for decisions: nothing of it has run."""

    round: Round  # the response; no calls recorded yet
    verdicts: tuple  # the gate's, in response order
    awaiting: tuple  # the ids of the calls that need a decision, in response order
    decisions: dict = field(default_factory=dict)  # call id -> Decision, taken so far

    def undecided(self):
        return [call_id for call_id in self.awaiting if call_id not in self.decisions]

    def with_decisions(self, decisions):
        return replace(self, decisions={**self.decisions, **decisions})

    def view(self, progress_message):
        """The round as the run shows it while it waits: each call with the gate's verdict, and for the calls
        that need a decision, the one taken so far."""
        calls = []
        for verdict in self.verdicts:
            call = verdict.call
            decision = self.decisions.get(call.id)
            status = AWAITING_APPROVAL if call.id in self.awaiting else ALLOWED if verdict.allowed else CALL_REJECTED
            calls.append(
                CallRecord(
                    call,
                    status,
                    verdict.reason,
                    verdict.message,
                    forced_arguments=verdict.forced_arguments,
                    replaced_placeholders=verdict.replaced_placeholders,
                    progress_message=progress_message(call.name),
                    review=decision.review() if decision else None,
                )
            )
        return replace(self.round, calls=tuple(calls))

    def to_state(self):
        return {
            "round": self.round.to_json(),
            "verdicts": [_verdict_state(verdict) for verdict in self.verdicts],
            "awaiting": list(self.awaiting),
            "decisions": {call_id: decision.to_state() for call_id, decision in self.decisions.items()},
        }

    @classmethod
    def from_state(cls, data):
        return cls(
            round=Round.from_json(data["round"]),
            verdicts=tuple(_verdict_from_state(verdict) for verdict in data["verdicts"]),
            awaiting=tuple(data["awaiting"]),
            decisions={
                call_id: Decision.from_state(decision, f"decisions.{call_id}")
                for call_id, decision in data["decisions"].items()
            },
        )


def read_decisions(data, pending, now):
    """{call id: Decision} from the JSON form {"<call id>": decision}, for calls of `pending` that need one, taken
    at `now` (Unix time, seconds). Raises ValidationError naming the first call that is not awaiting a decision or
    whose decision is not one."""
    if not isinstance(data, dict):
        raise ValidationError({"decisions": "must be an object mapping call ids to decisions"})
    decisions = {}
    for call_id, decision in data.items():
        if call_id not in pending.awaiting:
            awaiting = ", ".join(pending.awaiting)
            raise ValidationError({f"decisions.{call_id}": f"is not a call awaiting approval (awaiting: {awaiting})"})
        decisions[call_id] = Decision.from_json(decision, f"decisions.{call_id}").taken_at(now)
    return decisions


def decided_verdicts(pending, config, registry, timeout_seconds, deadline):
    """(the verdicts of a held round with its decisions applied, {call id: review}) — for a response held outside
    the loop (the proxy, the gate API): an approved call keeps the gate's verdict, an edited one the verdict on the
    reviewer's arguments (`config`, `registry`: the tools the gate reviewed against), a rejected one the reviewer's
    rejection, and one still undecided is rejected as not decided within `timeout_seconds`, at the `deadline` it
    waited until (Unix time, seconds): no person decided it, the clock did."""
    verdicts, reviews = [], {}
    for verdict in pending.verdicts:
        call = verdict.call
        if call.id in pending.awaiting:
            decision = pending.decisions.get(call.id)
            if decision is None:
                message = texts.APPROVAL_TIMED_OUT.format(seconds=timeout_seconds)
                verdict = Verdict(call, False, APPROVAL_TIMEOUT, message)
                reviews[call.id] = {
                    "decision": TIMED_OUT,
                    "by": None,
                    "reason": None,
                    "arguments": None,
                    "decided_at": round(deadline, 3),
                }
            else:
                reviews[call.id] = decision.review()
                if not decision.approve:
                    verdict = Verdict(call, False, REVIEWER_REJECTED, texts.reviewer_rejected_message(decision.reason))
                elif decision.arguments is not None:
                    edited = review_edited_arguments(call, decision.arguments, config, registry)
                    verdict = replace(edited, forced_arguments=decision.arguments) if edited.allowed else edited
        verdicts.append(verdict)
    return verdicts, reviews
