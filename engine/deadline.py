"""One model request's timeout as a total deadline, retries included, enforced underneath the openai SDK.

httpx2's timeouts bound each network operation, and the SDK's retries and back-off come on top: a body that
trickles one byte every quarter second never trips a 2 s read timeout. So ChatModel opens a `Budget` around each
request, and the `DeadlineTransport` between the SDK and the network holds every attempt to it: each attempt's
timeouts are cut to the time left, the body is checked after every chunk, and a retryable answer (429, 5xx) is
marked `x-should-retry: false` (a header the SDK obeys) when the wait it asks for would pass the deadline.

Once the deadline has passed the transport raises DeadlinePassed. It is not an httpx2 error, so the SDK neither
retries nor wraps it (the SDK lets a transport's own exceptions through unchanged).
"""

import contextvars
import email.utils
import time
from contextlib import contextmanager

import httpx2

RETRYABLE_STATUSES = frozenset({408, 409, 429})
# The SDK's back-off when the server names no wait: 0.5 s doubling per retry, at most 8 s (openai._constants).
FIRST_RETRY_WAIT = 0.5
LONGEST_RETRY_WAIT = 8.0
LONGEST_HONOURED_WAIT = 120.0  # a longer Retry-After makes the SDK give up at once


class DeadlinePassed(Exception):
    def __init__(self, budget):
        self.budget = budget
        super().__init__(f"no answer within {budget.seconds:g} s")


class Budget:
    """The deadline of one request and what happened to it: how many attempts were sent, and the wait a
    retryable answer asked for when it was more than the time left."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.attempts = 0
        self.refused_wait = None
        self.wait_was_asked = False

    def left(self):
        return self.deadline - time.monotonic()


_current_budget = contextvars.ContextVar("toolgate_request_budget", default=None)


@contextmanager
def request_budget(seconds):
    """The budget the transport holds the requests sent inside this block to (in this thread)."""
    budget = Budget(seconds)
    token = _current_budget.set(budget)
    try:
        yield budget
    finally:
        _current_budget.reset(token)


def asked_wait(headers):
    """The wait in seconds an answer's Retry-After (or retry-after-ms) asks for; None when it asks none."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            return float(headers[name]) / divisor
        except (KeyError, ValueError):
            continue
    asked_date = email.utils.parsedate_tz(headers.get("retry-after", ""))
    return None if asked_date is None else email.utils.mktime_tz(asked_date) - time.time()


def planned_wait(response, retries_taken):
    """How long the SDK would wait before retrying this answer, and whether the server asked for that wait (the
    SDK honours up to two minutes of it) or it is the SDK's own back-off."""
    asked = asked_wait(response.headers)
    if asked is not None and 0 < asked <= LONGEST_HONOURED_WAIT:
        return asked, True
    return min(FIRST_RETRY_WAIT * 2**retries_taken, LONGEST_RETRY_WAIT), False


class DeadlineStream(httpx2.SyncByteStream):
    def __init__(self, stream, budget):
        self.stream = stream
        self.budget = budget

    def __iter__(self):
        try:
            for chunk in self.stream:
                if self.budget.left() <= 0:
                    raise DeadlinePassed(self.budget)
                yield chunk
        except httpx2.TimeoutException:
            if self.budget.left() <= 0:
                raise DeadlinePassed(self.budget) from None
            raise

    def close(self):
        self.stream.close()


class DeadlineTransport(httpx2.BaseTransport):
    """Wraps the transport a connection's client sends through; without a budget it only passes requests on."""

    def __init__(self, transport, max_retries):
        self.transport = transport
        self.max_retries = max_retries

    def handle_request(self, request):
        budget = _current_budget.get()
        if budget is None:
            return self.transport.handle_request(request)
        left = budget.left()
        if left <= 0:
            raise DeadlinePassed(budget)
        budget.attempts += 1
        timeouts = request.extensions.get("timeout", {})
        request.extensions["timeout"] = {
            key: left if timeouts.get(key) is None else min(timeouts[key], left)
            for key in ("connect", "read", "write", "pool")
        }
        try:
            response = self.transport.handle_request(request)
        except httpx2.TimeoutException:
            if budget.left() <= 0:
                raise DeadlinePassed(budget) from None
            raise
        retries_taken = int(request.headers.get("x-stainless-retry-count", "0") or 0)
        if self._would_retry(response, retries_taken):
            wait, asked = planned_wait(response, retries_taken)
            if wait >= budget.left():
                response.headers["x-should-retry"] = "false"
                budget.refused_wait, budget.wait_was_asked = wait, asked
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=DeadlineStream(response.stream, budget),
            extensions=response.extensions,
        )

    def _would_retry(self, response, retries_taken):
        retryable = response.status_code in RETRYABLE_STATUSES or response.status_code >= 500
        return retryable and retries_taken < self.max_retries and "x-should-retry" not in response.headers

    def close(self):
        self.transport.close()
