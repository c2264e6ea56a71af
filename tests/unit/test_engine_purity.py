"""The engine is the ground floor: importing it pulls in neither the web framework nor the database layer."""

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]

WEB_AND_STORAGE = ("alembic", "flask", "flask_wtf", "psycopg", "sqlalchemy", "sqlite_utils", "werkzeug", "wtforms")

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
