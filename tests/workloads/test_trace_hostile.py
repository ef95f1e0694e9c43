"""The trace parser against what JSON allows but a trace must not contain.

Each case is one line after a valid first line, so the error must name line 2,
the field, and the rule; none may escape as a ``ValueError`` or
``RecursionError`` from ``json`` (a traceback at the command line).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from junction.reference.workloads.mooncake import parse_hash_trace
from junction.reference.workloads.trace import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    TraceError,
    load_trace,
    parse_trace,
)
from junction.reference.workloads.tracefile import parse_any_trace
from tests.groups import WALL_CLOCK

ROOT = Path(__file__).resolve().parents[2]
FIRST = '{"prompt": [5, 6], "session": "a"}\n'
HUGE = "9" * 5000


def nested(depth: int) -> str:
    return "[" * depth + "7" + "]" * depth


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        # integers beyond CPython's 4,300-digit limit, and beyond the trace's 20
        ('{"prompt": [1, ' + HUGE + "]}", "prompt", "element 1 is an int of 5,000 digits"),
        ('{"prompt": [1, -' + HUGE + "]}", "prompt", "element 1 is an int of 5,000 digits"),
        ('{"prompt": [1, ' + "9" * 30 + "]}", "prompt", "element 1 is an int of 30 digits"),
        ('{"prompt": [1], "output_tokens": ' + HUGE + "}", "output_tokens", "an int of 5,000"),
        ('{"prompt": [1], "output_tokens": 1048577}', "output_tokens", "in [1, 1,048,576]"),
        ('{"prompt": [1], "session": ' + HUGE + "}", "session", "at most 20 digits"),
        ('{"prompt": [1], "session": ' + "1" * 21 + "}", "session", "an int of 21 digits"),
        ('{"prompt": [1], "session": [' + HUGE + "]}", "session", "must be a string or an int"),
        # nesting: 100,000 brackets would be a RecursionError inside json
        ('{"prompt": ' + nested(100_000) + "}", "prompt", "nested deeper than 8 levels"),
        ('{"session": "x", "prompt": ' + nested(50) + "}", "prompt", "levels at column 35"),
        ('{"prompt": [1], "session": ' + nested(MAX_DEPTH) + "}", "session", "nested deeper"),
        (nested(100_000), None, "nested deeper than 8 levels at column 9"),
        ("{" * 100_000, None, "nested deeper than 8 levels"),
        # a key given twice: json would keep the last one silently
        ('{"prompt": [1], "prompt": [2]}', "prompt", "given twice; a field appears once"),
        ('{"prompt": [1], "session": "a", "session": "b"}', "session", "given twice"),
        ('{"prompt": [1], "session": {"k": 1, "k": 2}}', "session", "<object with 'k' twice>"),
        # one readable line: a long value is cut short
        ('{"prompt": [1, "' + "x" * 10_000 + '"]}', "prompt", "'xxxxxxxxxxxx"),
        ('{"prompt": [1, 1e99999]}', "prompt", "element 1 is inf; token ids must be ints"),
        ('{"prompt": [NaN]}', "prompt", "element 0 is nan; token ids must be ints"),
    ],
)
def test_hostile_lines_name_line_field_and_rule(line: str, field: str | None, problem: str) -> None:
    with pytest.raises(TraceError) as info:
        parse_trace(FIRST + line + "\n", "t.jsonl")
    assert (info.value.line, info.value.field) == (2, field)
    message = str(info.value)
    assert message.startswith("t.jsonl:2: " + (f"field {field!r}: " if field else ""))
    assert problem in message
    assert "\n" not in message and len(message) < 200


def test_the_limits_themselves_are_accepted() -> None:
    """20 digits is an int (a session id), 8 levels of brackets inside strings do not count."""
    ok = parse_trace(
        '{"prompt": [2147483647], "session": ' + "9" * MAX_INT_DIGITS + "}\n"
        '{"prompt": [1], "session": "' + "[" * 100 + '", "output_tokens": 1048576}\n'
    )
    assert ok[0].session == int("9" * MAX_INT_DIGITS) and ok[1].output_tokens == 2**20


def test_depth_eight_parses_and_fails_on_its_type_not_its_depth() -> None:
    line = '{"prompt": ' + nested(MAX_DEPTH - 1) + "}"  # the braces are level 1
    with pytest.raises(TraceError, match=r"element 0 is \[\[\[\[\[\[7\]\]\]\]\]\]; token ids must"):
        parse_trace(line)


@pytest.mark.parametrize(
    ("first", "second"),
    [(1, '"1"'), ('"1"', 1), (-3, '"-3"')],
)
def test_one_session_named_as_int_and_string_is_an_error_naming_both_lines(
    first: object, second: object
) -> None:
    text = f'{{"prompt": [1], "session": {first}}}\n{{"prompt": [2]}}\n'
    text += f'{{"prompt": [1, 2], "session": {second}}}\n'
    with pytest.raises(TraceError) as info:
        parse_trace(text, "t.jsonl")
    assert (info.value.line, info.value.field) == (3, "session")
    assert re.search(
        r"here and .* on line 1 name the same session as an int and as a string", str(info.value)
    )


def test_sessions_compare_as_written() -> None:
    requests = parse_trace(
        '{"prompt": [1], "session": 1}\n{"prompt": [1], "session": "01"}\n'
        '{"prompt": [1, 2], "session": 1}\n{"prompt": [1], "session": "a"}\n'
    )
    assert [r.session for r in requests] == [1, "01", 1, "a"]


def test_a_trace_file_with_hostile_lines_is_a_trace_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(FIRST + '{"prompt": ' + nested(100_000) + "}\n")
    with pytest.raises(TraceError, match=rf"^{re.escape(str(trace))}:2: field 'prompt': nested"):
        load_trace(trace)


def test_the_documented_messages_are_the_parsers() -> None:
    docs = (ROOT / "docs" / "trace-format.md").read_text()
    lines = {
        '{"prompt": [1, ' + HUGE + "]}": 2,
        '{"prompt": [[[[[[[[7]]]]]]]]}': 2,
        '{"prompt": [1], "prompt": [2]}': 2,
    }
    for line, number in lines.items():
        with pytest.raises(TraceError) as info:
            parse_trace(FIRST + line, "t.jsonl")
        assert info.value.line == number
        assert f"`{info.value}`" in docs
    with pytest.raises(TraceError) as info:
        parse_trace(
            '{"prompt": [1], "session": 1}\n{"prompt": [2]}\n{"prompt": [3], "session": "1"}',
            "t.jsonl",
        )
    assert f"\n{info.value}\n" in docs


# A line ends at "\n" (or "\r\n") alone, not at the other separators
# Python's str.splitlines breaks at: JSON lets a string hold U+2028, U+2029
# and U+0085 raw; the C0 ones (U+000B, U+000C, U+001C..U+001E) it does not.
IN_STRINGS = ["\u2028", "\u2029", "\x85"]
C0 = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
SEPARATORS = IN_STRINGS + C0


@pytest.mark.parametrize("separator", IN_STRINGS, ids=ascii)
@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_separator_inside_a_string_is_data(separator: str, ending: str) -> None:
    session = f"a{separator}b"
    text = FIRST.replace("\n", ending) + '{"prompt": [1], "session": "' + session + '"}' + ending
    assert [request.session for request in parse_trace(text)] == ["a", session]
    assert [request.session for request in parse_any_trace(text, "t.jsonl")] == ["a", session]
    # The hash-id format's lines are split the same way: its line 2 is one
    # object, whose unknown key holds the separator.
    hash_line = '{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}'
    hash_text = hash_line + ending + '{"' + session + '": 1}' + ending
    assert len(parse_any_trace(hash_line + ending, "t.jsonl")) == 1
    for parse in (parse_hash_trace, parse_any_trace):
        with pytest.raises(TraceError) as info:
            parse(hash_text, "t.jsonl")
        assert (info.value.line, info.value.field) == (2, session), info.value


@pytest.mark.parametrize("separator", SEPARATORS, ids=ascii)
def test_an_errors_line_number_counts_line_feeds_only(separator: str) -> None:
    # Line 2 is blank (white space and the separator); line 3 is the bad one.
    text = FIRST + " " + separator + ' \n{"prompt": []}\n'
    with pytest.raises(TraceError) as info:
        parse_trace(text, "t.jsonl")
    assert info.value.line == 3, info.value


@pytest.mark.parametrize("separator", C0, ids=ascii)
def test_a_control_separator_inside_a_string_is_invalid_json_on_its_own_line(
    separator: str,
) -> None:
    text = FIRST + '{"prompt": [1], "session": "a' + separator + 'b"}\n'
    with pytest.raises(TraceError, match=r"^t\.jsonl:2: not valid JSON \(Invalid control"):
        parse_trace(text, "t.jsonl")


@WALL_CLOCK
@pytest.mark.parametrize("unit", ['[\\"]', '{\\"', '"\\"[', '\\"[\\"]'], ids=ascii)
def test_a_megabyte_line_of_escaped_quotes_and_brackets_is_parsed_in_linear_time(
    unit: str,
) -> None:
    # A quote whose string never closes must not send the depth check scanning to
    # the end of the line from every later quote (quadratic: hours for a megabyte).
    line = unit * (2**20 // len(unit))
    started = time.perf_counter()
    with pytest.raises(TraceError) as info:
        parse_trace(FIRST + line + "\n", "t.jsonl")
    assert time.perf_counter() - started < 10  # linear: milliseconds; quadratic: hours
    assert info.value.line == 2
