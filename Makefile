# The README's commands. Everything a new machine needs is installed from here.
VENV := .venv
BIN := $(VENV)/bin
# Serving needs requirements.txt only; the tests, the linter and the benchmarks add requirements-test.txt. Both pin
# every package, transitive ones included: `make lock` compiles them from the direct dependencies in the .in files.
INSTALLED := $(VENV)/.installed-requirements
INSTALLED_TEST := $(VENV)/.installed-requirements-test
# The gateways bench.gateway measures beside Toolgate when they are installed (`make peers`), each with its own
# dependencies under .peers/: the Portkey gateway (npm) and the LiteLLM proxy (a virtualenv of its own).
PEERS := .peers
PORTKEY_INSTALLED := $(PEERS)/portkey/.installed
LITELLM_INSTALLED := $(PEERS)/litellm/.installed
HOST ?= 127.0.0.1
PORT ?= 5000
WORKERS ?= 2
CONNECTIONS ?= 1000
KEEP_ALIVE ?= 10
# The longest request line gunicorn reads and still bounds (its default is 4,094 bytes): longer addresses that it lets
# through the app refuses itself, in the caller's shape (blueprints/request_checks.py).
REQUEST_LINE := 8190
# gunicorn takes an IPv6 address in brackets ([::1]:5000), given with them or without.
BARE_HOST = $(HOST:[%]=%)
BIND = $(if $(findstring :,$(BARE_HOST)),[$(BARE_HOST)],$(BARE_HOST)):$(PORT)

.PHONY: run test bench bench-peers peers lint lock chromium postgresql nginx

run: $(INSTALLED)
	@$(BIN)/flask --app app check-host $(HOST)
	$(BIN)/flask --app app init-db
	$(BIN)/flask --app app load-demo --if-empty
	$(BIN)/gunicorn --bind=$(BIND) --worker-class=gevent --workers=$(WORKERS) --worker-connections=$(CONNECTIONS) \
		--keep-alive=$(KEEP_ALIVE) --limit-request-line=$(REQUEST_LINE) --no-control-socket 'app:serve_app()'

# Two test processes, one per core of the machines it runs on: the suite took 7.8 minutes in one, 5.5 in two.
test: $(INSTALLED_TEST) chromium postgresql nginx
	$(BIN)/pytest -n 2

bench: $(INSTALLED_TEST) postgresql
	$(BIN)/python -m bench

# The gateway benchmark with LiteLLM and Portkey beside Toolgate (`make bench` includes them only once installed).
bench-peers: peers $(INSTALLED_TEST)
	$(BIN)/python -m bench.gateway

peers: $(PORTKEY_INSTALLED) $(LITELLM_INSTALLED)

lint: $(INSTALLED_TEST)
	$(BIN)/ruff check .

# After changing requirements.in or requirements-test.in: the pins of everything they bring, for every machine.
lock: $(INSTALLED_TEST)
	$(BIN)/pip-compile --quiet --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
		-o requirements.txt requirements.in
	$(BIN)/pip-compile --quiet --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
		-o requirements-test.txt requirements-test.in

$(INSTALLED): requirements.txt
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(INSTALLED_TEST): requirements.txt requirements-test.txt
	test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt -r requirements-test.txt
	touch $@ $(INSTALLED)

$(PORTKEY_INSTALLED): bench/peers-portkey.json
	mkdir -p $(PEERS)/portkey
	cp bench/peers-portkey.json $(PEERS)/portkey/package.json
	npm install --prefix $(PEERS)/portkey --ignore-scripts --no-audit --no-fund
	touch $@

$(LITELLM_INSTALLED): bench/peers-litellm.txt
	test -x $(PEERS)/litellm/bin/python || python3 -m venv $(PEERS)/litellm
	$(PEERS)/litellm/bin/pip install --quiet --disable-pip-version-check -r bench/peers-litellm.txt
	touch $@

# Playwright cannot download its own browser here: the end-to-end tests drive Debian's chromium.
chromium:
	@dpkg -s chromium >/dev/null 2>&1 || { apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends chromium fonts-liberation; }

# The tests of the store, the services, the migrations and the proxy's recording run on PostgreSQL too, in a
# throwaway cluster of Debian's postgresql (tests/postgresql.py); the package's own cluster is not used.
postgresql:
	@dpkg -s postgresql >/dev/null 2>&1 || { apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends postgresql; }

# The README's nginx configuration runs in front of two replicas in the tests (tests/nginx.py), each test starting
# an nginx process of its own on a free port; the package's own service is never started.
nginx:
	@dpkg -s nginx >/dev/null 2>&1 || { apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends nginx; }
