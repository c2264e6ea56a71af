"""The requirements: `make run` installs requirements.txt, what serving needs, and the tests, the linter and the
benchmarks add requirements-test.txt. Both are lock files compiled (`make lock`) from the direct dependencies in
requirements.in and requirements-test.in, every package pinned, transitive ones included, so an install is the same
on every machine. The first command a new user types is proved as they type it: `make run`, in a fresh copy of the
repository, with a virtual environment built from requirements.txt alone."""

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import httpx2
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.live_http import ROOT, end_process_group, free_port

SERVING = ROOT / "requirements.txt"
TESTING = ROOT / "requirements-test.txt"
TEST_TOOLS = {"hypothesis", "pytest", "pytest-playwright", "playwright", "ruff", "pip-tools"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")
# Built once per version of requirements.txt and kept between test sessions: building one costs a minute or two.
SERVING_VENVS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "toolgate-tests"
# What a copy of the repository leaves out: the developer's own environment, database and caches.
NOT_COPIED = (".git", ".venv", "instance", ".peers", ".pytest_cache", ".hypothesis", ".ruff_cache", "__pycache__")


def pinned(path):
    """The pins of a compiled requirements file: {canonical name: version}; any other requirement line fails."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "-c", "-r")):
            continue
        found = PIN.match(line)
        assert found, f"{path.name}: {line!r} is not an exact pin"
        pins[canonicalize_name(found.group(1))] = found.group(2)
    return pins


def direct(path):
    """The direct dependencies an .in file asks for, as Requirements."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def test_serving_installs_no_test_tool_and_the_tests_pin_what_serving_pins_alike():
    serving, testing = pinned(SERVING), pinned(TESTING)

    assert not TEST_TOOLS & set(serving)
    assert TEST_TOOLS <= set(testing)
    assert {name: version for name, version in testing.items() if name in serving} == {
        name: serving[name] for name in testing if name in serving
    }


@pytest.mark.parametrize("source, lock", [("requirements.in", SERVING), ("requirements-test.in", TESTING)])
def test_each_direct_dependency_is_locked_at_its_pin(source, lock):
    pins = pinned(lock)

    for requirement in direct(ROOT / source):
        assert pins.get(canonicalize_name(requirement.name)) in requirement.specifier, requirement


def _needs(distribution, extras):
    """What an installed distribution requires on this machine, with the given extras asked for."""
    for line in metadata.requires(distribution) or ():
        requirement = Requirement(line)
        if requirement.marker is None or any(requirement.marker.evaluate({"extra": extra}) for extra in extras):
            yield requirement


def test_serving_pins_every_package_that_serving_needs():
    """The closure: every requirement of every pinned package (with the extras requirements.in asks for, such as
    gunicorn's gevent worker's) is itself pinned, at a version it accepts. A package left out installs whatever
    version the day offers, or, as `packaging` did for gunicorn's gevent worker, nothing."""
    serving = pinned(SERVING)
    extras = {canonicalize_name(r.name): r.extras for r in direct(ROOT / "requirements.in")}

    for name in serving:
        for requirement in _needs(name, {"", *extras.get(name, ())}):
            needed = canonicalize_name(requirement.name)
            assert needed in serving, f"{name} needs {requirement}, which requirements.txt does not pin"
            assert requirement.specifier.contains(serving[needed], prereleases=True), (name, requirement)


def _serving_venv():
    """A virtual environment with requirements.txt installed and nothing else, kept per hash of that file."""
    digest = hashlib.sha256(SERVING.read_bytes()).hexdigest()[:16]
    venv = SERVING_VENVS / f"serving-{digest}"
    complete = venv / ".complete"
    if not complete.exists():
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [venv / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(SERVING)],
            check=True,
            timeout=900,
            capture_output=True,
        )
        complete.touch()
    return venv


@pytest.mark.timeout(1200)
def test_make_run_serves_the_demo_agents_from_a_fresh_copy_with_the_serving_requirements_alone(tmp_path):
    copy = tmp_path / "toolgate"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(*NOT_COPIED))
    venv = _serving_venv()
    port = free_port()
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("TOOLGATE_", "VIRTUAL"))}
    log = open(tmp_path / "make-run.log", "w+")
    process = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"VENV={venv}", f"PORT={port}"],
        cwd=copy,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        page = _first_page(f"http://127.0.0.1:{port}/agents", process, log, timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        end_process_group(process)
        log.close()

    assert page.status_code == 200
    assert "Canvas builder" in page.text and "Catalog explorer" in page.text
    assert (copy / "instance" / "toolgate.db").exists()


def _first_page(url, process, log, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return httpx2.get(url, timeout=5)
        except httpx2.HTTPError:
            pass
        if process.poll() is not None:
            log.seek(0)
            raise AssertionError(f"make run exited with {process.returncode}:\n{log.read()[-4000:]}")
        time.sleep(0.25)
    log.seek(0)
    raise AssertionError(f"make run served nothing within {timeout} s:\n{log.read()[-4000:]}")
