"""The agent's provider as the policy proxy's upstream: a chat-completions body in, the answer as parsed JSON out,
through the openai client a run of the agent would use (so the scripted model answers the agent's script).

The body goes out as the proxy built it and the answer comes back as the server sent it, so that fields Toolgate
does not know pass through to the client. Failures become UpstreamError with the status the client should get.
"""

from dataclasses import replace

import openai

from .providers import ProviderError, model_for_agent
from .proxy import UpstreamError


def _error_fields(error):
    """(message, type, code) of an upstream error answer in OpenAI's shape, as far as it has them."""
    body = error.body if isinstance(error.body, dict) else {}
    nested = body.get("error") if isinstance(body.get("error"), dict) else body
    message = nested.get("message") or error.message
    return str(message), nested.get("type") or "upstream_error", nested.get("code")


def upstream_for_agent(config, model_name="", providers=None, environ=None, http_client=None):
    """`ask(body)` for the agent's provider; the agent's model if it names one, else `model_name` (the client's).
    When the provider cannot be used at all (no such connection, no key, no model) `ask` raises UpstreamError
    (502) saying so, like any failed request."""
    try:
        model = model_for_agent(replace(config, model=config.model or model_name), providers, environ, http_client)
    except ProviderError as error:
        unavailable = UpstreamError(502, str(error), code="provider_unavailable")

        def refuse(body):
            raise unavailable

        return refuse

    def ask(body):
        body = {**body, "model": body.get("model") or model.model}
        try:
            return model.client.post("/chat/completions", body=body, cast_to=object)
        except openai.APITimeoutError:
            raise UpstreamError(504, "The model did not answer in time (timeout).", code="timeout") from None
        except openai.APIStatusError as error:
            message, error_type, code = _error_fields(error)
            raise UpstreamError(error.status_code, message, error_type, code) from None
        except openai.APIConnectionError as error:
            raise UpstreamError(502, f"Could not reach the model endpoint: {error}", code="unreachable") from None
        except (openai.OpenAIError, ValueError) as error:
            raise UpstreamError(502, f"The model's answer could not be read: {error}") from None

    return ask
