"""The agent's provider as the policy proxy's upstream: a chat-completions body in, the answer as parsed JSON out
(or its chunks as the model writes them), through the ChatModel a run of the agent would use — its connection's
deadline, retries, headers and extra body, the key redacted from whatever comes back — so the scripted model answers
the agent's script. A provider connection is asked without the SDK (engine.proxy.forward, through the same pool);
the scripted model, and a connection over a transport a test put in, through the SDK.

The body goes out as the proxy built it and the answer comes back as the server sent it, so that fields Toolgate
does not know pass through to the client. Failures become UpstreamError with the status the client should get.
"""

from dataclasses import replace

from ..providers import ProviderError, model_for_agent
from ..redaction import redact
from . import forward
from .core import UpstreamError


class Upstream:
    """The agent's provider as the proxy asks it: called with a chat-completions body, the parsed answer; `stream`
    gives the answer's chunks as the model writes them. Failures are UpstreamError."""

    def __init__(self, model=None, unavailable=None):
        self.model = model
        self.unavailable = unavailable

    def body(self, body):
        if self.unavailable is not None:
            raise self.unavailable
        return {**body, **self.model.extra_body, "model": body.get("model") or self.model.model}

    def __call__(self, body):
        body = self.body(body)
        try:
            answer = self.model.post(body) if self.model.endpoint is None else forward.post(self.model, body)
            return redact(answer, self.model.secret)
        except ProviderError as error:
            raise UpstreamError(error.status or 502, str(error)) from None

    def stream(self, body):
        body = self.body(body)
        if self.model.endpoint is None:
            chunks = (redact(chunk, self.model.secret) for chunk in self.model.stream(body))
        else:
            chunks = forward.stream(self.model, body)  # which redacts the key from the chunks that can hold it
        try:
            yield from chunks
        except ProviderError as error:
            raise UpstreamError(error.status or 502, str(error)) from None


def upstream_for_agent(config, model_name="", providers=None, environ=None, transport=None):
    """The Upstream of the agent's provider; the agent's model if it names one, else `model_name` (the client's),
    else the connection's default. When the provider cannot be used at all (no such connection, no key, no model)
    asking it raises UpstreamError (502) saying so, like any failed request."""
    try:
        model = model_for_agent(replace(config, model=config.model or model_name), providers, environ, transport)
    except ProviderError as error:
        return Upstream(unavailable=UpstreamError(502, str(error), code="provider_unavailable"))
    return Upstream(model)
