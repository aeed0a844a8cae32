VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: demo demo-model test bench clean

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
	$(VENV)/bin/groundstate run examples/retail --system examples/systems/careful.yaml \
		--attempts 4 --concurrency 4 --store .groundstate/demo.db --html .groundstate/demo-report.html

# The retail suite through the openai-chat adapter and the real openai SDK, against a loopback
# model server that plays each task's oracle (no network, no key).
demo-model: $(VENV)/.installed-test
	$(PY) examples/model_demo.py --attempts 2 --concurrency 4 \
		--store .groundstate/demo-model.db --html .groundstate/demo-model-report.html

# The HTML report's browser tests need Chromium (scripts/ensure-browser.sh installs it) and the
# postgres tests need PostgreSQL's server binaries (scripts/ensure-postgres.sh installs them;
# groundstate starts its own private server). If either is impossible here, those tests are
# skipped with a warning rather than hiding every other test.
# One rerun of a failed test, the first failure's traceback printed under "rerun test summary
# info": the suite runs thousands of in-process agents, worker pools, a Ray cluster and
# servers on one shared machine, and CI runs it once. A test that fails twice fails the run;
# one that passes on its rerun is listed with its traceback, and is a defect to find, not a
# pass to forget (the twenty-first round's pool exit-status race was one; so was a thread a
# test left behind swapping sys.stdout under a later command, CHANGELOG, ninth and tenth
# rounds). tests/conftest.py lists, at the end, threads tests left working and any command
# whose streams were replaced under it (GROUNDSTATE_LEAK_LOG=FILE logs more).
RERUN = --reruns 1 --rerun-show-tracebacks
# The 25 slowest tests are listed at the end: where the suite's time goes (aim: 15 minutes).
DURATIONS = --durations=25
# Two workers (pytest-xdist, installed with the test extra): each test file runs whole, its
# tests in order, in one of two workers (a module's fixtures start once per worker); each
# worker's leftovers list reaches the summary. About 20 minutes on a quiet 2-core machine
# against 35 for one process; shown green from fresh clones several times before it became
# the default. `make test XDIST=` runs the suite in one process.
XDIST ?= -n 2 --dist loadfile

test: $(VENV)/.installed-test
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/mypy
	@skip=""; \
	if ! bash scripts/ensure-browser.sh; then skip="$$skip GROUNDSTATE_SKIP_BROWSER=1"; \
		echo "WARNING: Chromium is unavailable; the browser tests are SKIPPED" >&2; fi; \
	if ! bash scripts/ensure-postgres.sh; then skip="$$skip GROUNDSTATE_SKIP_POSTGRES=1"; \
		echo "WARNING: PostgreSQL is unavailable; the postgres tests are SKIPPED" >&2; fi; \
	env $$skip $(PY) -m pytest $(XDIST) $(RERUN) $(DURATIONS)

# Overhead against the plain-sqlite floor, concurrency efficiency, the size curve, startup time,
# and the side-by-side with Inspect AI (skipped unless inspect_ai is installed). See docs/scale.md.
bench: $(VENV)/.installed-test
	$(PY) bench/overhead.py $(BENCH_ARGS)
	$(PY) bench/attempt_phases.py
	$(PY) bench/size_curve.py $(BENCH_ARGS)
	$(PY) bench/call_checks.py $(BENCH_ARGS)
	$(PY) bench/startup.py
	$(PY) bench/inspect_compare.py
	$(PY) bench/report_scale.py

clean:
	rm -rf $(VENV) .groundstate .pytest_cache .mypy_cache .ruff_cache
