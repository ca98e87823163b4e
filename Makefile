# `make demo` and `make test` set up a local virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test check lint bench clean

# The suite runs on worker processes (pytest-xdist), a test file to each in turn: a file's
# module fixtures (a served arena, the demo played) are set up once, and its tests keep their
# order. Most of a test's time is spent waiting on the programs it starts, so twice as many
# workers as cores keep the cores busy; no more than 8, which a big machine's memory bears.
WORKERS ?= $(shell n=$$(( $$(nproc) * 2 )); echo $$(( n > 8 ? 8 : n )))
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile
# What `make check` leaves out: the kinds of test that need a browser, a database server, a
# cluster, the jail or the starters' compilers, and the tests of more than about 3 s.
SLOW_KINDS := browser or postgres or cluster or jail or starters or slow

# A line per step, and pip's own lines for the packages as it fetches them: a first run
# takes a minute or two, which should not look like a hang.
$(BIN)/referee: pyproject.toml
	@echo "setting up $(VENV) (a minute or two on first run)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "installing referee and what it needs into $(VENV)..."
	$(BIN)/python -m pip install -e '.[test]'
	touch $@
	@echo "$(VENV) is ready"

demo: $(BIN)/referee
	$(BIN)/referee tournament matches/demo.yaml

test: lint
	$(PYTEST)

# The edit loop: lint and the quick tests, in a few minutes.
check: lint
	$(PYTEST) -m "not ($(SLOW_KINDS))"

lint: $(BIN)/referee
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(BIN)/referee
	$(BIN)/python benchmarks/engines.py

clean:
	rm -rf $(VENV)
