"""The README's nginx configuration, run as written in front of replicas of the app: the two ```nginx blocks of
README.md, the top of nginx.conf (its `events`) and what goes in its `http` block, the latter's two placeholder
replicas (127.0.0.1:5001, 127.0.0.1:5002) and its port (`listen 8080;`) replaced by real ones, as a reader fills
them in; wrapped in the few lines a whole nginx.conf needs with every file (pid, logs, temporary bodies) in a
folder of the test's. Debian's nginx, which `make test` installs when missing;
its own service is never started: each test runs a process of its own, `daemon off`, stopped whatever happens."""

import os
import re
import signal
import socket
import subprocess
import time
from contextlib import contextmanager

from tests.live_http import ROOT, end_process_group, free_port

PLACEHOLDERS = ("127.0.0.1:5001", "127.0.0.1:5002")
LISTEN = "listen 8080;"
START_TIMEOUT = 10.0
# The access log says which replicas took each request ("a, b" when nginx passed it on), and what they answered.
ACCESS = "$request_method|$request_uri|$status|$upstream_addr|$upstream_status"


def readme_configuration():
    """The texts of the README's two ```nginx blocks: (the top of nginx.conf, the one with `events`; what goes in its
    `http` block)."""
    blocks = re.findall(r"^```nginx\n(.*?)^```$", (ROOT / "README.md").read_text(), re.S | re.M)
    assert len(blocks) == 2, f"README.md has {len(blocks)} nginx blocks, not two"
    top = [block for block in blocks if re.search(r"^events \{", block, re.M)]
    assert len(top) == 1, "one of the README's nginx blocks is the top of nginx.conf, with `events {`"
    return top[0], next(block for block in blocks if block is not top[0])


def filled_in(configuration, replicas, port, replaced=()):
    """`configuration` with the replicas' addresses (host:port) and 127.0.0.1:`port` in place of the README's
    placeholders, and each text of the pairs `replaced` (("proxy_read_timeout 600s", "proxy_read_timeout 1s")) by
    the other."""
    for placeholder, replica in zip(PLACEHOLDERS, replicas, strict=True):
        assert configuration.count(placeholder) == 1, f"the README's nginx block names {placeholder} once"
        configuration = configuration.replace(placeholder, replica)
    assert configuration.count(LISTEN) == 1, f"the README's nginx block has `{LISTEN}` once"
    configuration = configuration.replace(LISTEN, f"listen 127.0.0.1:{port};")
    for old, new in replaced:
        assert configuration.count(old) == 1, f"the README's nginx block has `{old}` once"
        configuration = configuration.replace(old, new)
    return configuration


def whole_configuration(folder, top, http_block):
    """An nginx.conf that keeps every file in `folder`, `top` (with its `events`) and then `http_block` in an http
    block. As root, the workers run as root too (nginx's default user could not write the test's private folder)."""
    user = "user root;\n" if os.geteuid() == 0 else ""
    temporary = "".join(
        f"    {kind}_temp_path {folder}/{kind}_temp;\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}pid {folder}/nginx.pid;\nerror_log {folder}/error.log warn;\n{top}"
        f"http {{\n    log_format replicas '{ACCESS}';\n    access_log {folder}/access.log replicas;\n{temporary}"
        f"{http_block}}}\n"
    )


class Nginx:
    """nginx running `configuration` (a whole nginx.conf) from `folder`, listening on 127.0.0.1:`port`."""

    def __init__(self, folder, configuration, port):
        self.folder = folder
        self.url = f"http://127.0.0.1:{port}"
        (folder / "nginx.conf").write_text(configuration)
        command = ["nginx", "-p", f"{folder}/", "-e", f"{folder}/error.log", "-c", f"{folder}/nginx.conf"]
        self.process = subprocess.Popen(
            [*command, "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its workers with it, for stop()
        )
        try:
            self._wait_until_listening(port)
        except BaseException:
            self.stop()
            raise

    def _wait_until_listening(self, port):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.errors()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nginx did not listen on {port} within {START_TIMEOUT} s: {self.errors()}")

    def errors(self):
        path = self.folder / "error.log"
        return path.read_text() if path.exists() else ""

    def served(self):
        """(method, path, status, the replica's address, its status) of each request nginx has logged."""
        path = self.folder / "access.log"
        lines = path.read_text().splitlines() if path.exists() else []
        return [tuple(line.split("|")) for line in lines]

    def stop(self):
        """A fast shutdown (SIGTERM), then every process of the group killed after a grace."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        end_process_group(self.process)


@contextmanager
def in_front_of(replicas, folder, replaced=()):
    """The README's nginx in front of `replicas` (base URLs), run from `folder`: yields the running Nginx."""
    folder.mkdir(exist_ok=True)
    addresses = [replica.removeprefix("http://") for replica in replicas]
    port = free_port()
    top, http_block = readme_configuration()
    configuration = whole_configuration(folder, top, filled_in(http_block, addresses, port, replaced))
    balancer = Nginx(folder, configuration, port)
    try:
        yield balancer
    finally:
        balancer.stop()
