"""How long `python -c "import engine"` takes, beside a bare `python -c "pass"` measured in the same run: the engine
imports the openai SDK only once a model is needed, so a command that never asks one does not pay for it."""

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 0.4
REPEAT = 7


def _wall_seconds(code):
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY_ROOT, check=True)
    return time.perf_counter() - started


def _median_pair(code, baseline_code):
    """Medians of both, measured in alternation so the machine's load hits both alike."""
    pairs = [(_wall_seconds(code), _wall_seconds(baseline_code)) for _ in range(REPEAT)]
    return statistics.median(pair[0] for pair in pairs), statistics.median(pair[1] for pair in pairs)


def report():
    engine, bare = _median_pair("import engine", "pass")
    sdk, _ = _median_pair("import engine.providers, openai", "pass")
    print(f'Import: python -c "import engine", median of {REPEAT}, wall clock')
    print(f"  python -c pass (the interpreter alone)   {bare:6.3f} s")
    print(f"  python -c 'import engine'                {engine:6.3f} s (target <= {TARGET_SECONDS} s)")
    print(f"  the same with the openai SDK imported    {sdk:6.3f} s (what a run on a model adds)")
    print(f"  engine import beyond the interpreter: {engine - bare:.3f} s")
