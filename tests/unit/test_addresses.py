"""The address rule (engine/addresses.py): a cloud metadata, link-local or unspecified address is refused however
it is written, a host name by every address it resolves to; loopback and private addresses pass, and so does
whatever the operator allows."""

import ipaddress

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from engine.addresses import AllowedNetworks, url_problem

FULL_WIDTH = str.maketrans("0123456789abcdefx", "０１２３４５６７８９ａｂｃｄｅｆｘ")


def nothing_resolves(host, port):
    return []


def resolving(mapping):
    def resolve(host, port):
        return [ipaddress.ip_address(address) for address in mapping.get(host, ())]

    return resolve


def ipv4_in(network):
    network = ipaddress.ip_network(network)
    return st.integers(0, network.num_addresses - 1).map(lambda offset: network[offset])


FORBIDDEN_IPV4 = st.one_of(
    ipv4_in("169.254.0.0/16"),
    ipv4_in("0.0.0.0/8"),
    st.sampled_from([ipaddress.IPv4Address(text) for text in ("169.254.169.254", "100.100.100.200", "192.0.0.192")]),
)
FORBIDDEN_IPV6 = st.one_of(
    st.integers(0, 2**118 - 1).map(lambda low: ipaddress.IPv6Address((0xFE80 << 112) | low)),  # fe80::/10
    st.sampled_from([ipaddress.IPv6Address(text) for text in ("fd00:ec2::254", "fd00:ec2::23", "::")]),
)
ALLOWED_IPV4 = st.one_of(
    ipv4_in("127.0.0.0/8"), ipv4_in("10.0.0.0/8"), ipv4_in("172.16.0.0/12"), ipv4_in("192.168.0.0/16")
)
ALLOWED_IPV6 = st.one_of(
    st.just(ipaddress.IPv6Address("::1")),
    st.integers(0, 2**121 - 1).map(lambda low: ipaddress.IPv6Address((0xFC00 << 112) | low)),  # fc00::/7
)


@st.composite
def ipv4_spelling(draw, address):
    """`address` written as inet_aton and the WHATWG URL parser read it: 1 to 4 parts, each decimal, octal or hex."""
    count = draw(st.integers(1, 4))
    octets = list(address.packed)
    parts = [*octets[: count - 1], int.from_bytes(bytes(octets[count - 1 :]), "big")]
    written = []
    for part in parts:
        base = draw(st.sampled_from(["decimal", "octal", "hex", "HEX"]))
        zeros = "0" * draw(st.integers(0, 3))
        if base == "decimal":
            written.append(str(part))
        elif base == "octal":
            written.append("0" + zeros + format(part, "o"))
        else:
            prefix = draw(st.sampled_from(["0x", "0X"]))
            digits = zeros + format(part, "x" if base == "hex" else "X")
            written.append(prefix + digits)
    return ".".join(written)


def escaped(character):
    return "".join(f"%{byte:02X}" for byte in character.encode())


@st.composite
def disguised(draw, text):
    """`text` (an IPv4 host) with what HTTP clients read through: full-width characters, ideographic dots,
    percent-escapes, a trailing dot."""
    if draw(st.booleans()):
        text = text.lower().translate(FULL_WIDTH)
    if draw(st.booleans()):
        text = text.replace(".", draw(st.sampled_from(["\u3002", "\uff0e", "\uff61"])))
    if draw(st.booleans()):
        text = "".join(escaped(character) if draw(st.booleans()) else character for character in text)
    if draw(st.booleans()):
        text += "."
    return text


def ipv6_carrying(address):
    """IPv6 forms that carry an IPv4 address: mapped, NAT64, 6to4."""
    value = int(address)
    return st.sampled_from(
        [
            f"[::ffff:{address}]",
            f"[::FFFF:{value >> 16:x}:{value & 0xFFFF:x}]",
            f"[0:0:0:0:0:ffff:{address}]",
            f"[64:ff9b::{address}]",
            f"[{ipaddress.IPv6Address((0x2002 << 112) | (value << 80))}]",
        ]
    )


@st.composite
def ipv6_spelling(draw, address):
    text = draw(st.sampled_from([address.compressed, address.exploded, address.exploded.upper()]))
    if address.is_link_local and draw(st.booleans()):
        text += "%25" + draw(st.sampled_from(["eth0", "1", "en0"]))
    return f"[{text}]"


def host_of(ipv4, ipv6):
    return st.one_of(
        ipv4.flatmap(ipv4_spelling).flatmap(disguised),
        ipv4.flatmap(ipv6_carrying),
        ipv6.flatmap(ipv6_spelling),
    )


@st.composite
def url_with(draw, host):
    scheme = draw(st.sampled_from(["http", "https"]))
    user = draw(st.sampled_from(["", "user@", "user:pass@", "127.0.0.1@"]))
    port = draw(st.sampled_from(["", ":80", ":8000", ":11434"]))
    path = draw(st.sampled_from(["", "/", "/mcp", "/v1", "/latest/meta-data/"]))
    return f"{scheme}://{user}{draw(host)}{port}{path}"


METADATA_NAMES = st.sampled_from(["metadata.google.internal", "metadata.goog", "metadata"]).flatmap(
    lambda name: st.tuples(st.lists(st.booleans(), min_size=len(name), max_size=len(name)), st.booleans()).map(
        lambda choice: (
            "".join(c.upper() if up else c for c, up in zip(name, choice[0], strict=True)) + ("." if choice[1] else "")
        )
    )
)


@given(url_with(host_of(FORBIDDEN_IPV4, FORBIDDEN_IPV6) | METADATA_NAMES))
def test_a_forbidden_address_is_refused_however_it_is_written(url):
    problem = url_problem(url, resolve=nothing_resolves)

    assert problem is not None, url
    assert problem.startswith("is not allowed: ")
    assert problem.endswith("; an operator may allow it in TOOLGATE_ALLOWED_NETWORKS")


@given(url_with(host_of(ALLOWED_IPV4, ALLOWED_IPV6)))
def test_loopback_and_private_addresses_pass_however_they_are_written(url):
    assume("fd00:ec2:" not in url.lower())
    assert url_problem(url, resolve=nothing_resolves) is None


@given(FORBIDDEN_IPV4.flatmap(lambda address: st.tuples(st.just(address), url_with(ipv4_spelling(address)))))
def test_an_address_in_an_allowed_network_passes(address_and_url):
    address, url = address_and_url
    allowed = AllowedNetworks.parse(["10.0.0.0/8", f"{address}/32"])

    assert url_problem(url, allowed, resolve=nothing_resolves) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254 is a cloud metadata address"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a cloud metadata service"),
        ("http://100.100.100.200/latest/meta-data/", "100.100.100.200 is a cloud metadata address"),
        ("http://2852039166/", "2852039166 (169.254.169.254) is a cloud metadata address"),
        ("http://0.0.0.0:8000/mcp", "0.0.0.0 is an unspecified address"),
        ("http://[::]:8000/mcp", ":: is an unspecified address"),
        ("http://[::ffff:169.254.1.1]/", "::ffff:169.254.1.1 is a link-local address (169.254.1.1)"),
        ("http://0xa9.0376.43518/", "0xa9.0376.43518 (169.254.169.254) is a cloud metadata address"),
        ("http://[fe80::1%25eth0]:8000/", "fe80::1%25eth0 is a link-local address"),
    ],
)
def test_the_refusal_says_what_the_address_is(url, problem):
    assert url_problem(url, resolve=nothing_resolves) == (
        f"is not allowed: {problem}; an operator may allow it in TOOLGATE_ALLOWED_NETWORKS"
    )


def test_a_host_name_is_judged_by_every_address_it_resolves_to():
    resolve = resolving(
        {
            "models.example": ["10.0.0.5", "fd12::5"],
            "sneaky.example": ["10.0.0.5", "169.254.169.254"],
            "v6.example": ["fe80::1"],
        }
    )

    assert url_problem("https://models.example/v1", resolve=resolve) is None
    assert url_problem("http://sneaky.example/mcp", resolve=resolve) == (
        "is not allowed: sneaky.example resolves to 169.254.169.254, a cloud metadata address; an operator may "
        "allow it in TOOLGATE_ALLOWED_NETWORKS"
    )
    assert "v6.example resolves to fe80::1, a link-local address" in url_problem("http://v6.example/", resolve=resolve)
    assert url_problem("http://unknown.example/", resolve=resolve) is None  # nothing to connect to


def test_the_resolver_is_asked_for_the_host_as_clients_read_it_and_the_port_the_url_reaches():
    asked = []

    def resolve(host, port):
        asked.append((host, port))
        return []

    url_problem("https://Models.Example./v1", resolve=resolve)
    url_problem("http://models.example:8080/v1", resolve=resolve)

    assert asked == [("models.example", 443), ("models.example", 8080)]


def test_an_allowed_host_name_passes_without_being_resolved():
    def resolve(host, port):
        raise AssertionError("an allowed name is not resolved")

    allowed = AllowedNetworks.parse(["Metadata.Google.Internal", "imds.internal"])

    assert url_problem("http://metadata.google.internal/", allowed, resolve=resolve) is None
    assert url_problem("http://IMDS.internal./", allowed, resolve=resolve) is None


def test_a_backslash_in_the_host_is_refused():
    assert url_problem("http://example.org\\@169.254.169.254/", resolve=nothing_resolves) == (
        "is not allowed: its host may not contain a backslash"
    )


@pytest.mark.parametrize("entry", ["300.1.1.1/8", "10.0.0.0/33", "not a host", "2852039166", "-bad.example"])
def test_an_allowed_entry_that_is_neither_a_network_nor_a_host_name_is_refused(entry):
    with pytest.raises(ValueError, match=f'TOOLGATE_ALLOWED_NETWORKS: "{entry}" is neither a network'):
        AllowedNetworks.parse([entry])
