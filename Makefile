# Junction: `make demo` (the simulation), `make setup`, `make check` (the fast
# tier), `make verify` (the whole proof; what CI runs), `make fuzz`, `make bench`.
# tests/README.md says which tests run where.
#
# Two installs into the same .venv, each with its own stamp:
# * $(DEMO_STAMP): `make demo` alone: the `demo` extra (attrs, hypothesis, rich,
#   matplotlib). No torch, no vLLM; about 220 MB, half a minute with a warm pip cache.
# * $(STAMP): `make setup`, used by every other target and by CI: the pinned
#   toolchain (`dev`), the batched paths (`kernels`: torch 2.13.0 CPU, Triton),
#   the demo, Ray for the parallel sweep's cluster test (`ray`), the fast replay's
#   cross-check peer (`peer`, pure Python), its compiled path (`fast`: numba,
#   wheels only), and vLLM 0.33.0
#   for the audit; a few minutes, about 3 GB.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The one command (junction/command.py); `junction --help` lists its subcommands.
JUNCTION := $(VENV)/bin/junction
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
BOUND ?= 4

.PHONY: check results setup verify verify-gpu lint typecheck test fuzz zoo findings bench bench-kernels bench-engine bench-replay exhaustive sweep kernel-sweep demo demo-trace mutmut clean audit-setup audit-vllm audit-findings bench-audit check-install audit-sglang-setup audit-sglang vllm-suite vllm-engine bench-dropin

# Every audited engine's extra of pyproject.toml, in its order: `audit` (vLLM
# 0.33.0 and what its import needs, torch pinned), `audit-sglang` (SGLang
# 0.5.23 and what importing its cache needs, after vLLM's, which its imports
# reach), any further `audit-NAME`; each installed --no-deps: the engines' own
# requirements are GPU-only.
AUDIT_EXTRAS = $(shell $(PYTHON) -c "import tomllib; \
	extras = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']; \
	print(' '.join(e for e in extras if e == 'audit' or e.startswith('audit-')))")
audit_packages = $(shell $(PYTHON) -c "import tomllib; \
	print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['$(1)']))")

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e ".[dev,kernels,demo,ray,peer,fast]"
	$(foreach extra,$(AUDIT_EXTRAS),$(PY) -m pip install --quiet --no-deps $(call audit_packages,$(extra)) &&) true
	touch $(STAMP) $(DEMO_STAMP)

# `make audit-setup`, `make audit-sglang-setup` (`make EXTRA-setup`, the skip
# reason of an engine's tests names it): one engine's extra reinstalled alone.
$(AUDIT_EXTRAS:%=%-setup): %-setup: $(STAMP)
	$(PY) -m pip install --quiet --no-deps $(call audit_packages,$*)

# The demo's install: a subset of the full one, so a full setup also stamps it.
$(DEMO_STAMP): pyproject.toml setup.py
	@echo "make demo: installing .[demo] into $(VENV) (attrs, hypothesis, rich, matplotlib; no torch, no vLLM)"
	@start=$$(date +%s); \
	$(PYTHON) -m venv $(VENV) && \
	$(PY) -m pip install --quiet -e ".[demo]" && \
	touch $(DEMO_STAMP) && \
	echo "make demo: installed in $$(( $$(date +%s) - start )) s"

setup: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict -p junction -p benchmarks

# REQUIRE=1 (CI): a missing vLLM, SGLang, Ray, peer or numba fails the tests that need it
# instead of skipping them (pytest's --require-* options, tests/conftest.py).
REQUIRE ?=
REQUIRED = $(if $(REQUIRE),--require-all)

# The suite runs in two parts: the tests marked wall_clock (they time a real
# command) alone in one process, then the rest in TEST_JOBS processes
# (pytest-xdist; CI has 2 cores; --dist loadgroup keeps an xdist_group on one
# worker). What a test reports is in the closing summary, not on stdout (a
# worker's output is not shown). tests/README.md.
TEST_JOBS ?= 2
XDIST = -n $(TEST_JOBS) --dist loadgroup

# The ci Hypothesis profile: derandomized, no deadline; statistics show example counts.
test: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -m wall_clock $(REQUIRED)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest $(XDIST) -m "not wall_clock" --hypothesis-show-statistics $(REQUIRED)

# vllm-suite last: vLLM's own tests with the core swapped in (see its target).
verify: lint typecheck test vllm-suite

# The fast tier (under 2 minutes here): lint, types, then the unit and example
# tests and every property at the `check` Hypothesis profile (20 examples), the
# exhaustive walk at bound 2, without the tests marked slow. In one process:
# two workers' start-up (each collects the suite) costs more than they save on
# under a minute of tests (BENCHMARKS.md, "Test tiers"). tests/README.md.
CHECK_TESTS = tests/examples tests/properties tests/conformance tests/engine tests/workloads
check: lint typecheck
	HYPOTHESIS_PROFILE=check $(PY) -m pytest -q -m "not slow" --exhaustive-bound 2 $(CHECK_TESTS)

# On a GPU machine, with its own torch and triton plus pytest, hypothesis and attrs.
verify-gpu:
	HYPOTHESIS_PROFILE=ci $(PYTHON) -m pytest -rs -m cuda tests/kernels

# `make fuzz POLICY=NAME [SECONDS=60] [CALL_SECONDS=10] [POLICY_PATH=DIR]`: the
# conformance harness on one policy (a built-in name or module:attribute,
# imported from DIR by the worker alone) in a worker process:
# SECONDS is a hard deadline, CALL_SECONDS the limit of one policy call;
# non-zero on a violation, an error, a timeout or an unchecked promise.
# With POLICY it needs only the demo install (DEMO_STAMP: no torch, no vLLM).
# Without POLICY: the whole property suite with many more examples (the engine
# state machine runs far longer) and a larger exhaustive bound; about an hour.
SECONDS ?= 60
fuzz: $(if $(POLICY),$(DEMO_STAMP),$(STAMP))
ifdef POLICY
	$(JUNCTION) fuzz --policy $(POLICY) --seconds $(SECONDS) \
		$(if $(CALL_SECONDS),--call-seconds $(CALL_SECONDS)) \
		$(if $(POLICY_PATH),--policy-path $(POLICY_PATH))
else
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -s --exhaustive-bound $(BOUND) \
		--hypothesis-show-statistics tests/properties tests/engine
endif

# docs/findings.md: the harness on the vLLM policies (a few minutes).
findings: $(STAMP)
	$(JUNCTION) findings

# The bug zoo alone, with its scoreboard (also part of `make test`).
zoo: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest tests/quality

exhaustive: $(STAMP)
	$(JUNCTION) exhaustive

# The README's first command: retention policies on an agent workload. Prints
# the tables; docs/demo/ gets simulate.txt, simulate.json and simulate.png.
demo: $(DEMO_STAMP)
	@start=$$(date +%s); \
	$(JUNCTION) simulate --out docs/demo && \
	echo "make demo: simulated in $$(( $$(date +%s) - start )) s (docs/demo/: simulate.txt, .json, .png)"

# docs/results.md: `make demo`, then every table it shows copied from the file
# that holds it (the trace tables from docs/demo-trace/: `make demo-trace` first
# to refresh those, about an hour). tests/examples/test_results.py checks them.
results: demo
	$(JUNCTION) results docs/results.md

# The Mooncake conversation trace (examples/traces/) on the four model presets,
# OVERWRITING the committed docs/demo-trace/ (about an hour here; it says so),
# each request at its timestamp on the modelled clock, a pool of half the working
# set, the four policies: docs/demo-trace/<preset>/ gets simulate.txt, .json and
# the two figures. TRACE_REQUESTS=N replays the first N requests (the committed
# results: 4000, about 22 minutes of traffic); TRACE_REQUESTS=all the whole trace
# (see BENCHMARKS.md, Trace replay, for how long). The interval row's R is the
# smallest multiple of the preset's L from 256 (nemotron-h 528, qwen3-next 544).
TRACE_REQUESTS ?= 4000
TRACE_POOL ?= 0.5
DEMO_TRACE_PRESETS = gpt-oss:256 gemma3:256 nemotron-h:528 qwen3-next:544
demo-trace: $(DEMO_STAMP)
	@echo "make demo-trace: overwrites the 16 committed files of docs/demo-trace/<preset>/;" \
		"about an hour here at TRACE_REQUESTS=4000 (tens of minutes a preset with all)"
	@start=$$(date +%s); \
	for preset in $(DEMO_TRACE_PRESETS); do \
		$(JUNCTION) simulate \
			--trace examples/traces/mooncake-conversation.jsonl.gz \
			$(if $(filter all,$(TRACE_REQUESTS)),,--requests $(TRACE_REQUESTS)) \
			--geometry $${preset%%:*} --interval $${preset##*:} \
			--pool-fraction $(TRACE_POOL) --out docs/demo-trace/$${preset%%:*} || exit 1; \
	done; \
	echo "make demo-trace: simulated in $$(( $$(date +%s) - start )) s (docs/demo-trace/)"

# A fresh virtual environment outside the checkout: `pip install .` must add
# one top-level name (junction) and attrs, nothing else; `mypy --strict` must
# pass on a user file importing the installed core; the `reference` extra must
# run its CLI. Needs the package registry (CI runs it after `make verify`).
check-install:
	bash tests/install/check_install.sh $(PYTHON)

bench: $(STAMP)
	$(PY) -m benchmarks.bench_core

bench-kernels: $(STAMP)
	$(PY) -m benchmarks.bench_kernels

bench-engine: $(STAMP)
	$(PY) -m benchmarks.bench_engine

# The fast replay's sweep: the whole conversation trace, Qwen3-Next through the
# memory model, the four compared variants x 8 budgets, LRU (BENCHMARKS.md).
bench-replay: $(STAMP)
	time $(JUNCTION) hbm --model qwen3-next-80b-a3b --hbm 8,16,32,64,128,256,512,1024 --jobs 2

# Every input up to a bound through the batched path, against core.
kernel-sweep: $(STAMP)
	$(JUNCTION) kernel-sweep

# The simulation sweep (built-in workload x geometries x policies x R x pools) in
# parallel processes; ARGS='--trace FILE --ray auto ...' for more (README, Parallel sweep).
sweep: $(STAMP)
	$(JUNCTION) sweep --out out/sweep $(ARGS)

# Mutation testing of core/ (config in pyproject.toml [tool.mutmut]) with one
# worker, a small Hypothesis profile and exhaustive bound 2 ([tool.mutmut]); not
# part of verify/CI (slow: docs/mutmut-survivors.md says how long). Starts from
# scratch, then prints the score and every mutant not killed (each explained in
# docs/mutmut-survivors.md).
mutmut: $(STAMP)
	rm -rf mutants
	HYPOTHESIS_PROFILE=mutmut $(VENV)/bin/mutmut run --max-children 1
	$(VENV)/bin/mutmut export-cicd-stats
	$(PY) -c "import json; s = json.load(open('mutants/mutmut-cicd-stats.json')); \
		print('mutation score: {d} detected (killed {killed} + timeout {timeout}) / {total} ' \
		'mutants = {p:.1f}%; survived {survived}, no tests {no_tests}, suspicious {suspicious}' \
		.format(d=s['killed'] + s['timeout'], p=100 * (s['killed'] + s['timeout']) / s['total'], **s))"
	$(VENV)/bin/mutmut results

# The vLLM 0.33.0 audit (also part of `make test`, which skips it only where
# vLLM is absent; here its absence is an error). `audit-setup` reinstalls the
# audit packages alone; `audit-findings` regenerates its docs/findings.md section.
audit-vllm: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -s --require-vllm \
		--hypothesis-show-statistics tests/audit

audit-findings: $(STAMP)
	$(JUNCTION) audit findings --write docs/findings.md

# vLLM 0.33.0's own tests (tests/v1/core of its sdist) that call one of the
# three decision points, run against unmodified vLLM and then with the core
# swapped in (junction.dropin); prints N passed, M failed of T and each
# failure's reason, and exits 1 unless every counted test passes or differs
# where its expectation encodes a recorded finding (audit/vllm/suite/suite.py;
# a refusal of an option the core cannot express is a failure). Part of
# `verify`: without vLLM it skips, unless REQUIRE is set (CI),
# where that is an error. The sdist (fetched from pip's configured index on
# the first run), the unpacked tests and the reports are cached in
# .vllm-suite/ (git-ignored). About 2.5 min of CPU (BENCHMARKS.md, "vLLM suite").
vllm-suite: $(STAMP)
	$(JUNCTION) audit vllm-suite --cache .vllm-suite $(if $(REQUIRE),--require-vllm)

# vLLM 0.33.0's real Scheduler (CPU, no model) as shipped against the
# drop-in, step by step, on every layout of audit/vllm/scheduler_differential
# (53, 14 with a KV connector) x 4 seeds x 300 seeded multi-turn requests, in both modes, with a
# shadow asking the drop-in every lookup, split and mask vLLM answers; exits 1
# on an exception or a difference no documented finding explains (identical
# mode: any difference). The fast slice is tests/audit/test_dropin_engine.py.
# 5 to 7 min on one core (docs/dropin.md).
vllm-engine: $(STAMP)
	$(JUNCTION) audit vllm-engine --seeds 4 --requests 300

# vLLM 0.33.0's scheduler loop (schedule + update_from_output) with the drop-in
# in each mode against vLLM as shipped, timed through pyperf; then, where
# valgrind is installed, the decisions' instruction count, which repeats
# (BENCHMARKS.md, "The drop-in in vLLM's scheduler loop").
bench-dropin: $(STAMP)
	$(PY) -m benchmarks.bench_dropin_loop
	$(if $(shell command -v valgrind),$(PY) -m benchmarks.bench_dropin_loop --count decisions --requests 100)

bench-audit: $(STAMP)
	$(PY) -m benchmarks.bench_audit
	$(PY) -m benchmarks.bench_audit_sglang

# The SGLang 0.5.23 audit (tests/audit/sglang, also part of `make test`, which
# skips it only where SGLang is absent; here its absence is an error).
# `audit-sglang-setup` reinstalls its packages alone; `audit-findings` also
# regenerates its docs/findings.md section.
audit-sglang: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(PY) -m pytest -s --require-vllm --require-sglang \
		--hypothesis-show-statistics tests/audit/sglang

clean:
	rm -rf $(VENV) .hypothesis .mypy_cache .pytest_cache .ruff_cache *.egg-info build dist
