import pytest

from engine.tools import ToolError
from engine.tools.catalog import list_bundles, list_entity_types
from engine.tools.context import RunContext


def test_list_entity_types_lists_the_catalogue_in_order():
    assert list_entity_types({}, RunContext()) == [
        {"id": "node", "label": "Content"},
        {"id": "taxonomy_term", "label": "Taxonomy term"},
        {"id": "user", "label": "User"},
        {"id": "media", "label": "Media"},
    ]


def test_list_bundles_of_node_gives_article_and_page():
    assert list_bundles({"entity_type": "node"}, RunContext()) == {
        "entity_type": "node",
        "bundles": [{"id": "article", "label": "Article"}, {"id": "page", "label": "Basic page"}],
    }


@pytest.mark.parametrize(
    ("entity_type", "bundle_ids"),
    [("taxonomy_term", ["tags"]), ("user", ["user"]), ("media", ["image", "video"])],
)
def test_list_bundles_of_each_entity_type(entity_type, bundle_ids):
    result = list_bundles({"entity_type": entity_type}, RunContext())
    assert [bundle["id"] for bundle in result["bundles"]] == bundle_ids


def test_unknown_entity_type_names_the_valid_types():
    with pytest.raises(ToolError) as raised:
        list_bundles({"entity_type": "comment"}, RunContext())
    assert str(raised.value) == 'Unknown entity type "comment". Valid entity types: node, taxonomy_term, user, media.'
