"""The demo agents, one per built-in tool family, each showing the policy at work on the scripted model
(no key, no network), and the sample documents the documents tools read.

`flask --app app load-demo` stores them; `make run` does it on a fresh machine.
"""

import engine
from engine.cases import case_from_run
from engine.proxy.replay import play_client
from engine.tools.documents import CORPUS_FOLDER, load_corpus_files
from store import agents as agent_store
from store import cases as case_store
from store import documents as document_store
from store.documents import DocumentTable

CANVAS_BUILDER = {
    "id": "canvas_builder",
    "label": "Canvas builder (restricted placement)",
    "description": (
        "Shows the restriction at work: place_component may be called only once per response. The script "
        "places two components in one response, both calls are rejected, and the model recovers by placing "
        "them one at a time, each below the UUID the previous placement returned."
    ),
    "system_prompt": (
        "You build landing pages on a canvas. place_component returns the UUID of the component it placed; "
        "place the next component below that UUID, so call place_component once per response and wait for its "
        "result. Use edit_component to set text, and get_layout to check the page.\n\n"
        "This demo runs on the scripted model: its first response deliberately places two components at once, "
        "which Toolgate rejects because place_component is restricted to one call per response."
    ),
    "provider": "scripted",
    "max_rounds": 10,
    "tools": {
        "place_component": {"restrict_multiple_calls": True},
        "edit_component": {},
        "get_layout": {},
    },
    "script": [
        {
            "content": "I'll place the hero and the text together.",
            "tool_calls": [
                {"name": "place_component", "arguments": {"component": "hero", "region": "header"}},
                {"name": "place_component", "arguments": {"component": "text", "region": "content"}},
            ],
        },
        {
            "content": "Both placements were rejected: one at a time, then. The hero first.",
            "tool_calls": [
                {"id": "call_2_1", "name": "place_component", "arguments": {"component": "hero", "region": "header"}}
            ],
        },
        {
            "content": "Now the text, below the hero.",
            "tool_calls": [
                {"name": "place_component", "arguments": {"component": "text", "below_uuid": "{{call_2_1}}"}}
            ],
        },
        {
            "tool_calls": [
                {"name": "edit_component", "arguments": {"uuid": "{{call_2_1}}", "props": {"title": "Welcome"}}}
            ]
        },
        {
            "content": (
                'The page has a hero titled "Welcome" in the header, with a text component below it. '
                "My first attempt placed both in one response and was rejected, so I placed them one at a time."
            )
        },
    ],
}

CATALOG_EXPLORER = {
    "id": "catalog_explorer",
    "label": "Catalog explorer (restricted listing)",
    "description": (
        "Lists the bundles of two entity types. list_bundles is restricted to one call per response, so the "
        "first response, which asks for both at once, is rejected; the model then asks for one after the other. "
        "list_entity_types stays unrestricted."
    ),
    "system_prompt": (
        "You answer questions about the site's content model. Use list_entity_types to see the entity types and "
        "list_bundles to see the bundles of one of them.\n\n"
        "This demo runs on the scripted model: its first response calls list_bundles twice in parallel, which "
        "Toolgate rejects because list_bundles is restricted to one call per response."
    ),
    "provider": "scripted",
    "max_rounds": 10,
    "tools": {
        "list_entity_types": {},
        "list_bundles": {"restrict_multiple_calls": True},
    },
    "script": [
        {
            "tool_calls": [
                {"name": "list_bundles", "arguments": {"entity_type": "node"}},
                {"name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}},
            ]
        },
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "taxonomy_term"}}]},
        {
            "content": (
                "Content (node) has two bundles: Article and Basic page. Taxonomy terms have one: Tags. "
                "I listed them one entity type per response, because asking for both at once was rejected."
            )
        },
    ],
}

DOCS_ASSISTANT = {
    "id": "docs_assistant",
    "label": "Docs assistant (unrestricted reading)",
    "description": (
        "The contrast: no tool is restricted, so the model may call them as often as it needs, bounded only by "
        "the round cap. It lists the documents, reads two in one response (both run), and lists them again "
        "(a re-list runs too)."
    ),
    "system_prompt": (
        "You answer customer questions from the shop's documents. The documents that best match the question are "
        "already in your context; list_documents shows every document and read_document reads one. Read as many "
        "as you need, then answer and cite the documents you used by id.\n\n"
        "This demo runs on the scripted model, which reads the refund policy and the shipping times whatever "
        "you ask."
    ),
    "provider": "scripted",
    "max_rounds": 10,
    "tools": {
        "list_documents": {},
        "read_document": {},
    },
    "script": [
        {"tool_calls": [{"name": "list_documents", "arguments": {}}]},
        {
            "tool_calls": [
                {"name": "read_document", "arguments": {"doc_id": "refund-policy"}},
                {"name": "read_document", "arguments": {"doc_id": "shipping-times"}},
            ]
        },
        {"tool_calls": [{"name": "list_documents", "arguments": {}}]},
        {
            "content": (
                "You can return a full-price item within 30 days of delivery; the refund reaches your payment "
                "method within 5 business days of the return arriving (refund-policy). Standard shipping takes "
                "3 to 5 business days, express 1 to 2, and a return takes 5 to 7 business days to reach the "
                "warehouse (shipping-times)."
            )
        },
    ],
}

CATALOG_PAGE = {
    "id": "catalog_page",
    "label": "Catalog page (argument rules and artifacts)",
    "description": (
        "Shows the per-argument rules and artifacts at work. list_bundles only allows node and media, keeps its "
        "output as an artifact and refuses the same call twice; place_component always places in the footer, "
        "an argument the model never sees. The model asks for a forbidden entity type, retries, places a text "
        "component and fills it with the artifact's content, then repeats a call and is told to use the result."
    ),
    "system_prompt": (
        "You build a page that lists the content types of the site. list_bundles answers with a placeholder "
        "{{artifact:list_bundles:N}}: pass it to another tool and Toolgate puts the real output in its place. "
        "place_component returns the UUID of the component it placed; set its text with edit_component.\n\n"
        "This demo runs on the scripted model: it first asks for the user bundles, which the allow-list rejects."
    ),
    "provider": "scripted",
    "max_rounds": 10,
    "tools": {
        "list_bundles": {
            "argument_rules": {"entity_type": {"action": "only_allow", "values": ["node", "media"]}},
            "use_artifacts": True,
            "max_identical_calls": 1,
            "progress_message": "Listing the bundles…",
        },
        "place_component": {
            "argument_rules": {"region": {"action": "force_value", "values": ["footer"], "hide": True}},
            "argument_descriptions": {"component": "Use text for a list of bundles."},
        },
        "edit_component": {},
    },
    "script": [
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "user"}}]},
        {
            "content": "Users are not allowed; content types, then.",
            "tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}],
        },
        {"tool_calls": [{"id": "text", "name": "place_component", "arguments": {"component": "text"}}]},
        {
            "tool_calls": [
                {
                    "name": "edit_component",
                    "arguments": {"uuid": "{{text}}", "props": {"text": "{{artifact:list_bundles:1}}"}},
                }
            ]
        },
        {"tool_calls": [{"name": "list_bundles", "arguments": {"entity_type": "node"}}]},
        {
            "content": (
                "The footer now has a text component listing the content types: Article and Basic page. The user "
                "bundles were not allowed, and listing the content types a second time was refused."
            )
        },
    ],
}

CANVAS_REVIEWED = {
    "id": "canvas_reviewed",
    "label": "Canvas with reviewed edits (approvals)",
    "description": (
        "Shows approvals at work: edit_component requires approval, so a response that edits the page waits until a "
        "person approves, edits or rejects each edit; get_layout in the same response waits too, then runs as usual. "
        "Approve the title and reject the subtitle: the model is told why, and answers without it."
    ),
    "system_prompt": (
        "You build landing pages on a canvas. place_component returns the UUID of the component it placed; set its "
        "text with edit_component, and check the page with get_layout. Every edit is reviewed by a person before it "
        "is made.\n\n"
        "This demo runs on the scripted model: it places a hero, then sets its title and a subtitle in one response."
    ),
    "provider": "scripted",
    "max_rounds": 10,
    "tools": {
        "place_component": {},
        "edit_component": {"require_approval": True, "progress_message": "Editing the page…"},
        "get_layout": {},
    },
    "script": [
        {
            "content": "The hero first.",
            "tool_calls": [
                {"id": "hero", "name": "place_component", "arguments": {"component": "hero", "region": "header"}}
            ],
        },
        {
            "content": "Now its title and a subtitle.",
            "tool_calls": [
                {"name": "edit_component", "arguments": {"uuid": "{{hero}}", "props": {"title": "Welcome"}}},
                {
                    "name": "edit_component",
                    "arguments": {"uuid": "{{hero}}", "props": {"subtitle": "From 9 € a month"}},
                },
                {"name": "get_layout", "arguments": {}},
            ],
        },
        {
            "content": (
                'The header has a hero titled "Welcome". I set only the edits the reviewer approved: a rejected edit '
                "was not made."
            )
        },
    ],
}


BROWSER_CANVAS = {
    "id": "browser_canvas",
    "label": "Browser canvas (a client tool, through the policy proxy)",
    "description": (
        "A page builder whose place_block tool runs in the browser, not in Toolgate: an app talks to this agent "
        "through its policy proxy (/proxy/browser_canvas/v1) and runs the calls it gets. place_block is restricted "
        "to one call per response, so the model's first answer, which places two blocks at once, never reaches the "
        "app: the proxy rejects it, asks again, and passes on one placement at a time. Try it with "
        "examples/proxy_client.py."
    ),
    "system_prompt": (
        "You build landing pages in the user's browser. place_block places one block and returns its id; place the "
        "next block below that id, so call place_block once per response and wait for its result.\n\n"
        "This demo runs on the scripted model: its first response deliberately places two blocks at once."
    ),
    "provider": "scripted",
    "max_rounds": 10,
    "tools": {},
    "client_tools": {
        "place_block": {
            "restrict_multiple_calls": True,
            "description_override": "Place ONE block on the page and return its id. One call per response.",
        }
    },
    "script": [
        {
            "content": "I'll place the hero and the text together.",
            "tool_calls": [
                {"name": "place_block", "arguments": {"block": "hero"}},
                {"name": "place_block", "arguments": {"block": "text"}},
            ],
        },
        {
            "content": "One block per response, then: the hero first.",
            "tool_calls": [{"id": "hero", "name": "place_block", "arguments": {"block": "hero"}}],
        },
        {
            "content": "Now the text, below the hero.",
            "tool_calls": [{"name": "place_block", "arguments": {"block": "text", "below": "{{hero}}"}}],
        },
        {"content": "The page has a hero with a text block below it."},
    ],
}

DEMO_AGENTS = (CANVAS_BUILDER, CATALOG_EXPLORER, DOCS_ASSISTANT, CATALOG_PAGE, CANVAS_REVIEWED, BROWSER_CANVAS)

# One regression case per demo agent: the name, and the message of the run it records. Untick "Restrict to one
# call per response" on canvas_builder or catalog_explorer and "Check all" shows round 1's verdicts changing.
DEMO_CASES = {
    "canvas_builder": ("Two placements in one response are rejected", "Build a landing page with a hero and a text."),
    "catalog_explorer": ("Two listings in one response are rejected", "Which bundles do nodes and terms have?"),
    "docs_assistant": ("Every read runs: no tool is restricted", "How do refunds and shipping work?"),
    "catalog_page": ("A forbidden entity type and a repeated call are refused", "List the content types on a page."),
    "canvas_reviewed": ("The title is approved, the subtitle rejected", "Build a landing page with a hero."),
    "browser_canvas": (
        "Placements reach the app one at a time",
        "Build a landing page with a hero and a text below it.",
    ),
}
# The app a proxied demo case records, as examples/proxy_client.py plays it: its tools and the block ids it returns.
DEMO_CLIENTS = {
    "browser_canvas": {
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "place_block",
                    "description": "Place a block on the page and return its id.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "block": {"type": "string", "enum": ["hero", "text", "image", "button"]},
                            "below": {"type": "string", "description": "The id of the block to place it below."},
                        },
                        "required": ["block"],
                    },
                },
            }
        ],
        "results": {"hero": "hero-5f2c1a", "call_3_1": "text-9b7e4d"},
    },
}
# The reviewer's decisions of a demo case's run, for the agents whose calls require approval: part of its input.
DEMO_DECISIONS = {
    "canvas_reviewed": {"call_2_1": {"approve": True}, "call_2_2": {"reject": "No prices on the landing page."}},
}


def _demo_case(db, agent_id, known_tools):
    name, message = DEMO_CASES[agent_id]
    agent = agent_store.get_agent(db, agent_id)
    if agent_id in DEMO_CLIENTS:
        client = {**DEMO_CLIENTS[agent_id], "messages": [{"role": "user", "content": message}]}
        run = play_client(agent, client, {})
    else:
        run = engine.run_agent(agent, message, decisions=DEMO_DECISIONS.get(agent_id), documents=DocumentTable(db))
    return case_store.validate(db, case_from_run(run, name), known_tools)


def load_demo(db, known_tools, replace=False):
    """Store the demo agents, the sample documents and each agent's regression case (recorded from a run of it).
    Existing ones are kept unless `replace`; one a policy file manages is always kept (its file is where it changes).

    Returns {"agents": ids stored, "skipped_agents": ids kept, "documents": document ids stored, "cases": case ids
    stored}.
    """
    stored, skipped = [], []
    for agent in DEMO_AGENTS:
        current = None
        if agent_store.agent_exists(db, agent["id"]):
            if not replace or agent_store.origin(db, agent["id"]):
                skipped.append(agent["id"])
                continue
            current = agent_store.get_agent(db, agent["id"])["revision"]
        data = {**agent, "revision": current or 1}
        stored.append(agent_store.save_agent(db, data, known_tools)["id"])
    documents = document_store.import_documents(db, load_corpus_files(CORPUS_FOLDER), replace=replace)
    added, replaced = case_store.import_cases(db, [_demo_case(db, agent_id, known_tools) for agent_id in stored])
    return {"agents": stored, "skipped_agents": skipped, "documents": documents, "cases": added + replaced}
