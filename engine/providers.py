"""Chat models behind one interface, all through the official `openai` SDK (SPEC §7).

A provider connection is a dict: `label`, `base_url`, `api_key_env` (the *name* of the environment variable
holding the key), `default_model`, `timeout`, and optionally `max_retries` (default 0: a failed request ends
the run at once, so `timeout` is the longest a run waits for one answer). The scripted model is the same
client pointed at an in-process WSGI endpoint.
"""

import os

import httpx2
import openai

from .scripted import ScriptedModel
from .types import ModelResponse, ToolCall

SCRIPTED_BASE_URL = "http://scripted.toolgate.invalid/v1"
DEFAULT_TIMEOUT = 60.0
MAX_RESPONSE_MB = 5  # of text (content, call ids, names and arguments) in one model response


class ProviderError(Exception):
    """The model could not be asked or its answer could not be read; the text is shown to people."""


class ChatModel:
    def __init__(self, client, model):
        self.client = client
        self.model = model

    def complete(self, messages, tools=None, parallel_tool_calls=None):
        """Ask the model. Without tools, no `tools`, `tool_choice` nor `parallel_tool_calls` is sent."""
        request = {"model": self.model, "messages": messages}
        if tools:
            request["tools"] = tools
            if parallel_tool_calls is not None:
                request["parallel_tool_calls"] = parallel_tool_calls
        try:
            completion = self.client.chat.completions.create(**request)
        except openai.APITimeoutError:
            raise ProviderError("The model did not answer in time (timeout).") from None
        except openai.APIStatusError as error:
            raise ProviderError(f"The model endpoint answered HTTP {error.status_code}: {_error_text(error)}") from None
        except openai.APIConnectionError as error:
            raise ProviderError(f"Could not reach the model endpoint: {error}") from None
        except (openai.OpenAIError, ValueError, TypeError) as error:
            raise ProviderError(f"The model's answer could not be read: {error}") from None
        return _read_completion(completion)


def _error_text(error):
    body = error.body
    if isinstance(body, dict):
        nested = body.get("error")
        message = nested.get("message") if isinstance(nested, dict) else body.get("message")
        if message:
            return str(message)
    return str(error.message)


def _read_completion(completion):
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices or getattr(choices[0], "message", None) is None:
        raise ProviderError("The model's answer could not be read: it has no message.")
    message = choices[0].message
    calls = []
    for number, call in enumerate(message.tool_calls or [], start=1):
        function = getattr(call, "function", None)
        if function is None or not getattr(function, "name", None):
            raise ProviderError(f"The model's answer could not be read: tool call {number} has no function name.")
        calls.append(ToolCall(id=call.id or f"call_{number}", name=function.name, arguments=function.arguments or ""))
    content = message.content if isinstance(message.content, str) else None
    _check_text_size([content, *(text for call in calls for text in (call.id, call.name, call.arguments))])
    return ModelResponse(content=content, tool_calls=tuple(calls))


def _check_text_size(texts):
    """A response too large to store and show, or holding text that is not valid Unicode, is not read."""
    try:
        size = sum(len(text.encode("utf-8")) for text in texts if isinstance(text, str))
    except UnicodeEncodeError:
        raise ProviderError("The model's answer could not be read: it holds text that is not valid Unicode.") from None
    if size > MAX_RESPONSE_MB * 1024 * 1024:
        raise ProviderError(f"The model's answer is larger than {MAX_RESPONSE_MB} MB ({size:,} bytes of text).")


def scripted_model(script, model="scripted"):
    transport = httpx2.WSGITransport(app=ScriptedModel(script))
    client = openai.OpenAI(
        api_key="scripted",
        base_url=SCRIPTED_BASE_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=transport, base_url=SCRIPTED_BASE_URL),
    )
    return ChatModel(client, model or "scripted")


def connection_model(connection, model="", environ=None, http_client=None):
    """A ChatModel for an OpenAI-compatible server. `http_client` lets tests put a transport underneath."""
    environ = os.environ if environ is None else environ
    key_name = connection.get("api_key_env") or "OPENAI_API_KEY"
    api_key = environ.get(key_name)
    if not api_key:
        raise ProviderError(f'The environment variable "{key_name}" that holds the API key is not set.')
    try:
        timeout = float(connection.get("timeout") or DEFAULT_TIMEOUT)
        max_retries = int(connection.get("max_retries", 0))
    except (TypeError, ValueError):
        raise ProviderError(
            f'The provider "{connection.get("label", "")}" has an invalid timeout or retry count.'
        ) from None
    client = openai.OpenAI(
        api_key=api_key,
        base_url=connection.get("base_url") or None,
        timeout=timeout,
        max_retries=max_retries,
        http_client=http_client,
    )
    chosen = model or connection.get("default_model") or ""
    if not chosen:
        raise ProviderError(f'No model is set for the provider "{connection.get("label", "")}" or the agent.')
    return ChatModel(client, chosen)


def model_for_agent(config, providers=None, environ=None, http_client=None):
    """The ChatModel an agent talks to: its script, or the provider connection it names."""
    if config.provider == "scripted":
        return scripted_model(list(config.script), config.model)
    connection = (providers or {}).get(config.provider)
    if connection is None:
        raise ProviderError(f'The provider connection "{config.provider}" does not exist.')
    return connection_model(connection, config.model, environ, http_client)
