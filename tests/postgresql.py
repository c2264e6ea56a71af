"""A throwaway PostgreSQL cluster for a test session (Debian's `postgresql` package, which `make test` installs when
missing): initdb into a temporary folder, served on a free port of 127.0.0.1 with its socket in that folder,
stopped and removed at the end. initdb refuses to run as root: as root, the cluster runs as the `postgres` user."""

import atexit
import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sqlalchemy import create_engine, text

from tests.live_http import free_port


def _binaries():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: `make test` installs Debian's postgresql package.")
    return Path(found[-1]).parent


class Cluster:
    """`durable`: the cluster waits for the disk as a real one does (for measurements); a test's does not."""

    def __init__(self, durable=False):
        binaries = _binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="toolgate-postgresql-"))
        as_user = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            as_user = ["runuser", "-u", "postgres", "--"]
        data = self.folder / "data"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}
        subprocess.run(
            [*as_user, binaries / "initdb", "-D", data, "--auth=trust", "--username=postgres", "--encoding=UTF8"],
            check=True,
            **quiet,
        )
        self._control = [*as_user, binaries / "pg_ctl", "-D", data]
        for attempt in range(3):  # another process may take the free port first
            port = free_port()
            # max_connections is left at PostgreSQL's default (100), as the README leaves it: a process of the app
            # opens store.db.POOL_SIZE connections at most, so two replicas of two workers open 40.
            self._options = f"-p {port} -k {self.folder} -c listen_addresses=127.0.0.1"
            if not durable:  # nothing a test's cluster holds must survive a crash: it never waits for the disk
                self._options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            started = self._start(**quiet)
            if started.returncode == 0:
                break
            if attempt == 2:
                raise RuntimeError(f"PostgreSQL did not start: {(self.folder / 'log').read_text()}")
        atexit.register(self.stop)  # also when the session ends without its teardown
        self.url = f"postgresql://postgres@127.0.0.1:{port}"
        # Checked before each use: its connection is ended when the server restarts, or ends every other one after
        # a crash (tests/integration/test_postgresql_pool.py).
        self._admin = create_engine(
            f"{self.url.replace('postgresql://', 'postgresql+psycopg://')}/postgres", pool_pre_ping=True
        )
        self._created = 0

    def _start(self, **output):
        return subprocess.run([*self._control, "-o", self._options, "-l", self.folder / "log", "-w", "start"], **output)

    def restart(self):
        """Stop the server as an administrator does (each connection is told, then closed) and start it again on the
        same port."""
        subprocess.run([*self._control, "-m", "fast", "-w", "stop"], check=True, capture_output=True)
        self._start(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def create_database(self, template=None):
        """A new empty database (or a copy of `template`); its URL."""
        self._created += 1
        name = f"toolgate_{self._created}"
        with self._admin.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            copy = f" TEMPLATE {template}" if template else ""
            connection.execute(text(f"CREATE DATABASE {name}{copy}"))
        return f"{self.url}/{name}"

    def stop(self):
        try:
            self._admin.dispose()
        finally:
            subprocess.run([*self._control, "-m", "immediate", "stop"], check=False, capture_output=True)
            shutil.rmtree(self.folder, ignore_errors=True)
