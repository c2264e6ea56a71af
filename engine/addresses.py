"""The address rule for every URL Toolgate connects to on someone's say-so (a tool server, a provider connection's
base URL): whoever can save such a URL makes this server send requests there, so it must not point at the
machine's cloud metadata service (instance credentials), at a link-local address (where such services answer), or
at an unspecified address (0.0.0.0 and :: reach this machine by a back door). Loopback and private networks stay
allowed: local model servers and MCP servers live there. An operator may allow more with
TOOLGATE_ALLOWED_NETWORKS (networks in CIDR notation, addresses, or host names).

An address is judged however it is written: the legacy IPv4 forms HTTP clients and resolvers still accept
(`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`, `169.254.43518`), full-width digits and ideographic dots,
percent-escapes, a trailing dot, and IPv6 forms that carry an IPv4 address (`::ffff:169.254.169.254`, NAT64,
6to4). A host name is resolved and every address it resolves to must pass.

The rule itself is pure; `system_resolver` is the one side effect, passed in by the callers (and replaced in
tests)."""

import ipaddress
import re
import socket
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

SETTING = "TOOLGATE_ALLOWED_NETWORKS"
# Names that only ever lead to a cloud provider's metadata service (GCP's, also known by its short name).
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
# Where cloud metadata services answer: most clouds' (link-local, refused as such too), AWS ECS's, AWS's IPv6 ones,
# Alibaba Cloud's, Oracle's.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(text)
    for text in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "fd00:ec2::23", "100.100.100.200", "192.0.0.192")
)
THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")  # 0.0.0.0 itself is this machine, as :: is
NAT64 = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})  # what IDNA reads as a dot
IPV4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


@dataclass(frozen=True)
class AllowedNetworks:
    """What the operator allows besides the rule: networks (an address is allowed inside one) and host names (a
    URL naming one is allowed, whatever it resolves to)."""

    networks: tuple = ()
    names: frozenset = frozenset()

    @classmethod
    def parse(cls, entries):
        """From TOOLGATE_ALLOWED_NETWORKS' entries; a ValueError names an entry that is neither a network, an
        address nor a host name."""
        networks, names = [], set()
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = normal_host(entry)
            if not re.fullmatch(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?", name) or _ipv4_address(name) is not None:
                raise ValueError(f'{SETTING}: "{entry}" is neither a network (such as 169.254.0.0/16) nor a host name')
            names.add(name)
        return cls(tuple(networks), frozenset(names))

    def allows(self, address):
        return any(address in network for network in self.networks)


NOTHING_ALLOWED = AllowedNetworks()


def normal_host(host):
    """A host as HTTP clients read it: percent-escapes decoded, full-width characters and ideographic dots made
    ASCII (IDNA's mapping), lower case, no trailing dot, no IPv6 brackets or zone."""
    host = unicodedata.normalize("NFKC", unquote(host)).translate(DOTS).lower().strip("[]")
    host = host.split("%", 1)[0] if ":" in host else host  # an IPv6 zone (fe80::1%eth0) does not change the address
    return host[:-1] if host.endswith(".") else host


def _ipv4_address(host):
    """The IPv4 address a host written in any of inet_aton's forms stands for (one to four parts, each decimal,
    octal with a leading 0, or hexadecimal with 0x; the last part fills the bytes left), or None."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(IPV4_PART.fullmatch(part) for part in parts):
        return None
    numbers = [int(part[2:] or "0", 16) if part[:2] in ("0x", "0X") else int(part, 8 if part.startswith("0") else 10)
               for part in parts]  # fmt: skip
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for position, number in enumerate(leading):
        value += number << (8 * (3 - position))
    return ipaddress.IPv4Address(value)


def literal_address(host):
    """The address a host written as an IP address stands for (an IPv4 or IPv6 address, in any form), or None
    for a host name."""
    host = normal_host(host)
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    return _ipv4_address(host)


def _embedded_ipv4(address):
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64 or (address in IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def forbidden_kind(address, allowed=NOTHING_ALLOWED):
    """Why an address may not be connected to ("a cloud metadata address", "a link-local address", "an
    unspecified address"), or None when it may."""
    if allowed.allows(address):
        return None
    if address.version == 6 and (embedded := _embedded_ipv4(address)) is not None:
        kind = forbidden_kind(embedded, allowed)
        return kind and f"{kind} ({embedded})"
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_unspecified or address in THIS_NETWORK:
        return "an unspecified address"
    return None


def system_resolver(host, port):
    """Every address the system's resolver gives for `host`; none when the name does not resolve (nothing can be
    connected to then, so nothing is refused)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in found]


def url_problem(url, allowed=NOTHING_ALLOWED, resolve=system_resolver):
    """Why `url` (an http:// or https:// URL, already checked as such) may not be connected to, in words that
    follow the field's name ("is not allowed: ..."), or None."""
    parts = urlsplit(url)
    if "\\" in parts.netloc:  # some clients read a backslash as the end of the host, others as part of it
        return "is not allowed: its host may not contain a backslash"
    written = parts.hostname or ""
    host = normal_host(written)
    if host in allowed.names:
        return None
    if host in METADATA_NAMES:
        return _refused(f"{written} is a cloud metadata service")
    address = literal_address(host)
    if address is not None:
        kind = forbidden_kind(address, allowed)
        shown = written if written == str(address) or address.version == 6 else f"{written} ({address})"
        return kind and _refused(f"{shown} is {kind}")
    for resolved in resolve(host, _port(parts)):
        kind = forbidden_kind(resolved, allowed)
        if kind:
            return _refused(f"{written} resolves to {resolved}, {kind}")
    return None


def _port(parts):
    try:
        port = parts.port
    except ValueError:  # not a port: the URL's own check says so
        port = None
    return port if port is not None else 443 if parts.scheme == "https" else 80


def _refused(reason):
    return f"is not allowed: {reason}; an operator may allow it in {SETTING}"
