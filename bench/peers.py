"""The gateways a user would pick instead of Toolgate, for bench.gateway to measure beside it: the LiteLLM proxy and
the Portkey gateway, at the releases the issue measured. `make peers` installs them under .peers/ (LiteLLM in a
virtualenv of its own, Portkey with npm); `installed()` and `missing()` say which are there.

`Served(peer, folder, upstream_url)` starts one as a process of its own on a free port, pointed at the model server
at `upstream_url` and served as its own start command serves it (one process, its defaults); `ready()` waits until it
answers on 127.0.0.1 and gives the URL of its /v1/chat/completions, `headers` are what a client sends with each
request there, and `stop()` ends its whole process group."""

import json
import os
import secrets
import signal
import socket
import subprocess
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import httpx2

from tests.live_http import end_process_group

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / ".peers"
UPSTREAM_KEY = "sk-bench-upstream"
MODELS = ("bench-1s", "instant", "stream-2s")
LITELLM_OFFLINE = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # the cost map bundled with it, not a download at every start
    "LITELLM_TELEMETRY_DISABLED": "true",
}


@dataclass(frozen=True)
class Peer:
    name: str
    release: str
    serving: str  # how it is served, as bench.gateway prints it
    folder: str  # under .peers/, with the `.installed` stamp make writes last
    ready_path: str  # answers 200 once it serves

    def installed(self):
        return (PEERS / self.folder / ".installed").exists()


LITELLM = Peer(
    "LiteLLM",
    "LiteLLM proxy 1.108.14",
    "`litellm --config`: one process (uvicorn), no database, a master key",
    "litellm",
    "/health/liveliness",
)
PORTKEY = Peer(
    "Portkey",
    "Portkey gateway 1.15.2",
    "its start-server.js --headless: one Node.js process, the upstream named in each request's headers",
    "portkey",
    "/",
)
ALL = (LITELLM, PORTKEY)


def installed():
    return [peer for peer in ALL if peer.installed()]


def missing():
    return [peer for peer in ALL if not peer.installed()]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _litellm(folder, port, upstream_url):
    """(command, environment, headers): the models routed to the upstream's, behind a master key (it refuses to
    start without one), no database."""
    master_key = f"sk-bench-{secrets.token_hex(16)}"
    route = {"api_base": f"{upstream_url}/v1", "api_key": UPSTREAM_KEY}
    models = [{"model_name": model, "litellm_params": {"model": f"openai/{model}", **route}} for model in MODELS]
    config = {
        "model_list": models,
        "general_settings": {"master_key": master_key},
    }
    path = Path(folder) / "litellm.yaml"
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    command = [PEERS / "litellm/bin/litellm", "--config", path, "--host", "127.0.0.1", "--port", str(port)]
    return command, LITELLM_OFFLINE, {"Authorization": f"Bearer {master_key}"}


def _portkey(folder, port, upstream_url):
    """(command, environment, headers): the upstream named with each request, as an OpenAI-compatible custom host
    (127.0.0.1 is among the hosts it trusts by default). It listens on every interface: its start command takes
    only the port. --headless: without the console it serves for a person's browser."""
    start = PEERS / "portkey/node_modules/@portkey-ai/gateway/build/start-server.js"
    headers = {
        "Authorization": f"Bearer {UPSTREAM_KEY}",
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": f"{upstream_url}/v1",
    }
    return ["node", start, f"--port={port}", "--headless"], {}, headers


STARTS = {LITELLM: _litellm, PORTKEY: _portkey}


class Served:
    """One peer in a process of its own (and a process group: stop() ends it all); its output goes to
    `<folder>/<name>.log`."""

    def __init__(self, peer, folder, upstream_url):
        self.peer = peer
        self.port = free_port()
        command, environment, self.headers = STARTS[peer](folder, self.port, upstream_url)
        self.log = open(Path(folder) / f"{peer.name.lower()}.log", "w+")  # closed in stop()
        self.process = subprocess.Popen(
            [str(part) for part in command],
            cwd=folder,
            env={**os.environ, **environment},
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
        )

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    def ready(self, timeout=180):
        """The URL of its /v1/chat/completions, once it answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"{self.peer.name} exited: {self.log.read()[-4000:]}")
            with suppress(httpx2.HTTPError), httpx2.Client(timeout=5) as client:
                if client.get(f"{self.base_url}{self.peer.ready_path}").status_code == 200:
                    return f"{self.base_url}/v1/chat/completions"
            time.sleep(0.2)
        raise RuntimeError(f"{self.peer.name} did not answer within {timeout} s")

    def stop(self):
        """SIGTERM to the whole group, then (tests.live_http.end_process_group) SIGKILL to what is left."""
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        end_process_group(self.process)
        self.log.close()
