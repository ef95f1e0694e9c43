"""The pytest plugin the suite runs vLLM's tests under (``-p junction.audit.vllm.suite.plugin``).

``--junction-mode=count`` wraps each of the three decision points in a
counter that calls the original, recording which points each test calls;
``--junction-mode=dropin`` installs the core (:mod:`junction.dropin`) before
collection and checks after every test that it is still installed.
``--junction-shard=INDEX/COUNT`` keeps every COUNT-th test from the INDEX-th.
Each test's :class:`~junction.audit.vllm.suite.outcome.TestOutcome` is
appended to ``--junction-report`` as a JSON line as soon as it ends, with any
:class:`~junction.dropin.UnsupportedOption` found in its exception chain.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import attrs
import pytest

from junction import dropin

from .outcome import Status, TestOutcome

__all__ = ["pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("junction", "the core swapped into vLLM")
    group.addoption("--junction-mode", choices=("count", "dropin"), required=True)
    group.addoption("--junction-report", type=Path, required=True)
    group.addoption("--junction-shard", type=_shard, default=(0, 1), metavar="INDEX/COUNT")


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise ValueError(f"--junction-shard {text!r}: must be INDEX/COUNT with INDEX < COUNT")
    return int(index), int(count)


def pytest_configure(config: pytest.Config) -> None:
    recorder = _Recorder(config.getoption("--junction-mode"), config.getoption("--junction-report"))
    config.pluginmanager.register(recorder, "junction-recorder")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every shard collects everything and keeps every COUNT-th test: balanced
    # by test count whatever the files' sizes.
    index, count = config.getoption("--junction-shard")
    kept = items[index::count]
    if count > 1:
        dropped = [item for position, item in enumerate(items) if position % count != index]
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@attrs.define
class _Running:
    """What is known about the test in progress."""

    status: Status = Status.PASSED
    calls: set[str] = attrs.field(factory=set)
    unsupported: tuple[str, str] | None = None
    error: str | None = None


class _Recorder:
    def __init__(self, mode: str, report: Path) -> None:
        self.dropin = mode == "dropin"
        self.report = report
        report.write_text("", encoding="utf-8")
        self.running = _Running()
        if self.dropin:
            dropin.install()
        else:
            self._wrap_with_counters()

    def _wrap_with_counters(self) -> None:
        for cls, name in dropin.decision_points():
            original = cls.__dict__[name]
            if isinstance(original, classmethod):
                setattr(cls, name, classmethod(self._counted(original.__func__, name)))
            else:
                setattr(cls, name, self._counted(original, name))

    def _counted(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(function)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.running.calls.add(name)
            return function(*args, **kwargs)

        return counted

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.running = _Running()
        result = yield
        running = self.running
        outcome = TestOutcome(
            item.nodeid,
            running.status,
            tuple(sorted(running.calls)),
            running.unsupported,
            running.error,
        )
        with self.report.open("a", encoding="utf-8") as report:
            report.write(outcome.to_json() + "\n")
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        running = self.running
        if report.failed and running.status is not Status.FAILED:
            running.status = Status.FAILED
            lines = report.longreprtext.strip().splitlines()
            running.error = f"{report.when}: {lines[-1] if lines else 'failed'}"[:400]
            if call.excinfo is not None:
                running.unsupported = _unsupported(call.excinfo.value)
        elif report.skipped and running.status is Status.PASSED:
            running.status = Status.SKIPPED
        if self.dropin and call.when == "teardown" and not dropin.installed():
            running.status = Status.FAILED
            running.error = "teardown: the test put vLLM's own decision code back"
            dropin.install()
        return report


def _unsupported(error: BaseException | None) -> tuple[str, str] | None:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, dropin.UnsupportedOption):
            return error.option, repr(error.value)
        error = error.__cause__ or error.__context__
    return None
