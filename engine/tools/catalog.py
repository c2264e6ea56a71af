"""Catalog tools: a small, fixed CMS-like catalogue of entity types and their bundles (SPEC §6).

They are free to call as often as the model likes, which makes them the contrast to the canvas tools: reading
the catalogue twice in one response is harmless.
"""

from .registry import Tool, ToolError

# entity type id -> (label, {bundle id: bundle label}), in the order the model sees them.
CATALOG = {
    "node": ("Content", {"article": "Article", "page": "Basic page"}),
    "taxonomy_term": ("Taxonomy term", {"tags": "Tags"}),
    "user": ("User", {"user": "User"}),
    "media": ("Media", {"image": "Image", "video": "Video"}),
}


def list_entity_types(arguments, context):
    return [{"id": entity_type, "label": label} for entity_type, (label, _bundles) in CATALOG.items()]


def list_bundles(arguments, context):
    entity_type = arguments["entity_type"]
    if entity_type not in CATALOG:
        raise ToolError(f'Unknown entity type "{entity_type}". Valid entity types: {", ".join(CATALOG)}.')
    _label, bundles = CATALOG[entity_type]
    return {
        "entity_type": entity_type,
        "bundles": [{"id": bundle, "label": label} for bundle, label in bundles.items()],
    }


CATALOG_TOOLS = [
    Tool(
        name="list_entity_types",
        description=(
            "List the entity types of the site (content, taxonomy terms, users, media). "
            'Returns [{"id", "label"}]; pass an id to list_bundles to see its bundles.'
        ),
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        handler=list_entity_types,
        family="catalog",
    ),
    Tool(
        name="list_bundles",
        description=(
            "List the bundles (sub-types) of one entity type, for example the content types of 'node'. "
            'Returns {"entity_type", "bundles": [{"id", "label"}]}.'
        ),
        parameters={
            "type": "object",
            "properties": {
                "entity_type": {
                    "type": "string",
                    "description": "An entity type id from list_entity_types, e.g. 'node'.",
                }
            },
            "required": ["entity_type"],
            "additionalProperties": False,
        },
        handler=list_bundles,
        family="catalog",
    ),
]
