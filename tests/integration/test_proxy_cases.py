"""A proxied conversation saved as a regression case (SPEC §8): an app's `openai` SDK client talks to the agent's
policy proxy over real HTTP; its run becomes a case that keeps the client's part, and checking the case plays that
client against the agent as it is now."""

from tests.live_http import serving
from tests.proxy_support import (
    GET_LAYOUT,
    ONE_PLACEMENT,
    PLACE,
    RESTRICT,
    RESTRICTED,
    TWO_PLACEMENTS,
    USER,
    FakeUpstream,
    add_upstream,
    completion,
    proxy_client,
    tool_results,
)

SYSTEM = {"role": "system", "content": "You build landing pages."}
BELOW_HERO = {
    "tool_calls": [{"name": "place_components", "arguments": {"component": "text", "below_uuid": "{{hero}}"}}]
}
SCRIPT = [TWO_PLACEMENTS, ONE_PLACEMENT, BELOW_HERO, {"content": "Done."}]


def put_agent(client, **fields):
    agent = {"label": "Canvas", "client_tools": RESTRICT, "script": SCRIPT, **fields}
    response = client.put("/api/agents/canvas", json=agent)
    assert response.status_code in (200, 201), response.json


def proxied_conversation(app, tools=(PLACE,)):
    """The run id of a conversation an app drove through the proxy to its answer, running every call it got."""
    messages = [SYSTEM, USER]
    with proxy_client(app, "canvas") as sdk:
        while True:
            raw = sdk.chat.completions.with_raw_response.create(model="gpt-x", messages=messages, tools=list(tools))
            message = raw.parse().choices[0].message
            if not message.tool_calls:
                return int(raw.headers["X-Toolgate-Run"])
            messages += [message.model_dump(exclude_none=True), *tool_results(message)]


def saved_case(client, run_id):
    response = client.post(f"/runs/{run_id}/case", data={"name": "Placements one at a time"})
    assert response.status_code == 303, response.get_data(as_text=True)
    return client.get("/api/agents/canvas/cases").json["cases"][0]


def check(client):
    response = client.post("/api/agents/canvas/cases/check", json={})
    assert response.status_code == 200, response.json
    return response.json["cases"][0]


def test_a_proxied_run_saved_as_a_case_keeps_the_clients_part_and_passes_against_the_same_settings(app, client):
    put_agent(client)
    run_id = proxied_conversation(app)
    assert "Save as regression case</button>" in client.get(f"/runs/{run_id}").get_data(as_text=True)

    case = saved_case(client, run_id)
    assert case["message"] == USER["content"]
    assert case["client"]["messages"] == [SYSTEM, USER]
    assert [tool["function"]["name"] for tool in case["client"]["tools"]] == ["place_components"]
    assert case["client"]["results"] == {"hero": "uuid-of-hero", "call_3_1": "uuid-of-call_3_1"}
    assert [item.get("content") for item in case["script"]][-1] == "Done."
    assert case["expected"]["stop_reason"] == "answered" and case["expected"]["answer"] == "Done."
    rounds = case["expected"]["rounds"]
    assert [(call["id"], call["status"], call["message"]) for call in rounds[0]["calls"]] == [
        ("call_1_1", "rejected", RESTRICTED),
        ("call_1_2", "rejected", RESTRICTED),
    ]
    assert [(call["id"], call["status"]) for round_ in rounds[1:] for call in round_["calls"]] == [
        ("hero", "executed"),
        ("call_3_1", "executed"),
    ]
    page = client.get(f"/cases/{case['id']}").get_data(as_text=True)
    assert "The client's part" in page and "uuid-of-call_3_1" in page

    result = check(client)
    assert result["passed"] is True and result["differences"] == []


def test_a_proxied_case_fails_when_the_restriction_is_lifted_and_says_which_verdicts_changed(app, client):
    put_agent(client)
    case = saved_case(client, proxied_conversation(app))
    put_agent(client, client_tools={})

    result = check(client)
    assert result["passed"] is False
    # Both placements now reach the client, which in the recording never got them: the replay ends there.
    assert result["differences"] == [
        'stop reason: expected "answered", got "awaiting_client"',
        'answer: expected "Done.", got null',
        "round 1, call_1_1 (place_components): expected rejected (restricted_repeat), got allowed",
        "round 1, call_1_2 (place_components): expected rejected (restricted_repeat), got allowed",
        "round 2, hero (place_components): expected executed, but not made",
        "round 3, call_3_1 (place_components): expected executed, but not made",
    ]
    # The case page words a proxied call's status as the run page does: sent to the client, run by it.
    page = client.get(f"/cases/{case['id']}").get_data(as_text=True)
    assert page.count("Sent to the client") == 2  # what the check did in round 1
    assert page.count("Run by the client") == 2  # rounds 2 and 3, each shown once (expectation and check beside)


def test_a_proxied_case_with_a_tighter_policy_shows_the_new_rejection(app, client):
    put_agent(client)
    saved_case(client, proxied_conversation(app))
    limited = {"place_components": {"restrict_multiple_calls": True, "max_calls_per_run": 1}}
    put_agent(client, client_tools=limited)

    result = check(client)
    assert result["passed"] is False
    # The second placement is over the limit now: rejected, re-asked, and the model's next answer ends the run.
    assert result["differences"] == [
        "round 3, call_3_1 (place_components): expected executed, got rejected (call_limit)"
    ]


def test_the_second_turn_of_a_proxied_conversation_saved_as_a_case_passes_with_the_first_turn_as_its_opening(
    app, client
):
    text = {"tool_calls": [{"id": "text", "name": "place_components", "arguments": {"component": "text"}}]}
    put_agent(client, script=[TWO_PLACEMENTS, ONE_PLACEMENT, {"content": "Placed."}, text, {"content": "Both."}])
    messages = [SYSTEM, USER]
    with proxy_client(app, "canvas") as sdk:
        for follow_up in ({"role": "user", "content": "Now a text."}, None):
            while True:
                raw = sdk.chat.completions.with_raw_response.create(model="m", messages=messages, tools=[PLACE])
                message = raw.parse().choices[0].message
                messages += [message.model_dump(exclude_none=True), *tool_results(message)]
                if not message.tool_calls:
                    break
            if follow_up:
                messages.append(follow_up)
    second = client.get(f"/api/runs/{raw.headers['X-Toolgate-Run']}").json
    assert second["message"] == "Now a text." and second["continues_run"] is not None

    case = saved_case(client, second["id"])
    # The opening is the conversation as the model saw it, the first turn's hidden re-ask included.
    roles = ["system", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "user"]
    assert [message["role"] for message in case["client"]["messages"]] == roles
    assert case["client"]["results"] == {"text": "uuid-of-text"}
    result = check(client)
    assert result["passed"] is True, result["differences"]


def test_a_case_of_a_real_models_proxied_run_replays_what_it_answered_on_the_scripted_model(app, client):
    fake = FakeUpstream(
        completion(calls=[("a", "place_components", '{"component": "hero"}'), ("b", "get_layout", "{}")]),
        completion(calls=[("c", "place_components", '{"component":"hero"}')]),
        completion(calls=[("d", "get_layout", "{}"), ("e", "get_layout", "{}")]),
        completion("A hero, and the layout read twice."),
    )
    with serving(fake) as url:
        add_upstream(app, url)
        put_agent(client, provider="upstream", client_tools={**RESTRICT, "get_layout": {"max_calls_per_run": 2}})
        run_id = proxied_conversation(app, tools=(PLACE, GET_LAYOUT))
    case = saved_case(client, run_id)
    # The model's own ids and argument text, spacing included, are what the scripted model plays back.
    assert [call["id"] for item in case["script"] for call in item.get("tool_calls", [])] == list("abcde")
    assert case["script"][1]["tool_calls"][0]["arguments"] == '{"component":"hero"}'
    assert case["client"]["results"] == {"a": "uuid-of-a", "b": "uuid-of-b", "c": "uuid-of-c"}
    assert [(call["id"], call["reason"]) for call in case["expected"]["rounds"][2]["calls"]] == [
        ("d", "not_run"),
        ("e", "call_limit"),
    ]

    assert check(client)["passed"] is True
    put_agent(client, provider="upstream", client_tools={**RESTRICT, "get_layout": {"max_calls_per_run": 1}})
    assert check(client)["differences"] == [
        "round 3, d (get_layout): expected rejected (not_run), got rejected (call_limit)",
        'round 3, e (get_layout): message expected "Error: get_layout may be called at most 2 times per run.", '
        'got "Error: get_layout may be called at most 1 times per run."',
    ]
