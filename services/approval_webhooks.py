"""The approval webhook (SPEC §2 `approval_webhook`): when a proxied call starts waiting for approval, a JSON POST
tells the agent's webhook where people are — the run, the agent, each waiting call with its arguments (the
provider's key redacted, as traces have it) and the link to decide.

It is sent from a thread of its own (a greenlet under `make run`'s gevent workers) with a short timeout, so a
webhook that fails or hangs never delays the run; a failure is logged. Its URL obeys the address rule of tool
servers and provider connections (engine.addresses, with what TOOLGATE_ALLOWED_NETWORKS allows), judged when it is
sent to.
"""

import logging
import threading

import httpx2

from engine.addresses import NOTHING_ALLOWED, url_problem
from engine.redaction import redact
from engine.types import AWAITING_APPROVAL

logger = logging.getLogger("toolgate")
TIMEOUT_SECONDS = 5.0
EVENT = "approval_requested"


class ApprovalWebhook:
    """The agent's webhook (`url`, '' for none); `run_url`: the address of a run's page, with {run_id}."""

    def __init__(self, url, run_url, allowed_networks=NOTHING_ALLOWED, secret=None):
        self.url = url
        self.run_url = run_url
        self.allowed_networks = allowed_networks
        self.secret = secret

    def notify(self, run):
        """POST the run's waiting calls to the webhook, in a thread of its own; the thread, or None with no webhook."""
        if not self.url:
            return None
        thread = threading.Thread(target=self.send, args=(self.payload(run),), daemon=True)
        thread.start()
        return thread

    def payload(self, run):
        calls = (run.get("pending_round") or {}).get("calls") or []
        return {
            "event": EVENT,
            "run_id": run["id"],
            "agent_id": run["agent_id"],
            "calls": [
                {"id": call["id"], "tool": call["name"], "arguments": redact(call["arguments"], self.secret)}
                for call in calls
                if call["status"] == AWAITING_APPROVAL
            ],
            "url": self.run_url.format(run_id=run["id"]),
        }

    def send(self, payload):
        problem = url_problem(self.url, self.allowed_networks)
        if problem:
            logger.warning("The approval webhook of run %s was not sent: its URL %s", payload["run_id"], problem)
            return
        try:
            with httpx2.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as client:
                response = client.post(self.url, json=payload)
        except httpx2.HTTPError as error:
            logger.warning("The approval webhook of run %s failed: %s", payload["run_id"], error)
            return
        if response.status_code >= 400:
            logger.warning(
                "The approval webhook of run %s was answered with HTTP %s", payload["run_id"], response.status_code
            )
