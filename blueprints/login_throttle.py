"""How long a login must wait after wrong passwords, and how that reads. Each client (address) may get
FREE_PER_CLIENT passwords wrong; then it waits LOGIN_THROTTLE_SECONDS after its latest failure, twice as long after
each further one, up to MAX_WAIT_SECONDS. All clients together may get FREE_OVERALL wrong before the same growing
wait applies to everyone, so that many addresses guessing at once are slowed too. A right password forgets the
client's failures; failures are forgotten after an hour anyway (store/login_failures.py)."""

import math
from typing import NamedTuple

FREE_PER_CLIENT = 5
FREE_OVERALL = 50
MAX_WAIT_SECONDS = 15 * 60


class Wait(NamedTuple):
    seconds: float
    everyone: bool  # the overall limit, not the client's own


def _scope_wait(count, latest, free, first_wait, now):
    if count < free:
        return 0.0
    delay = min(first_wait * 2 ** min(count - free, 32), MAX_WAIT_SECONDS)
    return max(0.0, latest + delay - now)


def wait_rule(first_wait):
    """The rule store.login_failures.start_attempt applies: a Wait, or None when the attempt may go ahead."""

    def wait_for(failures, now):
        own = _scope_wait(failures.client, failures.client_latest, FREE_PER_CLIENT, first_wait, now)
        overall = _scope_wait(failures.overall, failures.overall_latest, FREE_OVERALL, first_wait, now)
        if own <= 0 and overall <= 0:
            return None
        return Wait(max(own, overall), everyone=overall > own)

    return wait_for


def retry_after(wait):
    """The Retry-After header: whole seconds, rounded up."""
    return str(math.ceil(wait.seconds))


def message(wait):
    seconds = math.ceil(wait.seconds)
    if seconds < 120:
        duration = "1 second" if seconds == 1 else f"{seconds} seconds"
    else:
        duration = f"{math.ceil(seconds / 60)} minutes"
    if wait.everyone:
        return (
            "Too many wrong passwords were tried lately, so logging in is paused for everyone. "
            f"Wait {duration}, then try again."
        )
    return f"Too many wrong passwords from your address. Wait {duration}, then try again."
