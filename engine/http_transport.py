"""The network under every provider connection's openai client: an httpx2 transport that sends through urllib3's
connection pool.

httpx2's own pool (httpcore2) checks every idle connection for a hang-up before it hands one out and again each
time a response closes, by polling its socket: under `make run`'s gevent workers each poll is a round through the
event loop, so a request cost more the more connections a worker kept. bench.gateway measured the SDK's forwarding
of one request at 4.6 ms of CPU with 300 in flight through httpx2's pool and 2.4 ms through urllib3's, which takes
its most recent idle connection and checks that one alone. The SDK still builds, retries and reads every request:
only the sending changes.

Errors come out as the httpx2 exceptions the SDK and engine.deadline know (a timeout is a timeout, a refused
connection a connect error). The body is passed on as the server sent it; httpx2 decodes gzip and the like.
"""

from contextlib import contextmanager

import httpx2
import urllib3
from urllib3 import exceptions as urllib3_errors

CHUNK_BYTES = 65536
# Idle connections kept per server: as many as a worker has requests in flight (`make run`: 1000 connections a
# worker). A pool never makes a request wait for a connection (block=False); connections beyond this many are
# closed when their response ends instead of kept.
IDLE_CONNECTIONS = 1000

# Most specific first: urllib3 makes a refused connection a kind of connect timeout, which it is not. Any other
# urllib3 error is a transport error. (With retries=False urllib3 raises each error itself, never MaxRetryError.)
_ERRORS = (
    (urllib3_errors.NewConnectionError, httpx2.ConnectError),
    (urllib3_errors.ConnectTimeoutError, httpx2.ConnectTimeout),
    (urllib3_errors.ReadTimeoutError, httpx2.ReadTimeout),
    (urllib3_errors.ProxyError, httpx2.ProxyError),
    (urllib3_errors.SSLError, httpx2.ConnectError),
    (urllib3_errors.ProtocolError, httpx2.RemoteProtocolError),
)


@contextmanager
def _as_httpx_errors(request):
    try:
        yield
    except urllib3_errors.HTTPError as error:
        mapped = next((mapped for raised, mapped in _ERRORS if isinstance(error, raised)), httpx2.TransportError)
        raise mapped(str(error), request=request) from error


class _ResponseBody(httpx2.SyncByteStream):
    """The response's bytes as they arrive (read1: a streamed answer's chunk is passed on as soon as it is read, and
    engine.deadline checks its deadline between reads)."""

    def __init__(self, response, request):
        self.response = response
        self.request = request

    def __iter__(self):
        with _as_httpx_errors(self.request):
            while data := self.response.read1(CHUNK_BYTES, decode_content=False):
                yield data

    def close(self):
        """A body read to its end gives its connection back to the pool; one left unread (a client that went away
        mid-stream) closes it, so that nothing the server still sends is read as the next answer."""
        if not self.response.isclosed():
            self.response.close()
        self.response.release_conn()


class PooledTransport(httpx2.BaseTransport):
    """Send through urllib3's pool, or through the proxy at `proxy_url` (http://…) when one is given."""

    def __init__(self, proxy_url=None):
        options = {"maxsize": IDLE_CONNECTIONS, "block": False, "ssl_context": httpx2.create_ssl_context()}
        self.pool = urllib3.ProxyManager(proxy_url, **options) if proxy_url else urllib3.PoolManager(**options)

    def handle_request(self, request):
        timeouts = request.extensions.get("timeout", {})
        with _as_httpx_errors(request):
            response = self.pool.urlopen(
                request.method,
                str(request.url),
                body=request.read(),
                headers=dict(request.headers.items()),  # a name sent twice: its values joined by commas
                timeout=urllib3.Timeout(connect=timeouts.get("connect"), read=timeouts.get("read")),
                retries=False,  # the SDK retries, within engine.deadline's budget
                redirect=False,  # the client follows redirects itself
                preload_content=False,
                decode_content=False,
            )
        return httpx2.Response(
            response.status,
            headers=list(response.headers.iteritems()),
            stream=_ResponseBody(response, request),
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("latin-1", "replace"),
            },
        )

    def close(self):
        self.pool.clear()
