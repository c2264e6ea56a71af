"""The proxy reads a streamed answer's server-sent events itself (engine.proxy.forward): however the server ends its
lines and however the network cuts its bytes, the proxy reads the same events, as the SDK's decoder would."""

from hypothesis import given
from hypothesis import strategies as st

from engine.proxy.forward import _event_data

LINE_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])
# Data without line breaks (JSON as a server writes it), possibly spread over several `data:` lines.
DATA_LINES = st.lists(st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",))), min_size=1)


@st.composite
def streams(draw):
    """(the bytes of a stream, the data of each of its events)."""
    end = draw(LINE_ENDS)
    events = draw(st.lists(DATA_LINES, max_size=5))
    written, expected = b"", []
    for lines in events:
        if draw(st.booleans()):
            written += b": a comment" + end
        if draw(st.booleans()):
            written += b"event: message" + end
        read = []
        for line in lines:
            space = draw(st.booleans())
            written += (b"data: " if space else b"data:") + line.encode() + end
            read.append(line if space or not line.startswith(" ") else line[1:])  # one leading space is the field's
        written += end
        expected.append("\n".join(read))
    return written, expected


@given(streams(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=8), st.booleans())
def test_the_events_read_are_the_events_written_wherever_the_bytes_are_cut(stream, cuts, between_cr_and_lf):
    written, expected = stream
    points = {cut % (len(written) + 1) for cut in cuts}
    if between_cr_and_lf:  # the cut that splits a \r\n, the one a reader most easily gets wrong
        points |= {index + 1 for index in range(len(written)) if written[index : index + 2] == b"\r\n"}
    points = sorted(points)
    chunks = [written[start:stop] for start, stop in zip([0, *points], [*points, len(written)], strict=True)]
    assert list(_event_data(chunk for chunk in chunks if chunk)) == expected
