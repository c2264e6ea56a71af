"""Call ids repaired before the gate (SPEC §4): a missing, empty, repeated or already used id gets a fresh unique
one, used consistently in the transcript, and the call keeps `original_id`."""

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import run_agent
from engine.call_ids import repair_call_ids
from engine.types import ModelResponse, ToolCall
from tests.doubles import ModelDouble
from tests.unit.unit_helpers import RecordingTools

# A small pool, so ids collide within a response and with earlier rounds; "" is a model that sent none.
IDS = ("", "", "a", "a", "b", "call_1", "repaired_1_2", "repaired_2_1")


def id_playing_model(responses):
    """Answers request N with response N of `responses` (lists of ids), each id a call of `alpha`; then text."""
    answers = [
        ModelResponse(
            None, tuple(ToolCall(id=call_id, name="alpha", arguments={"n": n}) for n, call_id in enumerate(ids))
        )
        for ids in responses
    ]
    return ModelDouble(*answers, then="Done.")


def answered_ids(messages):
    """For each assistant message with tool calls: (its call ids, the tool_call_ids of the tool messages after it)."""
    pairs = []
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and message.get("tool_calls"):
            following = []
            for later in messages[index + 1 :]:
                if later["role"] != "tool":
                    break
                following.append(later["tool_call_id"])
            pairs.append(([call["id"] for call in message["tool_calls"]], following))
    return pairs


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(IDS), min_size=1, max_size=5), max_size=5))
def test_every_tool_message_answers_one_unique_call_id_of_the_assistant_message_before_it_in_order(responses):
    model = id_playing_model(responses)
    agent = {"id": "ids", "label": "Ids", "tools": {"alpha": {}}, "max_rounds": len(responses)}

    result = run_agent(agent, "Go.", registry=RecordingTools().registry, model=model)

    pairs = answered_ids(result["messages"])
    assert [ids for ids, answered in pairs] == [answered for ids, answered in pairs]
    every_id = [call_id for ids, _ in pairs for call_id in ids]
    assert len(every_id) == len(set(every_id)) and "" not in every_id
    # What was sent back is what the next request carried, and what the run recorded.
    for request in model.bodies[1:]:
        assert request["messages"] == result["messages"][: len(request["messages"])]
    for round_, sent in zip(result["rounds"], responses, strict=False):
        calls = round_["calls"]
        assert [call["original_id"] if call["original_id"] is not None else call["id"] for call in calls] == sent
        assert all(call["original_id"] is None for call in calls if call["id"] in sent)


def test_a_fresh_id_never_takes_the_id_a_later_call_of_the_response_brings():
    calls = (ToolCall("a", "t", {}), ToolCall("a", "t", {}), ToolCall("repaired_1_2", "t", {}))

    repaired = repair_call_ids(calls, 1, set())

    assert [(call.id, call.original_id) for call in repaired] == [
        ("a", None),
        ("repaired_1_2_2", "a"),
        ("repaired_1_2", None),
    ]


def test_an_id_of_an_earlier_round_is_replaced_and_the_run_remembers_both():
    used = {"a"}

    repaired = repair_call_ids((ToolCall("a", "t", {}),), 2, used)

    assert [(call.id, call.original_id) for call in repaired] == [("repaired_2_1", "a")]
    assert used == {"a", "repaired_2_1"}
