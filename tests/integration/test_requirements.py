"""The requirements are split: `make run` installs requirements.txt, what serving needs, and the tests, the linter
and the benchmarks add requirements-test.txt. Proved by serving pages in a fresh interpreter that cannot import any
test tool, as a virtualenv made from requirements.txt alone could not."""

import subprocess
import sys
from pathlib import Path

SERVING = Path("requirements.txt")
TESTING = Path("requirements-test.txt")
TEST_TOOLS = {"hypothesis", "pytest", "pytest-playwright", "playwright", "ruff"}
# The top-level modules those distributions install.
TEST_MODULES = ("hypothesis", "pytest", "_pytest", "pytest_playwright", "pytest_base_url", "playwright", "ruff")

SERVE_WITHOUT_TEST_TOOLS = f"""
import importlib.abc, sys, tempfile

class NoTestTools(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {TEST_MODULES!r}:
            raise ImportError(f"{{name}} is a test tool: not installed by requirements.txt")
        return None

sys.meta_path.insert(0, NoTestTools())
from app import create_app
folder = tempfile.mkdtemp()
app = create_app({{"DATABASE": folder + "/toolgate.db"}}, instance_path=folder)
assert app.test_cli_runner().invoke(args=["load-demo"]).exit_code == 0
client = app.test_client()
run = client.post("/api/agents/catalog_explorer/runs", json={{"message": "Which bundles?"}})
assert run.status_code == 201, run.data
for address in ("/agents", "/runs", "/agents/catalog_explorer/run", f"/runs/{{run.json['id']}}", "/log"):
    assert client.get(address).status_code == 200, address
print("served")
"""


def pinned(path):
    return {
        line.split("==")[0]: line.split("==")[1]
        for line in path.read_text().splitlines()
        if line and not line.startswith(("#", "-r"))
    }


def test_serving_installs_no_test_tool_and_the_tests_add_them_on_top():
    serving, testing = pinned(SERVING), pinned(TESTING)

    assert not TEST_TOOLS & set(serving)
    assert TEST_TOOLS <= set(testing) and not set(testing) & set(serving)
    assert "-r requirements.txt" in TESTING.read_text().splitlines()
    assert all(version for version in (*serving.values(), *testing.values()))


def test_the_app_serves_its_pages_without_any_test_tool():
    result = subprocess.run(
        [sys.executable, "-c", SERVE_WITHOUT_TEST_TOOLS], capture_output=True, text=True, timeout=120, check=False
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "served"
