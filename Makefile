# Two commands: `make run` starts the whole app; `make test` runs every check.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint typecheck migrations-check pytest clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Phasewise needs Python 3.11 (set PYTHON=/path/to/python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.runtime-installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-dev.txt $(VENV)/.runtime-installed
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.runtime-installed
	@DJANGO_DEBUG=1 PATH="$(CURDIR)/$(BIN):$$PATH" ./bin/run

test: $(VENV)/.dev-installed lint typecheck migrations-check pytest

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev-installed
	$(BIN)/mypy .

migrations-check: $(VENV)/.dev-installed
	DJANGO_SETTINGS_MODULE=config.settings.test $(BIN)/python manage.py makemigrations --check --dry-run

pytest: $(VENV)/.dev-installed
	$(BIN)/pytest --durations=15 --timeout=120 $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) staticfiles .mypy_cache .ruff_cache .pytest_cache
