# Junction: `make setup`, `make verify` (what CI runs), `make fuzz`, `make bench`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BOUND ?= 4

.PHONY: setup verify lint typecheck test fuzz bench exhaustive clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict core reference kernels

# The ci Hypothesis profile: derandomized, no deadline; statistics show example counts.
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -s --hypothesis-show-statistics

verify: lint typecheck test

# Many more examples and a larger exhaustive bound (BOUND=5 takes several minutes).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz JUNCTION_EXHAUSTIVE_BOUND=$(BOUND) $(PY) -m pytest -s \
		--hypothesis-show-statistics tests/properties

exhaustive: $(STAMP)
	$(PY) -m reference exhaustive

bench: $(STAMP)
	$(PY) -m benchmarks.bench_core

clean:
	rm -rf $(VENV) .hypothesis .mypy_cache .pytest_cache .ruff_cache *.egg-info
