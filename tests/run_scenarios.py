"""The agents of the reference manual tests (seeds: the restriction MR and the unlimited-tools story), shared by
the run integration tests and the browser tests. Each is the agent's JSON form, for PUT /api/agents/<id>."""

import copy

TWO_LIST_BUNDLES = {
    "tool_calls": [
        {"name": "list_bundles", "arguments": {"entity_type": "node"}},
        {"name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}},
    ]
}
ENTITY_TYPES_CALL = {"name": "list_entity_types", "arguments": {}}
RECOVERY = {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]}
BUNDLES_ANSWER = "Nodes have the bundles article and page; taxonomy terms have tags."

# MR manual test 2: only list_bundles (restricted), a script that calls it twice in one response, then recovers.
BUNDLES_AGENT = {
    "label": "Bundles test agent",
    "system_prompt": (
        "You are a test agent. When the user asks about bundles of multiple entity types, issue ALL the needed "
        "list_bundles tool calls in parallel, in one single response."
    ),
    "tools": {"list_bundles": {"restrict_multiple_calls": True}, "list_entity_types": {}},
    "script": [
        TWO_LIST_BUNDLES,
        RECOVERY,
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}}]},
        {"content": BUNDLES_ANSWER},
    ],
}
BUNDLES_MESSAGE = (
    "In one single response, call list_bundles twice in parallel: once for the entity type 'node' and once for "
    "'taxonomy_term'. Do not call them one after the other."
)


def bundles_agent(**changes):
    agent = copy.deepcopy(BUNDLES_AGENT)
    agent.update(changes)
    return agent


def mixed_script():
    """MR manual test 4: the first response also calls the unrestricted list_entity_types."""
    script = copy.deepcopy(BUNDLES_AGENT["script"])
    script[0]["tool_calls"].append(dict(ENTITY_TYPES_CALL))
    return script


# The unlimited-tools story: a question that needs more than the retrieved document; the model lists, reads two
# more, re-lists (allowed: no budget), and answers. Only "refund-policy" matches the question, so it is retrieved.
DOCUMENTS = [
    {"id": "refund-policy", "title": "Refund policy", "body": "Refunds are paid within 14 days of the return."},
    {"id": "sale-returns", "title": "Sale returns", "body": "Items bought in a sale come back as store credit."},
    {"id": "gift-cards", "title": "Gift cards", "body": "Gift cards are valid for two years."},
]
DOCUMENTS_ANSWER = "Refunds are paid within 14 days; sale items come back as credit, and gift cards last two years."
DOCUMENTS_AGENT = {
    "label": "Documents test agent",
    "system_prompt": "Answer from the documents. Read every document you need.",
    "tools": {"list_documents": {}, "read_document": {}},
    "script": [
        {"tool_calls": [{"name": "list_documents", "arguments": {}}]},
        {"tool_calls": [{"name": "read_document", "arguments": {"doc_id": "sale-returns"}}]},
        {"tool_calls": [{"name": "read_document", "arguments": {"doc_id": "gift-cards"}}]},
        {"tool_calls": [{"name": "list_documents", "arguments": {}}]},
        {"content": DOCUMENTS_ANSWER},
    ],
}
DOCUMENTS_MESSAGE = "How long do refunds take?"

# The canvas: two placements at once are rejected; then one, then one below the UUID the first returned.
CANVAS_AGENT = {
    "label": "Canvas test agent",
    "tools": {"place_component": {"restrict_multiple_calls": True}, "edit_component": {}, "get_layout": {}},
    "script": [
        {
            "tool_calls": [
                {"name": "place_component", "arguments": {"component": "hero", "region": "header"}},
                {"name": "place_component", "arguments": {"component": "text"}},
            ]
        },
        {
            "tool_calls": [
                {"id": "hero", "name": "place_component", "arguments": {"component": "hero", "region": "header"}}
            ]
        },
        {"tool_calls": [{"name": "place_component", "arguments": {"component": "text", "below_uuid": "{{hero}}"}}]},
        {"content": "A hero with a text below it."},
    ],
}
CANVAS_MESSAGE = "Build a page with a hero and a text below it."
