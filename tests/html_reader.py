"""The one HTML reader of the tests: a page read as a person or a browser reads it. `parse_html` builds the
element tree (html.parser, so no extra dependency) that everything else reads: `text_of` for the page's text,
`form_fields` for what a browser would post, `Page` for a form's values and errors; tests/run_panel.py reads the
run panel from the same tree through its `data-testid` hooks."""

import html
import re
from html.parser import HTMLParser

VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Elements a browser lays out on lines of their own: their text never runs into the text beside them.
BLOCK_ELEMENTS = {
    "article", "caption", "dd", "details", "div", "dl", "dt", "h1", "h2", "h3", "header", "li", "ol", "p", "pre",
    "section", "summary", "table", "td", "th", "tr", "ul",
}  # fmt: skip


class Element:
    def __init__(self, tag, attrs):
        self.tag = tag
        self.attrs = dict(attrs)
        self.children = []  # elements and strings, in document order

    @property
    def classes(self):
        return (self.attrs.get("class") or "").split()

    @property
    def raw_text(self):
        """The text as written, whitespace and all (what a textarea holds)."""
        return "".join(self._strings())

    @property
    def text(self):
        """The text as shown: whitespace collapsed, except inside <pre>, which shows it as it is."""
        return self.raw_text if self.tag == "pre" else re.sub(r"\s+", " ", self.raw_text).strip()

    def _strings(self):
        for child in self.children:
            if isinstance(child, str):
                yield child
            elif child.tag in BLOCK_ELEMENTS:
                yield "\n"
                yield from child._strings()
                yield "\n"
            else:
                yield from child._strings()

    def elements(self):
        """This element and every element inside it, in document order."""
        yield self
        for child in self.children:
            if isinstance(child, Element):
                yield from child.elements()

    def all(self, testid):
        return [element for element in self.elements() if element.attrs.get("data-testid") == testid]

    def one(self, testid):
        found = self.all(testid)
        assert len(found) == 1, f"expected one {testid!r}, found {len(found)}"
        return found[0]

    def optional(self, testid):
        found = self.all(testid)
        assert len(found) <= 1, f"expected at most one {testid!r}, found {len(found)}"
        return found[0] if found else None


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", [])
        self.open = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs)
        self.open[-1].children.append(element)
        if tag not in VOID_ELEMENTS:
            self.open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.open[-1].children.append(Element(tag, attrs))

    def handle_endtag(self, tag):
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                del self.open[depth:]
                return

    def handle_data(self, data):
        self.open[-1].children.append(data)


def parse_html(html):
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def html_of(response, status=None):
    """The page's HTML, checking its status when given."""
    if status is not None:
        assert response.status_code == status, response.status_code
    return response.get_data(as_text=True)


def text_of(page):
    """The page (a response or its HTML) as a person reads it: tags dropped, entities decoded, whitespace
    collapsed."""
    page = page if isinstance(page, str) else page.get_data(as_text=True)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def form_fields(page_html, form_id="run-form"):
    """What a browser would post for the form with this id, as rendered: every field with its value, ticked
    boxes only. A textarea's leading newline is dropped, as browsers do."""
    form = next(
        (
            element
            for element in parse_html(page_html).elements()
            if element.tag == "form" and element.attrs.get("id") == form_id
        ),
        None,
    )
    fields = {}
    for element in form.elements() if form is not None else ():
        name = element.attrs.get("name")
        if not name:
            continue
        if element.tag == "input" and element.attrs.get("type") == "checkbox":
            if "checked" in element.attrs:
                fields[name] = element.attrs.get("value") or "y"
        elif element.tag == "input" and element.attrs.get("type") != "submit":
            fields[name] = element.attrs.get("value") or ""
        elif element.tag == "textarea":
            fields[name] = _drop_first_newline(element.raw_text)
        elif element.tag == "select":
            options = [option for option in element.elements() if option.tag == "option"]
            chosen = next((option for option in options if "selected" in option.attrs), options[0] if options else None)
            if chosen is not None:
                fields[name] = chosen.attrs.get("value") or ""
    return fields


def _drop_first_newline(text):
    return text[2:] if text.startswith("\r\n") else text[1:] if text.startswith("\n") else text


class Page:
    """Read a rendered form the way a browser would: an input's value, a textarea's text, a box's state, the
    errors next to a field."""

    def __init__(self, page_html):
        self.html = page_html
        self.root = parse_html(page_html)

    def _field(self, tag, name):
        for element in self.root.elements():
            if element.tag == tag and element.attrs.get("name") == name:
                return element
        raise AssertionError(f"no <{tag} name={name!r}> in the page")

    def value(self, name):
        return self._field("input", name).attrs.get("value") or ""

    def checked(self, name):
        return "checked" in self._field("input", name).attrs

    def has_field(self, name):
        return any(element.attrs.get("name") == name for element in self.root.elements())

    def text(self, name):
        return _drop_first_newline(self._field("textarea", name).raw_text)

    def errors(self, field_id):
        lists = [element for element in self.root.elements() if element.attrs.get("id") == f"{field_id}-errors"]
        return [item.raw_text for item in lists[0].elements() if item.tag == "li"] if lists else []


def page_of(response):
    return Page(response.get_data(as_text=True))
