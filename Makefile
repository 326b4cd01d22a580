# The commands CI and the README use. `make run` and `make test` set everything up themselves.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint typecheck unit services browser bench check-deploy clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# `make run PORT=9000` (or AGENTCORE_PORT in the environment); HOST likewise.
PORT ?= $(or $(AGENTCORE_PORT),8080)
HOST ?= $(or $(AGENTCORE_HOST),127.0.0.1)

run: install
	$(BIN)/agentcore serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff format --check agentcore alembic tests benchmarks scripts
	$(BIN)/ruff check agentcore alembic tests benchmarks scripts

typecheck: install
	$(BIN)/mypy

services:
	scripts/ensure_services.sh

# A Chromium for tests/browser (installed as root when missing; required with CI=true).
browser:
	scripts/ensure_chromium.sh

test: install services browser lint typecheck
	$(BIN)/pytest

unit: install
	$(BIN)/pytest tests/unit

bench: install
	$(BIN)/python benchmarks/service_latency.py

check-deploy: install
	docker/check.sh --install-tools

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
