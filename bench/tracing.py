"""The trace export's cost to a run: the scripted 3-round run through the runs API with spans exported to a collector
that never answers, beside the same run with export off, measured in alternation in the same process (target <=
1.1x). The collector is a socket that listens and never accepts: each batch the exporter sends waits for its
timeout, in the SDK's thread, never in the run's."""

import socket
import tempfile

from . import engine_loop
from .timing import compare, milliseconds

TARGET_RATIO = 1.1


def _app(folder, name, environ):
    from app import create_app  # the web layer only when this benchmark runs

    config = {
        "TESTING": True,
        "DATABASE": f"{folder}/{name}.db",
        "SECRET_KEY": "bench",
        "TELEMETRY_ENVIRON": environ,
    }
    app = create_app(config, instance_path=folder)
    client = app.test_client()
    assert client.put(f"/api/agents/{engine_loop.AGENT['id']}", json=engine_loop.AGENT).status_code in (200, 201)
    return app, client


def _api_run(client):
    path = f"/api/agents/{engine_loop.AGENT['id']}/runs"

    def run():
        response = client.post(path, json={"message": engine_loop.MESSAGE})
        assert response.status_code == 201
        return response.data

    return run


def report():
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1024)  # connections wait in the backlog: nobody ever reads or answers them
    try:
        with tempfile.TemporaryDirectory() as folder:
            endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
            environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
            traced_app, traced = _app(folder, "traced", environ)
            _plain_app, plain = _app(folder, "plain", {})
            assert traced_app.extensions["toolgate_tracing"] is not None
            on, off = compare(_api_run(traced), _api_run(plain), repeat=7, number=20)
            traced_app.extensions["toolgate_tracing"].shutdown()
    finally:
        silent.close()
    print("Tracing: POST /api/agents/<id>/runs, the scripted 3-round run, spans exported to a collector that never")
    print("answers, beside export off")
    print(f"  export off                      {milliseconds(off)}")
    print(f"  export on, collector silent     {milliseconds(on)}")
    print(f"  ratio on / off: {on / off:.2f}x (target <= {TARGET_RATIO}x)")
