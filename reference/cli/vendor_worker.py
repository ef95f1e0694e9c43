"""The process `vendor verify` asks a vendored copy in: it imports the copy, and answers.

A copy is code edited by people, or written to pass: it can loop, exit,
crash the interpreter, write frames on any descriptor it finds or rewrite
this module. So nothing here is believed: ``vendor verify`` (:mod:`.vendor`)
runs this contained (:class:`isolation.Service`), sends the walk's questions
as plain data and judges every answer itself against the oracle; a forged
message is at worst a wrong or malformed answer. The first message is
``{"loaded": true}`` or ``{"load_failed": TEXT}``; then one ``{"id",
"answers"}`` per ``{"id", "decision", "questions"}``
(:class:`..oracle.answers.Answerer`). Run as ``python -m
junction.reference.cli.vendor_worker READ_FD WRITE_FD TARGET``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from junction.reference import vendoring
from junction.reference.isolation import serve
from junction.reference.oracle.answers import Answerer

__all__ = ["main", "start"]

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def start(args: list[str]) -> tuple[dict[str, Any], Answer | None]:
    """Import the copy in ``args[0]``: the first message and how each request is answered."""
    sys.dont_write_bytecode = True  # a cache in the copy would fail its `vendor check`
    try:
        copy = vendoring.load(Path(args[0]))
    except BaseException as error:  # SystemExit and KeyboardInterrupt in its import too
        return {"load_failed": repr(error)[:400]}, None
    answerer = Answerer(copy)

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        answers = answerer.answer_all(request["decision"], request["questions"])
        return {"id": request["id"], "answers": answers}

    return {"loaded": True}, answer


def main(argv: list[str]) -> int:
    return serve(argv, start)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
