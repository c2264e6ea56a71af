"""The policy proxy's own way to a provider connection: the body sent as JSON bytes through the connection's urllib3
pool (engine.http_transport), the answer parsed with the standard library, without the `openai` SDK.

The proxy sends a body it already holds and passes the answer on as JSON, so the SDK's request building, its
option models, httpx2's request and response objects and its header handling are work for nothing on every
proxied request. What the SDK did that matters is done here the same way: the connection's key and headers, its
retries (408, 409, 429, 5xx and failed connections, the SDK's back-off, Retry-After honoured up to two minutes and
`x-should-retry` obeyed), the total deadline of engine.deadline, and every failure told in the words ChatModel
uses (ChatModel.asking_without_sdk). A streamed answer's server-sent events are read as the SDK reads them. The
loop, the scripted model and the model pages keep the SDK (engine.providers); a process that only proxies never
imports it.
"""

import json
import random
import time
from contextlib import contextmanager
from itertools import chain, count

import urllib3
from urllib3 import exceptions as urllib3_errors

from ..deadline import (
    FIRST_RETRY_WAIT,
    LONGEST_HONOURED_WAIT,
    LONGEST_RETRY_WAIT,
    RETRYABLE_STATUSES,
    DeadlinePassed,
    asked_wait,
    planned_wait,
)
from ..http_transport import CHUNK_BYTES
from ..providers import error_answer_text
from ..redaction import redact

EVENT_STREAM = "text/event-stream"
STREAM_ERROR = "An error occurred during streaming"  # the SDK's words for an error event without a message


def post(model, body):
    """The answer to a chat-completions body, as the JSON the server sent (its text when it is not JSON and the
    server did not say it is); ProviderError as ChatModel.post."""
    data = json.dumps(body).encode()
    with model.asking_without_sdk() as budget:
        response, content = _send(model, budget, data, stream=False)
    text = content.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError as error:
        if "application/json" in response.headers.get("content-type", ""):
            raise model.unreadable(error) from None
        return text


def stream(model, body):
    """The same request streamed: each chunk as JSON while the server writes them, the connection's key redacted
    (ProviderError as `post`); a server that answers with one whole completion yields that completion."""
    data = json.dumps({**body, "stream": True, "stream_options": {"include_usage": True}})
    with model.asking_without_sdk() as budget:
        response, _ = _send(model, budget, data.encode(), stream=True)
        try:
            with _told(model, budget):
                if EVENT_STREAM not in response.headers.get("content-type", ""):
                    yield redact(_parsed(model, b"".join(_read(budget, response))), model.secret)
                    return
                for data in _event_data(_read(budget, response)):
                    if data.startswith("[DONE]"):
                        return
                    chunk = _parsed(model, data)
                    if _may_hold(data, model.secret):
                        chunk = redact(chunk, model.secret)
                    if isinstance(chunk, dict) and chunk.get("error"):
                        error = chunk["error"]
                        message = error.get("message") if isinstance(error, dict) else None
                        raise model.unreadable(message if isinstance(message, str) and message else STREAM_ERROR)
                    yield chunk
        finally:
            _close(response)


def _may_hold(data, secret):
    """Whether the JSON text `data` can hold `secret` in one of its strings: only when the text holds it as it is,
    or writes a character as an escape (\\u0073 for s). A chunk that cannot is not walked through for redaction: most
    of a stream's chunks are a few words of text."""
    return bool(secret) and (secret in data or "\\" in data)


def _parsed(model, data):
    try:
        return json.loads(data)
    except ValueError as error:
        raise model.unreadable(error) from None


def _send(model, budget, data, stream):
    """(the response, its whole body unless `stream` and answered) of the first attempt the SDK would not retry,
    within the budget; ProviderError for an error answer, a failed connection or a timeout, as ChatModel tells
    them."""
    endpoint = model.endpoint
    headers = {**endpoint.headers, "Accept": EVENT_STREAM} if stream else endpoint.headers
    for retries_taken in count():  # the last attempt (max_retries) returns or raises
        left = budget.left()
        if left <= 0:
            raise DeadlinePassed(budget)
        budget.attempts += 1
        last = retries_taken == endpoint.max_retries
        seconds = min(model.timeout, left) if model.timeout else left
        try:
            response = endpoint.pool.urlopen(
                "POST",
                endpoint.url,
                body=data,
                headers=headers,
                timeout=urllib3.Timeout(connect=seconds, read=seconds),
                retries=False,  # retried here, as the SDK retries
                redirect=False,
                preload_content=False,
            )
            content = None
            if not stream or response.status >= 400:
                try:
                    content = b"".join(_read(budget, response))
                finally:
                    _close(response)
        except urllib3_errors.HTTPError as error:
            if budget.left() <= 0:
                raise DeadlinePassed(budget) from None
            if last:
                raise _failure(model, budget, error) from None
            _wait(_backoff(retries_taken), budget)
            continue
        if response.status < 400:
            return response, content
        if not last and _would_retry(response):
            wait, asked = planned_wait(response, retries_taken)
            if wait < budget.left():
                _wait(wait if asked else wait * (1 - 0.25 * random.random()), budget)
                continue
            budget.refused_wait, budget.wait_was_asked = wait, asked
        message = error_answer_text(response.status, content.decode("utf-8", "replace"))
        raise model.refused(response.status, message, budget)


def _failure(model, budget, error):
    """A failed connection or a timeout, told as ChatModel tells them (a refused connection is no timeout, though
    urllib3 makes it a kind of connect timeout)."""
    is_timeout = isinstance(error, urllib3_errors.TimeoutError)
    if is_timeout and not isinstance(error, urllib3_errors.NewConnectionError):
        return model.timed_out(budget)
    return model.unreachable(str(error), budget)


@contextmanager
def _told(model, budget):
    """A streamed body that fails as it is read: the failure told as ChatModel tells it."""
    try:
        yield
    except urllib3_errors.HTTPError as error:
        if budget.left() <= 0:
            raise DeadlinePassed(budget) from None
        raise _failure(model, budget, error) from None


def _would_retry(response):
    """Whether the SDK would retry this error answer (before the deadline has its say)."""
    asked = asked_wait(response.headers)
    if asked is not None and asked > LONGEST_HONOURED_WAIT:
        return False
    should_retry = response.headers.get("x-should-retry")
    if should_retry in ("true", "false"):
        return should_retry == "true"
    return response.status in RETRYABLE_STATUSES or response.status >= 500


def _backoff(retries_taken):
    """The SDK's wait before retrying a failed connection or a timeout."""
    return min(FIRST_RETRY_WAIT * 2**retries_taken, LONGEST_RETRY_WAIT) * (1 - 0.25 * random.random())


def _wait(seconds, budget):
    if seconds >= budget.left():
        raise DeadlinePassed(budget)
    time.sleep(seconds)


def _read(budget, response):
    """The body's bytes as they arrive, the deadline checked after each read (as engine.deadline's DeadlineStream)."""
    while data := response.read1(CHUNK_BYTES):
        if budget.left() <= 0:
            raise DeadlinePassed(budget)
        yield data


def _close(response):
    """A body read to its end gives its connection back to the pool; one left unread closes it."""
    if not response.isclosed():
        response.close()
    response.release_conn()


def _event_data(chunks):
    """The data of each server-sent event in `chunks` (bytes), as the SDK's decoder reads them: lines end with \r\n,
    \n or \r, a blank line ends an event, its `data:` lines joined with \n; other fields, comments and events
    without data are skipped."""
    pending, data = b"", []
    for chunk in chain(chunks, [None]):  # None: the end, where a last line may be left without its line break
        if chunk is None:
            lines = pending.splitlines() if pending else []
        else:
            lines = (pending + chunk).splitlines(keepends=True)
            # the last line may go on in the next chunk (and a \r may be the first half of a \r\n)
            pending = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        for line in lines:
            line = line.rstrip(b"\r\n").decode("utf-8", "replace")
            if not line:
                if data:
                    yield "\n".join(data)
                data = []
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
