# The two quick-start commands (README): `make demo` and `make test`.
# Each creates ./.venv and installs what it needs on first use.

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
CODE := txnq workers migrations tests bench examples

.PHONY: demo test lint bench standalone clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# Runs a short produce/consume demo on the embedded PostgreSQL under ./.txnq.
demo: $(STAMP)
	$(PY) examples/quickstart.py

# Lint, type-check and run the test suite (TXNQ_TEST_DSN picks the server;
# unset: testcontainers if Docker answers, else embedded PostgreSQL 18).
test: lint
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check $(CODE)
	$(VENV)/bin/ruff format --check $(CODE)
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/produce_consume.py

standalone: $(STAMP)
	$(VENV)/bin/txnq standalone

clean:
	rm -rf $(VENV) .txnq .pytest_cache .mypy_cache .ruff_cache
