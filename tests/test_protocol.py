"""The protocol's lines: every message built and parsed back, and a player's output framed."""

from __future__ import annotations

import pytest

from referee.protocol import (
    End,
    EndReason,
    Go,
    Line,
    LineReader,
    MessageError,
    Moves,
    Quit,
    Start,
    is_ready,
    parse,
    split_moves,
)


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (
            Start("m-1", "ticblock", "xcplayer", 10000, 1000),
            "start m-1 ticblock xcplayer 10000 1000",
        ),
        (Go(3, 900, ("(mark 1 1)", "noop")), "go 3 900 (mark 1 1) noop"),
        (Moves(3, ("(mark 1 1)", "noop")), "moves 3 (mark 1 1) noop"),
        (End((75, 25), EndReason.TERMINAL), "end 75 25 terminal"),
        (Quit(), "quit"),
    ],
)
def test_every_message_has_one_line_and_parses_back(message: object, line: str) -> None:
    assert str(message) == line
    assert parse(line) == message
    assert parse(line + "\r\n") == message


def test_moves_split_as_the_protocol_says() -> None:
    assert split_moves("(mark 1 1) noop (place e 5) swap") == [
        "(mark 1 1)",
        "noop",
        "(place e 5)",
        "swap",
    ]


@pytest.mark.parametrize(
    ("text", "moves"),
    [
        ("(a (b (c d)))  e", ["(a (b (c d)))", "e"]),
        ("(a (b (c (d (e))))) f", ["(a (b (c (d (e)))))", "f"]),
        ("x (a (b (c (d)))) (y)", ["x", "(a (b (c (d))))", "(y)"]),
        ("a(b)c", ["a", "(b)", "c"]),
        ("(a b", []),
        ("(a) (b (c", ["(a)"]),
        (") a", ["a"]),
        ("(a (b (c (d", []),
    ],
)
def test_moves_nested_at_any_depth_split_alike_deep_or_shallow(text: str, moves: list[str]) -> None:
    assert split_moves(text) == moves


@pytest.mark.parametrize("line", ["", "   ", "hello there", "info 3"])
def test_unknown_and_blank_lines_are_no_message(line: str) -> None:
    assert parse(line) is None


@pytest.mark.parametrize(
    "line", ["start m-1 ticblock", "go x 900 noop", "go 3", "end 75 25 bored", "quit now"]
)
def test_a_known_message_with_wrong_fields_is_an_error(line: str) -> None:
    with pytest.raises(MessageError, match="malformed"):
        parse(line)


def test_ready_is_lenient_on_case_and_spaces() -> None:
    assert is_ready(" Ready ") and not is_ready("ready!")


def test_lines_are_framed_across_chunks() -> None:
    reader = LineReader()
    assert reader.feed(b"(mark ") == []
    assert reader.feed(b"1 1)\r\nnoop\n# a") == [Line("(mark 1 1)"), Line("noop")]
    assert reader.feed(b" comment\n") == [Line("# a comment")]


def test_a_line_over_the_limit_is_one_problem_and_is_never_held() -> None:
    reader = LineReader(limit=10)
    assert reader.feed(b"x" * 8) == []
    assert reader.feed(b"x" * 8) == [Line(None, "a line longer than 0 KiB")]
    assert reader.feed(b"x" * 1000) == []
    assert reader.feed(b"x\nok\n") == [Line("ok")]


def test_a_line_that_is_not_utf8_is_a_problem() -> None:
    assert LineReader().feed(b"(place \xff 5)\n") == [Line(None, "a line that is not UTF-8")]
