"""OpenAI's Chat Completions API, as the proxy speaks it: the canonical form, so its translation is the identity.

Every API the proxy speaks is one module like this one: `read(body)` turns the client's body into a ProxyRequest
(ValidationError naming the field), `answer(exchange, request)` the exchange's chat completion into the body the
client gets, `stream(exchange, request)` into its stream's bytes, and `error_body(...)` an error into the API's
error shape. The gate, the re-asks, the counts and the recording never know which API the client spoke.
"""

from .request import CHAT_COMPLETIONS, read_request
from .stream import server_sent_events

NAME = CHAT_COMPLETIONS


def read(body):
    return read_request(body)


def answer(exchange, request):
    return exchange.completion


def stream(exchange, request):
    return server_sent_events(exchange.completion, request.include_usage)


def error_body(status, message, error_type=None, code=None, param=None):
    """OpenAI's error shape, which OpenAI clients read."""
    error_type = error_type or ("invalid_request_error" if status < 500 else "server_error")
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}
