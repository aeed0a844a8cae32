VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: demo test lint bench clean

$(VENV)/.installed-demo: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(VENV)/bin/groundstate run examples/retail --system examples/systems/careful.yaml --attempts 4 --store .groundstate/demo.db

test: $(VENV)/.installed-test
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy
	$(PY) -m pytest

bench: $(VENV)/.installed-test
	$(PY) bench/overhead.py

clean:
	rm -rf $(VENV) .groundstate .pytest_cache .mypy_cache .ruff_cache
