"""Chat models behind one interface, all through the official `openai` SDK (SPEC §7).

A provider connection is a dict: `label`, `base_url`, `api_key_env` (the *name* of the environment variable that
holds the key; empty for a server that takes none), `default_model`, `timeout` (the total deadline of one
request, retries included), `max_retries` (429, 5xx and connection errors, retried with the SDK's back-off, which
honours Retry-After), `headers` (extra request headers) and `extra_body` (merged into every request body). The
scripted model is the same client pointed at an in-process WSGI endpoint.

Each process keeps one openai client per connection, shared by every run and thread, so its connection pool
keeps connections open from run to run; it is rebuilt when the connection (or its key) changes. The body goes out
as plain JSON through `client.post`, the SDK's documented way to send a request as it is: it keeps the SDK's
auth, retries, errors and response type, and skips the typed transform `chat.completions.create` runs over the
whole transcript on every request. `openai` and `httpx2` are imported only once a model is needed, and the SDK's
client of a connection only once something asks through the SDK: the policy proxy sends through the connection's
pool without it (engine.proxy.forward), so a process that only proxies never imports `openai` (27 MB a process).
"""

import json
import os
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlparse

from .config import SCRIPTED_PROVIDER
from .redaction import redact
from .scripted import ScriptedModel
from .types import USAGE_KEYS, ModelResponse, ToolCall

SCRIPTED_BASE_URL = "http://scripted.toolgate.invalid/v1"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_KEY_VARIABLE = "OPENAI_API_KEY"
SCRIPTED_CLIENTS_KEPT = 64
CONNECTION_CHECK_MESSAGE = "Reply with the single word OK."
# The body fields Toolgate sends itself; a connection's extra_body may add any other.
REQUEST_FIELDS = frozenset(
    {"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream"}
    | {"temperature", "top_p", "seed", "max_tokens"}
)
MAX_RESPONSE_MB = 5  # of text (content, call ids, names and arguments) in one model response
UNREADABLE = "The model's answer could not be read"


class ProviderError(Exception):
    """The model could not be asked or its answer could not be read; the text is shown to people, key redacted.
    `status`: the HTTP status the endpoint answered with, when it answered with an error."""

    def __init__(self, text, status=None):
        super().__init__(text)
        self.status = status


@dataclass(frozen=True)
class RequestSettings:
    """What an agent sends with every request besides the messages and the tools (SPEC §2)."""

    tool_choice: str = "auto"
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None

    @classmethod
    def of(cls, config):
        return cls(config.tool_choice, config.temperature, config.top_p, config.seed, config.max_tokens)

    def sampling(self):
        """The sampling fields that are set: each is sent only when it is not null."""
        fields = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        return {key: value for key, value in fields.items() if value is not None}

    def tool_choice_field(self):
        if self.tool_choice in ("auto", "required"):
            return self.tool_choice
        return {"type": "function", "function": {"name": self.tool_choice}}


@dataclass(frozen=True)
class Endpoint:
    """A connection's chat-completions endpoint for a sender of its own bytes (engine.proxy.forward): the URL, the
    headers the SDK would send that matter (the key, the connection's own), the retries, and the urllib3 pool of the
    connection's transport (engine.http_transport), shared with its SDK client."""

    url: str
    headers: dict
    max_retries: int
    pool: object


class ChatModel:
    """One run's view of a shared client: the model name, the agent's request settings, the connection's extra
    body, the request deadline, and the key to redact from whatever comes back. `client`: the SDK's client, or the
    connection's SharedClient, which builds it the first time the SDK is asked. `endpoint`: the connection's
    Endpoint, for a connection that sends through its own pool (not the scripted model, nor a test's transport).
    `keyless`: a connection that sends no key (the SDK is told to send no Authorization header)."""

    def __init__(
        self, client, model, settings=None, *, extra_body=None, timeout=None, keyless=False, secret=None, endpoint=None
    ):
        self._client = client
        self.endpoint = endpoint
        self.model = model
        self.settings = settings or RequestSettings()
        self.secret = secret
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self._constant_fields = {**self.settings.sampling(), **self.extra_body}
        self.keyless = keyless

    @property
    def client(self):
        if isinstance(self._client, SharedClient):
            self._client = self._client()
        return self._client

    @property
    def _options(self):
        import openai

        return {"security": {"bearer_auth": True}, "headers": {"Authorization": openai.omit} if self.keyless else {}}

    def request_body(self, messages, tools=None, parallel_tool_calls=None):
        """The chat-completions body: tools, tool_choice and parallel_tool_calls only when tools are offered."""
        body = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = self.settings.tool_choice_field()
            if parallel_tool_calls is not None:
                body["parallel_tool_calls"] = parallel_tool_calls
        body.update(self._constant_fields)
        return body

    def complete(self, messages, tools=None, parallel_tool_calls=None):
        """Ask the model; a ModelResponse, or ProviderError saying in words what happened to the request."""
        completion = self.post(self.request_body(messages, tools, parallel_tool_calls))
        return read_completion(completion, self.secret)

    def post(self, body):
        """Send a chat-completions body as it is, within the deadline, with the connection's auth, headers and
        retries; the answer as the JSON the server sent (which the policy proxy passes on, fields Toolgate does
        not know included). ProviderError saying in words what happened to the request."""
        with self.asking():
            answer = self.client.post("/chat/completions", body=body, cast_to=object, options=self._options)
        if isinstance(answer, str):  # a server that did not say its body is JSON: the SDK hands over the text
            try:
                return json.loads(answer)
            except ValueError:
                return answer  # not an answer read_completion can find a message in
        return answer

    def stream(self, body):
        """The same request streamed: each chunk the server sends, as JSON, while it writes them (ProviderError as
        `post`). A server that answers a streamed request with one whole completion yields that completion."""
        import openai

        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with self.asking():
            chunks = self.client.post(
                "/chat/completions",
                body=body,
                cast_to=object,
                options=self._options,
                stream=True,
                stream_cls=openai.Stream[object],
            )
            with chunks:  # closes the upstream connection when the client stops reading, too
                if "text/event-stream" not in chunks.response.headers.get("content-type", ""):
                    chunks.response.read()
                    yield chunks.response.json()
                    return
                yield from chunks

    @contextmanager
    def asking(self):
        """The request's deadline, and what can go wrong with a request through the SDK told in words
        (ProviderError)."""
        import openai

        with self.asking_without_sdk() as budget:
            try:
                yield budget
            except openai.APITimeoutError:
                raise self.timed_out(budget) from None
            except openai.APIStatusError as error:
                raise self.refused(error.status_code, _error_text(error.body, error.message), budget) from None
            except openai.APIConnectionError as error:
                raise self.unreachable(str(error.__cause__ or "") or str(error), budget) from None
            except openai.OpenAIError as error:
                raise self.unreadable(error) from None

    @contextmanager
    def asking_without_sdk(self):
        """`asking` for a request sent without the SDK (engine.proxy.forward), which tells its own failures: the
        deadline, and an answer that could not be read."""
        from .deadline import DeadlinePassed, request_budget

        with request_budget(self.timeout or DEFAULT_TIMEOUT) as budget:
            try:
                yield budget
            except DeadlinePassed:
                raise self.deadline_passed(budget) from None
            except (ValueError, TypeError) as error:
                raise self.unreadable(error) from None

    # What went wrong with a request, in words: one wording whoever sent it (the SDK here, the policy proxy's own
    # sending in engine.proxy.forward).

    def deadline_passed(self, budget):
        return self.error(f"The model did not answer within the {budget.seconds:g} s timeout", budget)

    def timed_out(self, budget):
        return self.error("The model did not answer in time (timeout)", budget)

    def refused(self, status, message, budget):
        text = f"The model endpoint answered HTTP {status}{_attempts(budget)}: {message}"
        if budget.refused_wait is not None:
            text = f"{_sentence(text)} Not retried: {_refused_wait(budget)}"
        return self.error(text, status=status)

    def unreachable(self, reason, budget):
        return self.error(f"Could not reach the model endpoint{_attempts(budget)}: {reason}")

    def unreadable(self, error):
        return self.error(f"The model's answer could not be read: {error}")

    def error(self, text, budget=None, status=None):
        if budget is not None:
            text += _attempts(budget, ", after")
        return ProviderError(redact(_sentence(text), self.secret), status)


def _refused_wait(budget):
    timeout = f"the {budget.seconds:g} s timeout"
    if budget.wait_was_asked:
        return f"it asked to wait {budget.refused_wait:g} s, which would pass {timeout}"
    return f"the next try, {budget.refused_wait:g} s later, would pass {timeout}"


def _attempts(budget, before=" after"):
    return f"{before} {budget.attempts} attempts" if budget.attempts > 1 else ""


def _sentence(text):
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _error_text(body, message):
    """What an error answer says: the message of its JSON body (`body`, as the SDK reads it: the "error" object when
    there is one), else its text, else the SDK's `message`."""
    if isinstance(body, dict):
        nested = body.get("error")
        text = nested.get("message") if isinstance(nested, dict) else body.get("message")
        if text:
            return str(text).strip()
    if isinstance(body, str) and body:
        return body
    return str(message)


def error_answer_text(status, text):
    """_error_text of an error answer whose body is `text`, read as the SDK reads one (its body and its message)."""
    text = text.strip()
    try:
        body = json.loads(text)
    except ValueError:
        return _error_text(text, f"Error code: {status}")
    error = body.get("error", body) if isinstance(body, dict) else None
    said = error.get("message") if isinstance(error, dict) else None
    message = f"Error code: {status} - {said}" if isinstance(said, str) and said else f"Error code: {status}"
    return _error_text(error if isinstance(body, dict) else body, message)


def check_answer_size(texts):
    """A response too large to store and show, or holding text that is not valid Unicode, is not read."""
    try:
        size = sum(len(text.encode("utf-8")) for text in texts if isinstance(text, str))
    except UnicodeEncodeError:
        raise ProviderError("The model's answer could not be read: it holds text that is not valid Unicode.") from None
    if size > MAX_RESPONSE_MB * 1024 * 1024:
        raise ProviderError(f"The model's answer is larger than {MAX_RESPONSE_MB} MB ({size:,} bytes of text).")


def _field(value, name):
    """A field of an answer, whether the SDK parsed it into objects or it is the JSON the server sent."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _content_text(content):
    """The answer's text: a string, or a list of content parts read as their joined text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = (_field(part, "text") for part in content)
        return "".join(text for text in parts if isinstance(text, str))
    return None


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_usage(usage):
    """{"prompt_tokens", "completion_tokens", "total_tokens"}, or None when the answer did not say."""
    prompt = _count(_field(usage, "prompt_tokens"))
    completion = _count(_field(usage, "completion_tokens"))
    if prompt is None or completion is None:
        return None
    total = _count(_field(usage, "total_tokens"))
    return dict(zip(USAGE_KEYS, (prompt, completion, prompt + completion if total is None else total), strict=True))


def read_completion(completion, secret=None):
    """The ModelResponse of a chat completion (the SDK's object or plain JSON), the key `secret` redacted from its
    text; ProviderError saying in words what makes it unreadable."""
    choices = _field(completion, "choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = _field(choice, "message") if choice is not None else None
    if message is None or isinstance(message, (str, list, int, float)):
        raise ProviderError(f"{UNREADABLE}: it has no message.")
    tool_calls = _field(message, "tool_calls") or []
    if not isinstance(tool_calls, list):
        raise ProviderError(f"{UNREADABLE}: its tool_calls are not a list.")
    calls = []
    for number, data in enumerate(tool_calls, start=1):
        function = _field(data, "function")
        name = _field(function, "name") if function is not None else None
        if not isinstance(name, str) or not name:
            raise ProviderError(f"{UNREADABLE}: tool call {number} has no function name.")
        call_id, arguments = _field(data, "id"), _field(function, "arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(ToolCall(call_id if isinstance(call_id, str) else "", name, redact(arguments, secret)))
    finish_reason, model = _field(choice, "finish_reason"), _field(completion, "model")
    content = redact(_content_text(_field(message, "content")), secret)
    model = redact(model, secret) if isinstance(model, str) and model else None
    check_answer_size([content, model, *(text for call in calls for text in (call.id, call.name, call.arguments))])
    return ModelResponse(
        content=content,
        tool_calls=tuple(calls),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=read_usage(_field(completion, "usage")),
        model=model,
    )


@lru_cache(maxsize=SCRIPTED_CLIENTS_KEPT)
def _scripted_client(script_json):
    import httpx2
    import openai

    transport = httpx2.WSGITransport(app=ScriptedModel(json.loads(script_json)))
    return openai.OpenAI(
        api_key="scripted",
        base_url=SCRIPTED_BASE_URL,
        max_retries=0,
        http_client=httpx2.Client(transport=transport, base_url=SCRIPTED_BASE_URL),
    )


def scripted_model(script, model="scripted", settings=None):
    """The scripted model for this script; the client behind it is shared by every run of the same script."""
    return ChatModel(_scripted_client(json.dumps(script)), model or "scripted", settings)


_clients_lock = threading.Lock()
_connection_clients = {}  # connection id -> (what the client was built from, its SharedClient)


def _no_key():
    return ""


class SharedClient:
    """A connection's transport (`network`), and called, its openai client sending through it, built the first
    time it is asked for: the policy proxy sends through the transport alone."""

    def __init__(self, connection, api_key, timeout, max_retries, transport):
        self.network = transport or _network_transport(connection.get("base_url") or "")
        self.arguments = {
            "api_key": api_key or _no_key,
            "base_url": connection.get("base_url") or None,
            "timeout": timeout,
            "max_retries": max_retries,
            "default_headers": dict(connection.get("headers") or {}),
        }
        self.client = None

    def __call__(self):
        with _clients_lock:
            if self.client is None:
                import httpx2
                import openai

                from .deadline import DeadlineTransport

                network = DeadlineTransport(self.network, self.arguments["max_retries"])
                http_client = httpx2.Client(transport=network, follow_redirects=True)
                self.client = openai.OpenAI(**self.arguments, http_client=http_client)
                # A client replaced by an edited connection may still serve a run in flight: its pooled connections
                # are closed once nothing holds it any more, instead of being left open for the garbage collector.
                weakref.finalize(self.client, http_client.close)
            return self.client


def _connection_client(connection, api_key, timeout, max_retries, transport):
    """The connection's SharedClient, one a process, rebuilt when the connection (or its key) changes."""
    headers = dict(connection.get("headers") or {})
    built_from = (connection.get("base_url"), api_key, timeout, max_retries, json.dumps(headers), transport)
    with _clients_lock:
        cached = _connection_clients.get(connection.get("id"))
        if cached is not None and cached[0] == built_from:
            return cached[1]
        shared = SharedClient(connection, api_key, timeout, max_retries, transport)
        _connection_clients[connection.get("id")] = (built_from, shared)
        return shared


def _endpoint_url(connection, shared):
    """The connection's chat-completions URL, where the SDK's client sends: its base URL read as the SDK reads it,
    and for a connection that names none, the SDK's own choice (its environment variable, else OpenAI's)."""
    import httpx2

    base_url = httpx2.URL(connection["base_url"]) if connection.get("base_url") else shared().base_url
    return f"{str(base_url).rstrip('/')}/chat/completions"


def _network_transport(base_url):
    """The transport to the server (engine.http_transport), through the proxy the environment names for it, as
    httpx2 itself would."""
    import urllib.request

    from .http_transport import PooledTransport

    url = urlparse(base_url)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(url.hostname or ""):
        return PooledTransport(proxy)
    return PooledTransport()


def connection_model(connection, model="", environ=None, transport=None, settings=None):
    """A ChatModel for an OpenAI-compatible server. `transport` (an httpx2 transport) lets tests put one under it."""
    environ = os.environ if environ is None else environ
    label = connection.get("label", "")
    key_name = connection.get("api_key_env", DEFAULT_KEY_VARIABLE)
    api_key = environ.get(key_name) if key_name else None
    if key_name and not api_key:
        raise ProviderError(
            f'The environment variable "{key_name}" that holds the API key is not set (leave the variable\'s name '
            "empty on the provider connection if the server takes no key)."
        )
    try:
        timeout = float(connection.get("timeout") or DEFAULT_TIMEOUT)
        max_retries = int(connection.get("max_retries", DEFAULT_MAX_RETRIES))
    except (TypeError, ValueError):
        raise ProviderError(f'The provider "{label}" has an invalid timeout or retry count.') from None
    chosen = model or connection.get("default_model") or ""
    if not chosen:
        raise ProviderError(f'No model is set for the provider "{label}" or the agent.')
    shared = _connection_client(connection, api_key, timeout, max_retries, transport)
    endpoint = None
    if transport is None:
        auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        endpoint = Endpoint(
            _endpoint_url(connection, shared),
            {
                "Accept": "application/json",
                "Content-Type": "application/json",
                **auth,
                **(connection.get("headers") or {}),
            },
            max_retries,
            shared.network.pool,
        )
    return ChatModel(
        shared,
        chosen,
        settings,
        extra_body=connection.get("extra_body"),
        timeout=timeout,
        keyless=not api_key,
        secret=api_key,
        endpoint=endpoint,
    )


def model_for_agent(config, providers=None, environ=None, transport=None):
    """The ChatModel an agent talks to: its script, or the provider connection it names."""
    settings = RequestSettings.of(config)
    if config.provider == SCRIPTED_PROVIDER:
        return scripted_model(list(config.script), config.model, settings)
    connection = (providers or {}).get(config.provider)
    if connection is None:
        raise ProviderError(f'The provider connection "{config.provider}" does not exist.')
    return connection_model(connection, config.model, environ, transport, settings)


def check_connection(connection, environ=None, transport=None):
    """Send one tiny request through the connection, as a run would: the ModelResponse and the latency in ms.
    Raises ProviderError saying what went wrong."""
    model = connection_model(connection, environ=environ, transport=transport)
    started = time.perf_counter()
    response = model.complete([{"role": "user", "content": CONNECTION_CHECK_MESSAGE}])
    return response, (time.perf_counter() - started) * 1000
