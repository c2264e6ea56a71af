"""The app in a process of its own, for the browser test that kills its server mid-run: werkzeug's threaded server
on 127.0.0.1, port 0, over the database given, the port it listens on printed as its first line.

    python tests/e2e/serve_app.py DATABASE INSTANCE_FOLDER LEASE_SECONDS
"""

import sys

from werkzeug.serving import make_server

from app import create_app

database, instance, lease_seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
app = create_app({"DATABASE": database, "RUN_LEASE_SECONDS": lease_seconds}, instance_path=instance)
server = make_server("127.0.0.1", 0, app, threaded=True)
print(server.server_port, flush=True)
server.serve_forever()
