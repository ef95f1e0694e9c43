# Junction: `make setup`, `make verify` (what CI runs), `make fuzz`, `make bench`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BOUND ?= 4

.PHONY: setup verify verify-gpu lint typecheck test fuzz bench bench-kernels bench-engine exhaustive sweep demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev,kernels,demo]"
	touch $(STAMP)

setup: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict core reference kernels benchmarks

# The ci Hypothesis profile: derandomized, no deadline; statistics show example counts.
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -s --hypothesis-show-statistics

verify: lint typecheck test

# On a GPU machine, with its own torch and triton plus pytest, hypothesis and attrs.
verify-gpu:
	HYPOTHESIS_PROFILE=ci $(PYTHON) -m pytest -rs -m cuda tests/kernels

# Many more examples (the engine state machine runs far longer) and a larger
# exhaustive bound; about an hour at the defaults.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz JUNCTION_EXHAUSTIVE_BOUND=$(BOUND) $(PY) -m pytest -s \
		--hypothesis-show-statistics tests/properties tests/engine

exhaustive: $(STAMP)
	$(PY) -m reference exhaustive

# The README's first command: retention policies on an agent workload. Prints
# the tables; docs/demo/ gets simulate.txt, simulate.json and simulate.png.
demo: $(STAMP)
	$(PY) -m reference simulate --out docs/demo

bench: $(STAMP)
	$(PY) -m benchmarks.bench_core

bench-kernels: $(STAMP)
	$(PY) -m benchmarks.bench_kernels

bench-engine: $(STAMP)
	$(PY) -m benchmarks.bench_engine

sweep: $(STAMP)
	$(PY) -m kernels.sweep

clean:
	rm -rf $(VENV) .hypothesis .mypy_cache .pytest_cache .ruff_cache *.egg-info
