"""Real HTTP for the tests and the benchmarks that need it: a WSGI app served by werkzeug in a thread on 127.0.0.1
(port 0, so runs side by side never clash), a slow OpenAI-compatible model to serve that way, the app in a process
of its own under a production server, and browser-like clients that post forms with their CSRF token."""

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx2
from werkzeug.serving import WSGIRequestHandler, make_server

from app import create_app
from tests.doubles import ModelDouble

ROOT = Path(__file__).resolve().parent.parent
REQUEST_TIMEOUT = 30.0
STOP_GRACE = 5.0
CSRF_FIELD = re.compile(r'<input\b[^>]*name="csrf_token"[^>]*>')
LISTENING = re.compile(r"(?:Serving on|Listening at:) (http://127\.0\.0\.1:\d+)")  # waitress, gunicorn


def free_port():
    """A port free on 127.0.0.1 now, for a server that must be told its port before it starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_run_server(host="127.0.0.1", port=0, workers=None):
    """The arguments to python that serve the app as `make run` does: its recipe's last command (the server), as
    `make -n` prints it with `host` and `port` (0: a free one), and `workers` when given (else the Makefile's), its
    program run as a module of this virtualenv."""
    variables = [f"HOST={host}", f"PORT={port}", *([f"WORKERS={workers}"] if workers else [])]
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "run", *variables],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    program, *arguments = shlex.split(re.sub(r"\\\n\s*", " ", printed).strip().splitlines()[-1])
    return ["-m", program.rsplit("/", 1)[-1], *arguments]


MAKE_RUN = make_run_server()


_answering = threading.local()  # the answer the request of this thread is writing (serving: a thread per request)


class QuietRequestHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        """Hundreds of requests a test: no line for each."""

    def run_wsgi(self):
        """The answer closed however the request ends. werkzeug closes it last, after reading what the client may
        still send; when the client hung up (a browser leaving a page while a script still loads), that read raises
        first and a file being sent stayed open, a ResourceWarning that failed whichever test ran at the next
        collection."""
        try:
            super().run_wsgi()
        finally:
            answer = getattr(_answering, "answer", None)
            _answering.answer = None
            if hasattr(answer, "close"):
                answer.close()


def _remembering_answers(wsgi_app):
    def app(environ, start_response):
        _answering.answer = wsgi_app(environ, start_response)
        return _answering.answer

    return app


@contextmanager
def serving(wsgi_app):
    """Serve `wsgi_app` with a thread per request until the block ends; yields its base URL."""
    server = make_server(
        "127.0.0.1", 0, _remembering_answers(wsgi_app), threaded=True, request_handler=QuietRequestHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()


class ServedApp:
    """The app over a database of its own in a new instance folder, served on 127.0.0.1 in a thread: `app`, `url`."""

    def __init__(self, app, url):
        self.app = app
        self.url = url


@contextmanager
def served_app(tmp_path_factory, name, demo=False):
    """A ServedApp until the block ends; with `demo`, the demo agents and documents loaded as `make run` loads them."""
    instance = tmp_path_factory.mktemp(name)
    app = create_app({"DATABASE": str(instance / "toolgate.db")}, instance_path=str(instance))
    if demo:
        assert app.test_cli_runner().invoke(args=["load-demo"]).exit_code == 0
    with serving(app) as url:
        yield ServedApp(app, url)


class SlowModel(ModelDouble):
    """An OpenAI-compatible chat-completions server that answers from a script after `delay` seconds, as a remote
    model would: the one model double (tests/doubles) playing the engine's scripted model behind a wait."""

    def __init__(self, script, delay=0.2):
        super().__init__(script=script, delay=delay)


class HeldStream:
    """A streaming OpenAI-compatible server that writes its opening ("Hello ") at once, then waits to be released
    (or `wait` seconds) before it writes the rest, word by word. `closed_early` says the proxy hung up before it had
    written everything; `written` that it wrote everything."""

    def __init__(self, words=("world.",), pause=0.0, opening="Hello ", wait=10.0):
        self.wait = wait
        self.released = threading.Event()
        self.closed_early = threading.Event()
        self.written = threading.Event()
        self.opening = opening
        self.words = words
        self.pause = pause
        self.bodies = []

    def __call__(self, environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        self.bodies.append(json.loads(environ["wsgi.input"].read(length)))
        start_response("200 OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        return self.events()

    def events(self):
        head = {"id": "up-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

        def data(delta, finish_reason=None):
            chunk = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            return f"data: {json.dumps(chunk)}\n\n".encode()

        try:
            yield data({"role": "assistant", "content": ""})
            if self.opening:
                yield data({"content": self.opening})
            self.released.wait(self.wait)
            for word in self.words:
                time.sleep(self.pause)
                yield data({"content": word})
            yield data({}, "stop")
            yield b"data: [DONE]\n\n"
            self.written.set()
        except GeneratorExit:
            self.closed_early.set()
            raise


def csrf_token(html):
    field = CSRF_FIELD.search(html)
    assert field, "no CSRF token in the page"
    return re.search(r'value="([^"]*)"', field.group(0)).group(1)


def browser(base_url):
    """An HTTP client that keeps its cookies, like one browser tab."""
    return httpx2.Client(base_url=base_url, timeout=REQUEST_TIMEOUT)


def post_form(client, form_path, data):
    """Load the form page for its CSRF token, then post `data` to it."""
    page = client.get(form_path)
    assert page.status_code == 200, page.text
    return client.post(form_path, data={**data, "csrf_token": csrf_token(page.text)})


def post_json(client, path, payload, method="POST"):
    return client.request(method, path, content=json.dumps(payload), headers={"Content-Type": "application/json"})


def all_at_once(task, arguments, timeout=120):
    """Call `task(argument)` for every argument, each in its own thread, released together; their results in order.

    Bounded: each request times out on its own, and the whole burst within `timeout` seconds."""
    arguments = list(arguments)
    start = threading.Barrier(len(arguments))

    def released(argument):
        start.wait(timeout=timeout)
        return task(argument)

    with ThreadPoolExecutor(max_workers=len(arguments)) as pool:
        futures = [pool.submit(released, argument) for argument in arguments]
        _, late = wait(futures, timeout=timeout)
        assert not late, f"{len(late)} of {len(futures)} requests had not ended after {timeout} s"
        return [future.result() for future in futures]


def end_process_group(process, grace=STOP_GRACE):
    """Once `process` was asked to stop: `grace` seconds for it to do so, then every process of its group (started
    with start_new_session) killed, so nothing is left behind."""
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


class AppProcess:
    """The app in a process of its own, started by `python SERVER_ARGUMENTS` on the database file `database`; its
    output goes to `log_path`. `ready()` waits until it answers `ready_path` and gives its base URL; stop it with
    stop()."""

    def __init__(self, server_arguments, database, log_path, ready_path="/agents", **environment):
        self.ready_path = ready_path
        environment = {
            **os.environ,
            "TOOLGATE_DATABASE": str(database),
            "TOOLGATE_SECRET_KEY": "a test process",
            "PYTHONUNBUFFERED": "1",
            **environment,
        }
        self.log = open(log_path, "w+")  # closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, *server_arguments],
            cwd=ROOT,
            env=environment,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,  # its worker processes with it, for kill()
        )

    def ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.log.seek(0)
            found = LISTENING.search(self.log.read())
            if found and self._answers(found.group(1), self.ready_path):
                return found.group(1)
            if self.process.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"the server exited: {self.log.read()}")
            time.sleep(0.05)
        raise RuntimeError("the server did not start in time")

    @staticmethod
    def _answers(url, path):
        """gunicorn listens before its workers have built the app (and migrated the database)."""
        try:
            with browser(url) as client:
                return client.get(path).status_code == 200
        except httpx2.HTTPError:
            return False

    def kill(self):
        """As if the machine lost power: every process of the server at once, mid-request."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self):
        """Ctrl-C (gunicorn's quick shutdown, which does not wait for idle keep-alive connections to time out), then
        after STOP_GRACE seconds every process of the server killed: nothing is left behind, whatever it was doing."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        end_process_group(self.process)
        self.log.close()
