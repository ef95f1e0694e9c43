"""The suite's options and Hypothesis profiles (tests/README.md says what runs where).

Options (``pytest --help``, group "junction"): ``--require-vllm``,
``--require-sglang`` (one per audited engine), ``--require-ray``,
``--require-peer`` and ``--require-numba`` turn a missing optional install
into an error instead of a skip; ``--require-all`` gives them all (CI). ``--core MODULE`` and
``--exhaustive-bound N`` (:mod:`tests.options`); ``--whole-trace`` runs the
tests marked ``whole_trace``. Profiles: ``dev`` (default), ``check`` (``make
check``: few examples), ``ci`` (derandomized, no deadline), ``fuzz``,
``mutmut`` (``make mutmut``: derandomized, few examples, no shrinking).
``CI`` in the environment selects ``ci``; ``HYPOTHESIS_PROFILE`` overrides.

A test states what it covered (the exhaustive walk's count, the headline's
figures) through the ``summary`` fixture, printed at the end of the run:
``make test`` runs the suite in worker processes (pytest-xdist), where a
test's own output is not shown, even with ``-s``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable

import pytest
from _pytest.terminal import TerminalReporter
from hypothesis import HealthCheck, Phase, settings

from junction.audit.engines import engine_names
from tests import options
from tests.reports import SCOREBOARD, SUMMARY, recorded

settings.register_profile("dev", max_examples=200, deadline=None)
# `make check`: the fast tier; every property runs, on few examples.
settings.register_profile(
    "check",
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=500,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# Runs once per mutant: a killed mutant needs one failing example, not a
# shrunk one, and no example database may carry failures across mutants.
settings.register_profile(
    "mutmut",
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("junction")
    # One per audited engine, Ray (the parallel sweep), the peer (tests/replay/test_peer.py)
    # and numba (the compiled replay, tests/replay/test_engines.py).
    for name in (*engine_names(), "ray", "peer", "numba"):
        group.addoption(
            f"--require-{name}",
            action="store_true",
            help=f"fail, instead of skipping, the tests that need {name} where it is missing",
        )
    group.addoption(
        "--require-all",
        action="store_true",
        help="every --require-NAME above at once (CI: `make verify REQUIRE=1`)",
    )
    group.addoption(
        "--core",
        default=options.core_module,
        metavar="MODULE",
        help="the core the properties judge, by module name (a vendored copy); "
        "default junction.core",
    )
    group.addoption(
        "--exhaustive-bound",
        type=int,
        default=options.exhaustive_bound,
        metavar="N",
        help="the bound of the bounded-exhaustive walk (default 3)",
    )
    group.addoption(
        "--whole-trace",
        action="store_true",
        help="also run the tests marked whole_trace (tens of minutes)",
    )


def pytest_configure(config: pytest.Config) -> None:
    options.core_module = config.getoption("--core")
    options.exhaustive_bound = config.getoption("--exhaustive-bound")
    options.require_peer = config.getoption("--require-peer") or config.getoption("--require-all")
    options.require_numba = config.getoption("--require-numba") or config.getoption("--require-all")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--whole-trace"):
        return
    skip = pytest.mark.skip(reason="whole_trace: run with --whole-trace (tens of minutes)")
    for item in items:
        if "whole_trace" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def summary(record_property: Callable[[str, object], None]) -> Callable[[str], None]:
    """Adds a line to the run's closing summary, under the test's id (also from an xdist worker)."""
    return lambda line: record_property(SUMMARY, line)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> object:
    """After each test, what is still alive (modules, caches, vLLM once imported) is
    frozen out of the cyclic collector: a full collection walks only what later tests
    make, where it walked a worker's whole heap and ran the allocating walks 2-3x slower."""
    yield
    gc.collect()
    gc.freeze()


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    lines = list(recorded(terminalreporter, SUMMARY))
    if lines:
        terminalreporter.section("what the tests covered")
    for nodeid, line in lines:
        terminalreporter.write_line(f"{nodeid}: {line}")
    if any(recorded(terminalreporter, SCOREBOARD)):
        from tests.quality.scoreboard import write_scoreboard  # only when the zoo ran

        write_scoreboard(terminalreporter)
