import pytest
from jsonschema import Draft202012Validator

from engine import texts
from engine.tools import ToolError
from engine.tools.context import RunContext
from engine.tools.documents import (
    CORPUS_FOLDER,
    DOCUMENT_TOOLS,
    MemoryDocumentStore,
    fts_query,
    list_documents,
    load_corpus_files,
    read_document,
    retrieve_into_context,
    sample_document_store,
)

SMALL_CORPUS = [
    {"id": "kettles", "title": "Kettles", "body": "A kettle boils water in three minutes."},
    {"id": "teapots", "title": "Teapots", "body": "Warm the teapot before brewing."},
]


@pytest.fixture
def small_store():
    return MemoryDocumentStore(SMALL_CORPUS)


# Query building


def test_fts_query_quotes_each_word_and_drops_stop_words():
    assert fts_query("What is the refund policy?") == '"refund" OR "policy"'


def test_fts_query_asks_for_the_singular_of_a_plural():
    assert fts_query("Refunds") == '"refunds" OR "refund"'


def test_fts_query_turns_fts_syntax_into_plain_words():
    assert fts_query('refund* AND "policy" NEAR(title:x)') == '"refund" OR "policy" OR "near" OR "title"'


# Searching the sample corpus


@pytest.mark.parametrize(
    ("question", "best"),
    [
        ("How long do refunds take?", "refund-policy"),
        ("Do gift cards expire?", "gift-cards"),
        ("What size jacket fits a 39 inch chest?", "size-guide"),
        ("Can I return a final sale item?", "sale-returns"),
        ("When is the Denver store open on Sunday?", "store-hours"),
        ("Do I pay import duties on an order to the UK?", "international-orders"),
    ],
)
def test_search_ranks_the_relevant_document_first(question, best):
    assert sample_document_store().search(question)[0]["id"] == best


@pytest.mark.parametrize("query", ["", '"', "AND", "*", "!!!", "?? -- ::", "a I", "NEAR(", '"unbalanced', "\x00"])
def test_queries_without_words_find_nothing_and_do_not_raise(query):
    assert sample_document_store().search(query) == []


def test_fts_syntax_in_a_query_is_searched_as_words():
    assert sample_document_store().search('refund* AND "policy')[0]["id"] == "refund-policy"


def test_search_returns_at_most_limit_documents_with_their_body():
    hits = sample_document_store().search("return refund shipping warranty", limit=2)
    assert len(hits) == 2
    assert set(hits[0]) == {"id", "title", "body"}


# The sample corpus


def test_sample_corpus_has_twelve_short_documents():
    documents = load_corpus_files(CORPUS_FOLDER)
    assert len(documents) == 12
    assert all(80 <= len(document["body"].split()) <= 200 for document in documents)
    assert {"id": "refund-policy", "title": "Refund policy"} in sample_document_store().list_documents()


def test_load_corpus_files_reads_markdown_and_text_files(tmp_path):
    (tmp_path / "alpha.md").write_text("# Alpha title\n\nAlpha body.\n", encoding="utf-8")
    (tmp_path / "beta.txt").write_text("\n\nBeta title\nBeta body\nsecond line\n", encoding="utf-8")
    (tmp_path / "empty.md").write_text("  \n", encoding="utf-8")
    (tmp_path / "data.csv").write_text("a,b\n", encoding="utf-8")
    assert load_corpus_files(tmp_path) == [
        {"id": "alpha", "title": "Alpha title", "body": "Alpha body."},
        {"id": "beta", "title": "Beta title", "body": "Beta body\nsecond line"},
    ]


# The app's database file


# Retrieval


def test_retrieve_into_context_builds_one_message_and_registers_sources(small_store):
    context = RunContext()
    message = retrieve_into_context(small_store, "kettle water", context)
    assert message == (
        f"{texts.RETRIEVED_CONTEXT_HEADER}\n\n"
        "Document id: kettles\nTitle: Kettles\n\nA kettle boils water in three minutes."
    )
    assert context.sources == [{"id": "kettles", "title": "Kettles"}]
    assert context.in_context == {"kettles"}


def test_retrieve_into_context_without_a_match_returns_none(small_store):
    context = RunContext()
    assert retrieve_into_context(small_store, "bicycles", context) is None
    assert context.sources == []


# The tools


def test_read_document_of_a_retrieved_document_is_already_in_context(small_store):
    context = RunContext(documents=small_store)
    retrieve_into_context(small_store, "kettle", context)
    assert read_document({"doc_id": "kettles"}, context) == "Already in your context."


def test_read_document_returns_the_document_and_makes_it_a_source(small_store):
    context = RunContext(documents=small_store)
    assert read_document({"doc_id": "teapots"}, context) == SMALL_CORPUS[1]
    assert context.sources == [{"id": "teapots", "title": "Teapots"}]
    assert read_document({"doc_id": "teapots"}, context) == texts.ALREADY_IN_CONTEXT


def test_read_document_of_an_unknown_id_is_a_tool_error(small_store):
    with pytest.raises(ToolError) as raised:
        read_document({"doc_id": "x"}, RunContext(documents=small_store))
    assert str(raised.value) == 'No document with id "x". Call list_documents to see the ids.'


def test_sources_are_deduplicated_in_first_seen_order(small_store):
    context = RunContext(documents=small_store)
    read_document({"doc_id": "teapots"}, context)
    retrieve_into_context(small_store, "kettle teapot", context)
    retrieve_into_context(small_store, "kettle", context)
    assert context.sources == [{"id": "teapots", "title": "Teapots"}, {"id": "kettles", "title": "Kettles"}]


def test_list_documents_uses_the_store_handed_in(small_store):
    assert list_documents({}, RunContext(documents=small_store)) == [
        {"id": "kettles", "title": "Kettles"},
        {"id": "teapots", "title": "Teapots"},
    ]


def test_tools_without_a_store_use_the_sample_corpus():
    context = RunContext()
    assert len(list_documents({}, context)) == 12
    assert read_document({"doc_id": "warranty"}, context)["title"] == "Warranty"


@pytest.mark.parametrize("arguments", [{}, {"doc_id": ""}, {"doc_id": 7}, {"doc_id": "a", "extra": 1}])
def test_read_document_schema_rejects_missing_or_bad_doc_id(arguments):
    schema = next(tool.parameters for tool in DOCUMENT_TOOLS if tool.name == "read_document")
    assert not Draft202012Validator(schema).is_valid(arguments)
