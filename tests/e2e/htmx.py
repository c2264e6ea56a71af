"""Waiting for htmx in the browser tests."""


def settled(page):
    """Wait until htmx has settled what it swapped in: it wires a new element's hx- attributes (an input's change
    request, say) only when the swap settles, about 20 ms after the element appears, so a test acting on it sooner
    acts on an element htmx does not yet listen to (a person cannot click that fast; a busy test can)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
