"""The GGP HTTP protocol's messages, in the forms ggp-base's GameServer sends and reads."""

from __future__ import annotations

import pytest

from referee.games.gdl.syntax import respell, spellings
from referee.ggp.messages import (
    Abort,
    Info,
    MessageError,
    Play,
    Preview,
    Start,
    Status,
    Stop,
    format_info,
    format_request,
    parse_move_reply,
    parse_request,
    start,
)

RULES = "(role xplayer) (role oplayer) (<= (legal ?r noop) (role ?r))"


def test_a_start_carries_the_rulesheet_on_one_line_and_reads_back() -> None:
    rulesheet = "; tic\n(ROLE xplayer)\n(role oplayer)\n(<= (legal ?r noop)\n    (role ?r))\n"
    request = start("base.tictactoe.1", "xplayer", rulesheet, 60, 15)
    text = format_request(request)
    assert text == f"(START base.tictactoe.1 xplayer ({RULES}) 60 15)"
    assert parse_request(text) == request


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(PLAY m1 NIL)", Play("m1", None)),
        ("(play m1 ((mark 1 1) noop))", Play("m1", ("(mark 1 1)", "noop"))),
        ("(STOP m1 (noop (MARK 3 3)))", Stop("m1", ("noop", "(mark 3 3)"))),
        ("(ABORT m1)", Abort("m1")),
        ("(INFO)", Info()),
        (f"(PREVIEW ({RULES}) 30)", Preview(RULES, 30)),
        # ggp-base reads five arguments of START and ignores more.
        (f"(START m1 xplayer ({RULES}) 60 15 extra)", Start("m1", "xplayer", RULES, 60, 15)),
    ],
)
def test_requests_are_read_in_any_case_and_written_as_ggp_base_writes_them(
    text: str, expected: object
) -> None:
    request = parse_request(text)
    assert request == expected
    assert parse_request(format_request(request)) == request


def test_the_first_play_and_a_later_one_are_written_as_the_managers_write_them() -> None:
    assert format_request(Play("m1", None)) == "(PLAY m1 NIL)"
    assert format_request(Play("m1", ("(mark 1 1)", "noop"))) == "(PLAY m1 ((mark 1 1) noop))"
    assert format_request(Stop("m1", ("noop",))) == "(STOP m1 (noop))"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "must be one term, got 0"),
        ("(INFO) (INFO)", "must be one term, got 2"),
        ("(PLAY m1 NIL", "is not KIF: '(' is never closed"),
        ("PLAY", "a request is a list headed by its name"),
        ("((PLAY) m1)", "a request is a list headed by its name"),
        ("(DANCE m1)", "no request is called DANCE"),
        ("(PLAY m1)", "PLAY takes 2 argument(s), got 1"),
        ("(ABORT)", "ABORT takes 1 argument(s), got 0"),
        ("(INFO now)", "INFO takes 0 argument(s), got 1"),
        ("(START m1 xplayer (role x) 60 15)", "the rules must be a list of sentences"),
        (f"(START m1 xplayer ({RULES}) soon 15)", "start clock must be a whole number"),
        (f"(START m1 (x) ({RULES}) 60 15)", "the role must be a name, not (x)"),
        ("(PLAY m1 noop)", "the moves must be NIL or a list, not noop"),
        ("(PLAY m1 " + "(f " * 70 + ")" * 71, "nested more than 64 deep"),
    ],
)
def test_a_bad_request_is_refused_with_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(MessageError) as caught:
        parse_request(text)
    assert problem in str(caught.value)


def test_a_move_reply_is_one_term_made_canonical() -> None:
    assert parse_move_reply("  ( MARK 1   1 )\r\n") == "(mark 1 1)"
    assert parse_move_reply("NOOP") == "noop"
    for bad in ("", "(mark 1 1) (mark 2 2)", "(mark 1", "()"):
        with pytest.raises(MessageError):
            parse_move_reply(bad)


def test_info_replies() -> None:
    assert format_info("referee", Status.AVAILABLE) == "((name referee) (status available))"
    assert format_info("referee", Status.BUSY) == "((name referee) (status busy))"


def test_a_start_keeps_the_managers_spelling_of_the_rules_and_folds_the_rest() -> None:
    text = "(Start Base.TicTacToe2.1 xPlayer ((ROLE xPlayer) (init (control xPlayer))) 60 15)"
    assert parse_request(text) == Start(
        "base.tictactoe2.1", "xplayer", "(ROLE xPlayer) (init (control xPlayer))", 60, 15
    )
    assert parse_request("(PLAY Base.TicTacToe2.1 ((Play 1 1 X) NOOP))") == Play(
        "base.tictactoe2.1", ("(play 1 1 x)", "noop")
    )


def test_a_rulesheets_first_spelling_of_each_name_is_written_back() -> None:
    rulesheet = (
        "; a Comment\n(ROLE xPlayer) (role oplayer) (init (Control xPlayer))"
        " (<= (legal ?Who (Mark ?x)) (TRUE (control ?Who)) (Cell ?x)) (OPLAYER wins)"
    )
    spelling = spellings(rulesheet)
    # Keywords are lower case wherever ggp-base writes them; `oplayer` was met first so.
    assert spelling == {"xplayer": "xPlayer", "control": "Control", "mark": "Mark", "cell": "Cell"}
    assert respell("(control xplayer)", spelling) == "(Control xPlayer)"
    assert respell("(mark oplayer)", spelling) == "(Mark oplayer)"
    assert respell("(true noop)", {}) == "(true noop)"
