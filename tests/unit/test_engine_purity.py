"""The engine is the ground floor: importing it pulls in neither the web framework nor the database layer."""

import ast
import json
import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]

WEB_AND_STORAGE = ("flask", "flask_wtf", "sqlite_utils", "werkzeug", "wtforms")

PROBE = """
import json, sys
import engine
from engine import run_agent
run_agent({"id": "t", "label": "T", "tools": {"list_documents": {}}, "script": [{"content": "Hi."}]}, "Refunds?")
print(json.dumps(sorted(name.split(".")[0] for name in sys.modules)))
"""


def test_importing_and_running_the_engine_loads_no_web_or_storage_package():
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=60, check=True
    )

    loaded = set(json.loads(completed.stdout.strip().splitlines()[-1]))
    assert "engine" in loaded
    assert loaded.isdisjoint(WEB_AND_STORAGE), sorted(loaded & set(WEB_AND_STORAGE))


HOUSE = ("app.py", "cli.py", "blueprints", "services", "store", "engine", "bench")


def _module_name(path):
    parts = list(path.relative_to(REPOSITORY_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(module, tree, modules, is_package):
    """The house's modules that `module` imports anywhere in its code, function-local imports included."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = ".".join(part for part in (base if node.level else "", node.module or "") if part)
            names = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names
            ]
        else:
            continue
        yield from (name for name in names if name in modules and name != module)


def test_the_house_imports_one_way_with_no_circle():
    paths = [
        path
        for place in HOUSE
        for path in ([REPOSITORY_ROOT / place] if place.endswith(".py") else (REPOSITORY_ROOT / place).rglob("*.py"))
    ]
    modules = {_module_name(path): path for path in paths}
    graph = {
        module: set(_imported(module, ast.parse(path.read_text()), modules, path.name == "__init__.py"))
        for module, path in modules.items()
    }
    circles = []
    for module in graph:  # a module from which an import path leads back to it
        seen, frontier = set(), list(graph[module])
        while frontier:
            name = frontier.pop()
            if name not in seen:
                seen.add(name)
                frontier.extend(graph[name])
        if module in seen:
            circles.append(module)
    assert circles == []
