"""Check stored cases: replay each against its agent as stored now (engine.cases.check_case, with the app's
documents table), store the result with the case and return it. The one path the pages, the API and the CLI
share. No Flask here: the caller passes the database and the tool registry."""

from engine.cases import check_case, failed_check
from store import NotFound, now
from store import agents as agent_store
from store import cases as case_store
from store.documents import DocumentTable


def check_cases(db, cases, registry=None):
    """Check these stored cases; returns them with their new `last_check`, in the same order."""
    agents, results = {}, {}
    for case in cases:
        agent_id = case["agent_id"]
        if agent_id not in agents:
            try:
                agents[agent_id] = agent_store.get_agent(db, agent_id)
            except NotFound:
                agents[agent_id] = None
        agent = agents[agent_id]
        if agent is None:
            result = failed_check(f'The agent "{agent_id}" no longer exists.')
        else:
            result = check_case(agent, case, documents=DocumentTable(db), registry=registry)
        results[case["id"]] = {**result, "checked_at": now()}
    case_store.record_checks(db, results)
    return [{**case, "last_check": results[case["id"]]} for case in cases]


def check_agent_cases(db, agent_id, registry=None):
    """Check every case of a stored agent. Raises NotFound for an unknown agent."""
    if not agent_store.agent_exists(db, agent_id):
        raise NotFound(f'No agent with id "{agent_id}".')
    return check_cases(db, case_store.list_cases(db, agent_id), registry)


def check_one_case(db, case_id, registry=None):
    """Check one stored case. Raises NotFound."""
    return check_cases(db, [case_store.get_case(db, case_id)], registry)[0]


def checked_summary(cases):
    """What a check of several cases found, in one sentence, for the pages and the command line."""
    if not cases:
        return "There are no cases to check."
    passed = sum(1 for case in cases if case["last_check"]["passed"])
    return f"Checked {len(cases)} case{'s' if len(cases) != 1 else ''}: {passed} passed, {len(cases) - passed} failed."
