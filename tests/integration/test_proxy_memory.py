"""What a process that serves the policy proxy holds in memory: the proxy sends to a provider connection without the
`openai` SDK (engine.proxy.forward), so a process that only proxies never imports it (27 MB of each worker's
resident memory, docs/performance.md); and a process on SQLite never imports psycopg (9 MB more)."""

import subprocess
import sys

from tests.doubles import completion
from tests.live_http import ROOT, serving
from tests.proxy_support import FakeUpstream

ONLY_PROXIES = """
import sys
from app import create_app
from store import providers
from store.db import open_db

settings = {{"SECRET_KEY": "k", "DATABASE": {database!r}, "MODEL_ENVIRON": {{"UPSTREAM_API_KEY": "sk-upstream"}}}}
app = create_app(settings, instance_path={folder!r})
db = open_db(app.config["DATABASE_URL"])
connection = {{"id": "upstream", "label": "Upstream", "base_url": {base_url!r}, "api_key_env": "UPSTREAM_API_KEY"}}
providers.create_provider(db, {{**connection, "max_retries": 0}})
db.close()
client = app.test_client()
assert client.put("/api/agents/a", json={{"label": "A", "provider": "upstream"}}).status_code == 201
body = {{"model": "m", "messages": [{{"role": "user", "content": "Hi"}}]}}
answered = client.post("/proxy/a/v1/chat/completions", json=body)
streamed = client.post("/proxy/a/v1/chat/completions", json={{**body, "stream": True}})
loaded = sorted(name for name in sys.modules if name in ("openai", "psycopg"))
print(answered.status_code, answered.json["choices"][0]["message"]["content"], streamed.status_code,
      "Hello again." in streamed.get_data(as_text=True), loaded)
"""


def test_a_process_that_only_proxies_on_sqlite_never_imports_the_openai_sdk_nor_psycopg(tmp_path):
    upstream = FakeUpstream(completion("Hello."), completion("Hello again."))
    with serving(upstream) as url:
        code = ONLY_PROXIES.format(database=str(tmp_path / "db"), folder=str(tmp_path), base_url=f"{url}/v1")
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "200 Hello. 200 True []"
