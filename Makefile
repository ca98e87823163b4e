# `make demo` and `make test` set up a local virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

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
	$(BIN)/python -m pytest

lint: $(BIN)/referee
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(BIN)/referee
	$(BIN)/python benchmarks/engines.py

clean:
	rm -rf $(VENV)
