# `make demo` and `make test` set up a local virtual environment on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/referee: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

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
