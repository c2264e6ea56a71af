"""The document tools inside the loop (the RAG user story): retrieval, re-lists, reads and the run's sources."""

import json

from engine import run_agent
from tests.unit.unit_helpers import (
    ALREADY_IN_CONTEXT,
    answer,
    call,
    make_agent,
    sdk_model,
    tool_message_contents,
    tool_round,
)

QUESTION = "How do refunds work?"
RETRIEVED = (
    "Documents retrieved for this question (cite them by id):\n\n"
    "Document id: refund-policy\nTitle: Refund policy\n\nRefunds are paid within 14 days of the return."
)
LISTING = json.dumps(
    [
        {"id": "refund-policy", "title": "Refund policy"},
        {"id": "shipping-times", "title": "Shipping times"},
        {"id": "store-hours", "title": "Store hours"},
    ]
)
DOCUMENT_TOOLS = {"list_documents": {}, "read_document": {}}


def run(script, documents, question=QUESTION, tools=DOCUMENT_TOOLS):
    return run_agent(make_agent(tools, script), question, documents=documents)


def test_retrieval_puts_the_best_documents_in_a_system_message_before_the_question(documents):
    model = sdk_model([answer("Within 14 days.")])

    result = run_agent(make_agent(DOCUMENT_TOOLS), QUESTION, documents=documents, model=model)

    assert model.bodies[0]["messages"] == [
        {"role": "system", "content": RETRIEVED},
        {"role": "user", "content": QUESTION},
    ]
    assert result["sources"] == [{"id": "refund-policy", "title": "Refund policy"}]


def test_no_match_adds_no_retrieval_message(documents):
    result = run([answer("No idea.")], documents, question="Tell me about zebras.")

    assert [m["role"] for m in result["messages"]] == ["user", "assistant"]
    assert result["sources"] == []


def test_agents_without_document_tools_retrieve_nothing(documents):
    result = run([answer("No idea.")], documents, tools={"list_entity_types": {}})

    assert [m["role"] for m in result["messages"]] == ["user", "assistant"]
    assert result["sources"] == []


def test_relisting_executes_every_list_call(documents):
    script = [
        tool_round(call("list_documents")),
        tool_round(call("list_documents"), call("list_documents")),
        answer("Three documents."),
    ]

    result = run(script, documents)

    assert tool_message_contents(result) == {"call_1_1": LISTING, "call_2_1": LISTING, "call_2_2": LISTING}
    assert result["tool_calls"] == 3
    assert result["rejected_calls"] == 0


def test_reading_a_retrieved_document_answers_already_in_your_context(documents):
    result = run([tool_round(call("read_document", {"doc_id": "refund-policy"})), answer("Done.")], documents)

    assert tool_message_contents(result) == {"call_1_1": "Already in your context."}
    assert result["rounds"][0]["calls"][0]["status"] == "executed"


def test_reading_a_document_twice_answers_already_in_your_context_the_second_time(documents):
    script = [
        tool_round(call("read_document", {"doc_id": "store-hours"})),
        tool_round(call("read_document", {"doc_id": "store-hours"})),
        answer("Nine to six."),
    ]

    result = run(script, documents)

    contents = tool_message_contents(result)
    assert json.loads(contents["call_1_1"]) == {
        "id": "store-hours",
        "title": "Store hours",
        "body": "The shop opens at nine and closes at six.",
    }
    assert contents["call_2_1"] == ALREADY_IN_CONTEXT


def test_read_document_without_doc_id_is_invalid_arguments_naming_doc_id(documents):
    result = run([tool_round(call("read_document", {})), answer("Done.")], documents)

    rejected = result["rounds"][0]["calls"][0]
    assert (rejected["status"], rejected["reason"]) == ("rejected", "invalid_arguments")
    assert rejected["message"] == "Error: invalid arguments for read_document: 'doc_id' is a required property"
    assert tool_message_contents(result) == {"call_1_1": rejected["message"]}


def test_read_document_of_a_missing_document_is_a_tool_error(documents):
    result = run([tool_round(call("read_document", {"doc_id": "nope"})), answer("Done.")], documents)

    assert result["rounds"][0]["calls"][0]["status"] == "error"
    assert tool_message_contents(result) == {
        "call_1_1": 'Error: No document with id "nope". Call list_documents to see the ids.'
    }
    assert result["sources"] == [{"id": "refund-policy", "title": "Refund policy"}]


def test_sources_are_retrieved_and_read_documents_each_once_in_first_seen_order(documents):
    script = [
        tool_round(
            call("read_document", {"doc_id": "shipping-times"}), call("read_document", {"doc_id": "refund-policy"})
        ),
        tool_round(
            call("read_document", {"doc_id": "shipping-times"}), call("read_document", {"doc_id": "store-hours"})
        ),
        answer("Done."),
    ]

    result = run(script, documents)

    assert result["sources"] == [
        {"id": "refund-policy", "title": "Refund policy"},
        {"id": "shipping-times", "title": "Shipping times"},
        {"id": "store-hours", "title": "Store hours"},
    ]


def test_without_a_store_the_sample_corpus_is_used():
    result = run_agent(make_agent(DOCUMENT_TOOLS, [answer("Done.")]), "What is the refund policy?")

    assert "refund-policy" in [source["id"] for source in result["sources"]]
