"""Fixtures for the engine's unit tests."""

import pytest

from engine.tools.documents import MemoryDocumentStore

SMALL_CORPUS = [
    {"id": "refund-policy", "title": "Refund policy", "body": "Refunds are paid within 14 days of the return."},
    {"id": "shipping-times", "title": "Shipping times", "body": "Parcels arrive in 3 to 5 working days."},
    {"id": "store-hours", "title": "Store hours", "body": "The shop opens at nine and closes at six."},
]


@pytest.fixture
def documents():
    """A three-document store: a question about refunds retrieves only `refund-policy`."""
    return MemoryDocumentStore(SMALL_CORPUS)
