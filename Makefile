# The two quick-start commands (README): `make demo` and `make test`.
# Each creates ./.venv and installs what it needs on first use.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
CODE := txnq workers migrations tests bench examples scripts

.PHONY: demo test test-cluster lint bench bench-spark bench-cluster bench-peers install-peers install-plproxy install-spark install-chromium console-screenshots standalone clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,spark]"
	touch $(STAMP)

# Runs a short produce/consume demo on the embedded PostgreSQL under ./.txnq
# (TXNQ_DSN unset), which keeps running afterwards: say so, and how to stop it.
# As root the server runs as a system user it creates: say that before.
demo: $(STAMP)
	@if [ -z "$$TXNQ_DSN" ] && [ "$$(id -u)" = 0 ]; then \
		echo "make demo: running as root, so the embedded PostgreSQL runs as the system user"; \
		echo "  embedded_postgres, created now if missing (PostgreSQL refuses to run as root)."; \
	fi
	$(PY) examples/quickstart.py
	@if [ -z "$$TXNQ_DSN" ]; then \
		echo "The embedded PostgreSQL keeps running in the background, on the same port at"; \
		echo "every start; its data lives under ./.txnq. Stop it:  .venv/bin/txnq server stop"; \
		echo "(make clean also removes its data)."; \
	fi

# Lint, type-check and run the test suite (TXNQ_TEST_DSN picks the server;
# unset: testcontainers if Docker answers, else embedded PostgreSQL 18), then
# the cluster pass (test-cluster; CLUSTER_PASS=no leaves it out). Both run
# even if the first fails; make test fails if either does.
CLUSTER_PASS ?= yes
# Extra pytest arguments (CI's second pass leaves out what does not depend on
# the server: .ci/run).
PYTEST_ARGS ?=
test: lint install-spark install-chromium install-plproxy
	@if [ -z "$$TXNQ_TEST_DSN" ] && [ "$$(id -u)" = 0 ]; then \
		echo "make test: running as root without TXNQ_TEST_DSN, so the tests' embedded"; \
		echo "  PostgreSQL servers run as the system user embedded_postgres, created now if missing."; \
	fi
	@status=0; $(PY) -m pytest -q $(PYTEST_ARGS) || status=$$?; \
	if [ "$(CLUSTER_PASS)" != no ]; then \
		echo "make test: the cluster pass, the core API tests through a two-shard cluster's proxy"; \
		$(PY) -m pytest -q --cluster $(CLUSTER_PASS_TESTS) || status=1; \
	fi; \
	exit $$status

# The cluster pass (tests/cluster_pass.py, docs/development.md): the core API
# tests once more, each with the client's DSN at the proxy of a two-shard
# PL/Proxy cluster of its own, on throwaway PostgreSQL 15 servers (whatever
# TXNQ_TEST_DSN says). What the proxy does not route yet is skipped, naming
# the slice of issue 19 it waits for.
CLUSTER_PASS_TESTS := tests/conformance tests/integration/test_admin.py \
	tests/integration/test_produce.py tests/integration/test_consume.py \
	tests/integration/test_consume_batches.py tests/integration/test_bad_input.py
test-cluster: $(STAMP) install-plproxy
	@echo "make test-cluster: the core API tests through a two-shard cluster's proxy"
	$(PY) -m pytest -q --cluster $(CLUSTER_PASS_TESTS)

lint: $(STAMP)
	$(VENV)/bin/ruff check $(CODE)
	$(VENV)/bin/ruff format --check $(CODE)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(PY) bench/produce_consume.py

# txnq next to PgQ, pgqueuer, procrastinate and pgmq on the local PostgreSQL
# (docs/benchmarks.md); PEERS_DSN picks another server.
PEERS_DSN ?= postgresql://postgres@127.0.0.1:5432/postgres
bench-peers: $(STAMP) install-peers
	$(PY) -m bench.peers --dsn "$(PEERS_DSN)"

# The peers' Python packages (the bench extra) and PgQ, Debian's
# postgresql-15-pgq3 for the machine's PostgreSQL 15: installed with apt-get
# when it is missing and this runs as root, announced before it runs;
# otherwise say what to install (bench.peers reports PgQ as skipped).
install-peers: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	@if [ -f /usr/share/postgresql/15/extension/pgq.control ]; then \
		true; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "make install-peers: running as root, so installing a system package now:"; \
		echo "  apt-get install postgresql-15-pgq3 (after apt-get update if needed): PgQ,"; \
		echo "  the peer bench.peers measures on PostgreSQL 15."; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15-pgq3 >/dev/null \
		|| { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15-pgq3 >/dev/null; } \
		|| echo "could not install postgresql-15-pgq3: bench.peers reports PgQ as skipped"; \
	else \
		echo "no PgQ for PostgreSQL 15: install postgresql-15-pgq3 (Debian/Ubuntu); bench.peers reports PgQ as skipped until then"; \
	fi

# PL/Proxy for the sharded cluster (docs/cluster.md), Debian's
# postgresql-15-plproxy for the machine's PostgreSQL 15: installed with
# apt-get when it is missing and this runs as root, announced before it runs;
# otherwise say what to install (tests/cluster skips, naming it).
install-plproxy:
	@if [ -f /usr/share/postgresql/15/extension/plproxy.control ]; then \
		true; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "make install-plproxy: running as root, so installing a system package now:"; \
		echo "  apt-get install postgresql-15-plproxy (after apt-get update if needed): PL/Proxy,"; \
		echo "  which routes the proxy database's calls to the shards (docs/cluster.md)."; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15-plproxy >/dev/null \
		|| { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15-plproxy >/dev/null; } \
		|| echo "could not install postgresql-15-plproxy: the cluster tests (tests/cluster) skip"; \
	else \
		echo "no PL/Proxy for PostgreSQL 15: install postgresql-15-plproxy (Debian/Ubuntu; PGDG packages it for 14 to 18); the cluster tests (tests/cluster) skip until then"; \
	fi
	@[ -x /usr/lib/postgresql/15/bin/initdb ] || echo "no /usr/lib/postgresql/15/bin/initdb: install postgresql-15 for the cluster tests' throwaway servers; they skip until then"

# Spark reading committed ranges over JDBC next to a plain JDBC read of the
# same rows (docs/spark.md).
bench-spark: $(STAMP) install-spark
	$(PY) bench/spark.py

bench-cluster: $(STAMP) install-plproxy
	$(PY) -m bench.cluster

# The PostgreSQL JDBC driver for Spark, without Maven: Debian's
# libpostgresql-jdbc-java (/usr/share/java/postgresql.jar) when it is missing
# and apt-get runs as root, announced before it runs; otherwise say what to
# install (the Spark tests skip, naming it). TXNQ_SPARK_JDBC_JAR points at a
# jar of your own instead (nothing is installed then).
JDBC_JAR ?= /usr/share/java/postgresql.jar
install-spark:
	@if [ -n "$$TXNQ_SPARK_JDBC_JAR" ] || [ -f "$(JDBC_JAR)" ]; then \
		true; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "make install-spark: running as root, so installing a system package now:"; \
		echo "  apt-get install libpostgresql-jdbc-java (after apt-get update if needed): the"; \
		echo "  PostgreSQL JDBC driver the Spark tests need. To install nothing, set"; \
		echo "  TXNQ_SPARK_JDBC_JAR to a jar of your own (or run as a normal user: they skip)."; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpostgresql-jdbc-java >/dev/null \
		|| { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpostgresql-jdbc-java >/dev/null; } \
		|| echo "could not install libpostgresql-jdbc-java: Spark tests will skip"; \
	else \
		echo "no PostgreSQL JDBC jar at $(JDBC_JAR): install libpostgresql-jdbc-java (Debian/Ubuntu) or postgresql-jdbc (Fedora), or set TXNQ_SPARK_JDBC_JAR; Spark tests skip until then"; \
	fi
	@command -v java >/dev/null 2>&1 || echo "no java on PATH: Spark needs Java 17+ (openjdk-17-jre-headless); Spark tests skip until then"

# Headless Chromium for the web console's browser tests
# (tests/integration/test_console_browser.py) and screenshots: Debian's
# chromium and chromium-driver when missing and apt-get runs as root,
# announced before it runs; otherwise say what to install (the browser tests
# skip, naming it). Selenium is given /usr/bin/chromedriver, so it never
# downloads a browser or a driver.
install-chromium:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then \
		true; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "make install-chromium: running as root, so installing system packages now:"; \
		echo "  apt-get install chromium chromium-driver (after apt-get update if needed): the"; \
		echo "  headless browser the web console's tests drive (or run as a normal user: they skip)."; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null \
		|| { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver >/dev/null; } \
		|| echo "could not install chromium and chromium-driver: the console's browser tests will skip"; \
	else \
		echo "no /usr/bin/chromium and /usr/bin/chromedriver: install chromium and chromium-driver (Debian/Ubuntu) for the console's browser tests; they skip until then"; \
	fi

# The screenshots of docs/console/ (README.md, docs/console.md), taken on sample data.
console-screenshots: $(STAMP) install-chromium
	$(PY) scripts/console_screenshots.py

standalone: $(STAMP)
	$(VENV)/bin/txnq standalone

# Stops the embedded server under ./.txnq (if one runs) before removing its data.
clean:
	@if [ -x $(VENV)/bin/txnq ] && [ -d .txnq ]; then $(VENV)/bin/txnq server stop --home .txnq || true; fi
	rm -rf $(VENV) .txnq .pytest_cache .mypy_cache .ruff_cache
