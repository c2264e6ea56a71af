"""The run charts as server-rendered SVG (templates/runs/_charts.html): the counts of store/run_charts.py turned into
bars with their places and sizes, so the template only draws. No JavaScript: a chart is an image with its numbers in
each bar's title and in words beside it."""

from engine import STOP_REASONS
from services import run_texts
from store import run_charts
from store.runs import ABANDONED, AWAITING_CLIENT

WIDTH, HEIGHT = 360, 150  # of each chart's drawing area, in SVG units
BAR_GAP = 0.25  # of a bar's slot left empty
MIN_SLOTS = 7  # a chart of fewer bars keeps them this narrow, left-aligned
NOT_ENDED = ""  # the stop reason the counts record for a run that has not ended
REASON_ORDER = (*STOP_REASONS, NOT_ENDED)  # the stacking order of a day's bar, bottom up


def _scale(values):
    return max([1, *values])


def _reason_label(reason):
    return run_texts.stop_reason_label(reason) if reason != NOT_ENDED else "Not ended"


def runs_per_day(days):
    """Stacked bars, one per day, one segment per stop reason (bottom up, in STOP_REASONS' order)."""
    reasons = sorted({reason for _day, counts in days for reason in counts}, key=_reason_order)
    top = _scale([sum(counts.values()) for _day, counts in days])
    slot = WIDTH / max(MIN_SLOTS, len(days))
    bars = []
    for index, (day, counts) in enumerate(days):
        y, segments = HEIGHT, []
        for reason in reasons:
            count = counts.get(reason, 0)
            if count:
                height = HEIGHT * count / top
                y -= height
                segments.append(
                    {
                        "reason": reason or "not_ended",
                        "label": _reason_label(reason),
                        "count": count,
                        "y": round(y, 1),
                        "height": round(height, 1),
                    }
                )
        bars.append(
            {
                "day": day,
                "label": day[5:],
                "total": sum(counts.values()),
                "segments": segments,
                "x": round(index * slot + slot * BAR_GAP / 2, 1),
                "width": round(slot * (1 - BAR_GAP), 1),
            }
        )
    legend = [{"reason": reason or "not_ended", "label": _reason_label(reason)} for reason in reasons]
    return {"bars": bars, "legend": legend, "top": top, "total": sum(bar["total"] for bar in bars)}


def _reason_order(reason):
    return REASON_ORDER.index(reason) if reason in REASON_ORDER else len(REASON_ORDER)


def rounds_per_run(rounds):
    """One bar per number of tool rounds from 0 to the most any run used, those no run used included (empty)."""
    counts = dict(rounds)
    rounds = [(used, counts.get(used, 0)) for used in range(max(counts) + 1)] if counts else []
    top = _scale([count for _used, count in rounds])
    slot = WIDTH / max(MIN_SLOTS, len(rounds))
    bars = [
        {
            "label": str(used),
            "count": count,
            "x": round(index * slot + slot * BAR_GAP / 2, 1),
            "width": round(slot * (1 - BAR_GAP), 1),
            "y": round(HEIGHT - HEIGHT * count / top, 1),
            "height": round(HEIGHT * count / top, 1),
        }
        for index, (used, count) in enumerate(rounds)
    ]
    return {"bars": bars, "top": top}


def rejections_per_tool(rejections):
    """One horizontal bar per tool and reason, most rejected first."""
    top = _scale([calls for _tool, _reason, calls in rejections])
    return {
        "bars": [
            {
                "tool": tool,
                "reason": run_texts.reason_text(reason),
                "count": calls,
                "width": round(WIDTH * calls / top, 1),
            }
            for tool, reason, calls in rejections
        ],
        "top": top,
    }


def chart_stop_reason(stop_reason, state):
    """The stop reason the charts filter by for the runs list's filter: a state's runs are those not ended (an
    abandoned run's, those waiting for their client)."""
    if state is None:
        return stop_reason
    return AWAITING_CLIENT if state == ABANDONED else NOT_ENDED


def charts(db, agent_id=None, stop_reason=None, source=None, api=None):
    """The three charts under the runs list's filters."""
    counts = run_charts.run_charts(db, agent_id=agent_id, stop_reason=stop_reason, source=source, api=api)
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "days": runs_per_day(counts["days"]),
        "rounds": rounds_per_run(counts["rounds"]),
        "rejections": rejections_per_tool(counts["rejections"]),
    }
