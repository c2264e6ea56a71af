"""The run panel (templates/runs/_run.html) read as a person reads it: the texts shown, found through the panel's
`data-testid` hooks in the tree of tests/html_reader.py, so a test asserts on what the page says and a change of
markup breaks only this reader.

Where colour carries meaning (a rejected call, a round with rejections, the count of rejected calls), the reader
also gives the mark the stylesheet colours."""

from dataclasses import dataclass

from tests.html_reader import parse_html


@dataclass(frozen=True)
class Call:
    id: str
    tool: str
    arguments: str
    status: str
    status_mark: str  # the status the stylesheet colours: executed, rejected or error
    reason: str | None
    sent_back: str | None  # the tool message: an executed call's output (or artifact), another's message; none yet
    progress: str | None
    forced: list[str]  # one line per argument a rule forced
    replaced: str | None  # the artifact placeholders replaced in the arguments


@dataclass(frozen=True)
class Round:
    verdict: str
    verdict_mark: str  # rejected, executed, reminder or answer
    tools_offered: str
    model_saw: str  # the disclosure of the tools the request sent, as its text reads
    tools_sent: str | None  # the JSON in it
    model_said: str
    calls: list[Call]
    reminder: str | None


@dataclass(frozen=True)
class TranscriptMessage:
    role: str
    answers: str | None  # the call id a tool message answers
    text: str


@dataclass(frozen=True)
class RunPanel:
    text: str  # the whole panel
    message: str
    answer: str
    alerts: list[str]
    facts: dict[str, str]
    highlighted_facts: list[str]
    headings: list[str]
    rounds: list[Round]
    artifacts: list[str]
    layout: list[str]  # the canvas components, in the order of the tree
    transcript_summary: str
    transcript: list[TranscriptMessage]
    tags: set[str]  # every element in the panel: model or tool text that is not escaped would add some


def read_run_panel(html):
    """The one run on a page (the whole page, or the htmx fragment)."""
    panel = parse_html(html).one("run")
    facts = _facts(panel.one("facts"))
    transcript = panel.one("transcript")
    layout = panel.optional("layout")
    return RunPanel(
        text=panel.text,
        message=panel.one("message").text,
        answer=panel.one("answer").text,
        alerts=[element.text for element in panel.elements() if element.attrs.get("role") == "alert"],
        facts={name: value.text for name, value in facts},
        highlighted_facts=[name for name, value in facts if "has-rejections" in value.classes],
        headings=[element.text for element in panel.elements() if element.tag in ("h2", "h3")],
        rounds=[_round(section) for section in panel.all("round")],
        artifacts=[item.text for item in panel.all("artifact")],
        layout=[component.text for component in layout.all("component")] if layout else [],
        transcript_summary=next(element.text for element in transcript.elements() if element.tag == "summary"),
        transcript=[_transcript_message(item) for item in transcript.all("transcript-message")],
        tags={element.tag for element in panel.elements()},
    )


def _facts(facts):
    """(name, value element) for each <dt>/<dd> pair, in order."""
    terms = [element for element in facts.elements() if element.tag in ("dt", "dd")]
    return [(term.text, value) for term, value in zip(terms[::2], terms[1::2], strict=True)]


def _round(section):
    verdict = section.one("verdict")
    tools_sent = section.optional("tools-sent")
    reminder = section.optional("reminder")
    return Round(
        verdict=verdict.text,
        verdict_mark=next(name for name in verdict.classes if name != "round-verdict"),
        tools_offered=section.one("tools-offered").text,
        model_saw=section.one("model-saw").text,
        tools_sent=tools_sent.text if tools_sent else None,
        model_said=section.one("model-said").text,
        calls=[_call(row) for row in section.all("call")],
        reminder=reminder.text if reminder else None,
    )


def _call(row):
    status = row.one("call-status")
    reason = row.optional("call-reason")
    sent_back = row.optional("call-sent-back")
    progress = row.optional("call-progress")
    replaced = row.optional("call-replaced")
    return Call(
        id=row.one("call-id").text,
        tool=row.one("call-tool").text,
        arguments=row.one("call-arguments").text,
        status=status.text,
        status_mark=next(name.removeprefix("status-") for name in status.classes if name.startswith("status-")),
        reason=reason.text if reason else None,
        sent_back=sent_back.text if sent_back else None,
        progress=progress.text if progress else None,
        forced=[line.text for line in row.all("call-forced")],
        replaced=replaced.text if replaced else None,
    )


def _transcript_message(item):
    answers = item.optional("answers-call")
    return TranscriptMessage(role=item.one("role").text, answers=answers.text if answers else None, text=item.text)
