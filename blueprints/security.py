"""What every request and response goes through, whoever serves the app: the Host allow-list and the security
headers.

A page elsewhere can make a browser send requests here under its own name (DNS rebinding), so a request whose
`Host` is not one of ours is refused before anything reads it. The headers forbid inline scripts and styles, and
framing by another site: the templates load their script and styles from static/ only.
"""

from flask import request

from blueprints import error_response
from services.settings import configured_names

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def host_name(host):
    """The name part of a Host header, lowercased: "[::1]:5000" → "[::1]", "Example.org:80" → "example.org"."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    if host.count(":") > 1:  # an IPv6 address written without brackets, as in TOOLGATE_ALLOWED_HOSTS
        return f"[{host}]"
    return host.partition(":")[0]


def allowed_hosts():
    return {*LOOPBACK_HOSTS, *(host_name(host) for host in configured_names("ALLOWED_HOSTS"))}


def refuse_other_hosts():
    if host_name(request.host) not in allowed_hosts():
        return error_response(
            400,
            "Unknown host name",
            "This server does not answer to the host name in the address. An administrator can add it to "
            "TOOLGATE_ALLOWED_HOSTS.",
        )
    return None


def add_security_headers(response):
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def init_app(app):
    app.before_request(refuse_other_hosts)
    app.after_request(add_security_headers)
