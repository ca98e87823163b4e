"""The per-state reasoner: games too big to ground whole, each state grounded when reached."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.errors import GameFault, IllegalMoveError, RulesheetError
from referee.games import get_game, load_text
from referee.games.gdl import ground
from referee.games.gdl.check import checked_rules
from referee.games.gdl.game import GdlGame
from referee.games.gdl.per_state import PerState
from referee.games.gdl.syntax import parse_rulesheet
from referee.records.conformance import check_file
from tests.support.paths import EXAMPLES, GDL_REFERENCES, RULES
from tests.support.rulesheets import dense


def per_state(text: str, where: str) -> GdlGame:
    return GdlGame(PerState(checked_rules(parse_rulesheet(text, where), where), where), where, text)


def per_state_file(path: Path) -> GdlGame:
    return per_state(path.read_text(), str(path))


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any game past a few ground rules is played one state at a time."""
    monkeypatch.setattr(ground, "WHOLE_RULES", 50)
    load_text.cache_clear()
    yield
    load_text.cache_clear()


@pytest.mark.corpus
@pytest.mark.parametrize("path", GDL_REFERENCES, ids=lambda p: p.stem)
@pytest.mark.slow
def test_per_state_reasoner_reproduces_the_gdl_reference_games(path: Path) -> None:
    report = check_file(path, per_state_file(RULES / f"{path.stem}.kif"))
    assert report.games == len(path.read_text().splitlines())
    assert [str(m) for m in report.mismatches] == []


@pytest.mark.parametrize(
    "path",
    [
        EXAMPLES / "tictactoe.kif",
        EXAMPLES / "three-in-a-row.kif",
        *(
            pytest.param(RULES / f"{name}.kif", marks=pytest.mark.corpus)
            for name in ("3pConnectFour", "breakthrough", "pentago")
        ),
    ],
    ids=lambda path: path.stem,
)
@pytest.mark.slow
def test_per_state_and_compiled_reasoners_agree_on_random_playouts(path: Path) -> None:
    whole, one = get_game(str(path)), per_state_file(path)
    assert whole.reasoner.complete and not one.reasoner.complete
    rng = random.Random(path.stem)
    for _ in range(3):
        a, b = whole.initial_state(), one.initial_state()
        for _step in range(60):
            assert whole.facts(a) == one.facts(b)
            assert whole.is_terminal(a) == one.is_terminal(b)
            if whole.is_terminal(a):
                break
            legal = [whole.legal_moves(a, r) for r in range(len(whole.roles))]
            assert legal == [one.legal_moves(b, r) for r in range(len(one.roles))]
            joint = tuple(rng.choice(moves) for moves in legal)
            a, b = whole.next_state(a, joint), one.next_state(b, joint)
        try:
            goals = whole.goals(a)
        except GameFault as fault:  # pentago's two goals: both reasoners must say so
            with pytest.raises(GameFault) as caught:
                one.goals(b)
            assert str(caught.value) == str(fault)
        else:
            assert one.goals(b) == goals


def test_a_game_too_big_to_ground_whole_is_loaded_one_state_at_a_time(small_budget: None) -> None:
    game = get_game(str(EXAMPLES / "tictactoe.kif"))
    assert not game.reasoner.complete
    state = game.initial_state()
    assert len(game.legal_moves(state, 0)) == 9
    # A move never met yet parses; the rules then judge it.
    assert game.parse_move("(MARK 4 4)") == "(mark 4 4)"
    with pytest.raises(IllegalMoveError, match="not a legal move"):
        game.next_state(state, ("(mark 4 4)", "noop"))
    state = game.next_state(state, ("(mark 2 2)", "noop"))
    assert "(cell 2 2 x)" in game.facts(state)


def test_a_game_that_compiles_past_the_size_budget_is_loaded_one_state_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Tic-tac-toe compiles to about 18 KiB.
    monkeypatch.setattr(ground, "WHOLE_BYTES", 4096)
    load_text.cache_clear()
    try:
        game = load_text((EXAMPLES / "tictactoe.kif").read_text(), "tictactoe.kif")
        assert not game.reasoner.complete
        assert len(game.legal_moves(game.initial_state(), 0)) == 9
    finally:
        load_text.cache_clear()


def test_a_game_that_cannot_be_compiled_within_the_memory_is_loaded_one_state_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It grounds within 400 MiB, but Python's compiler needs about 450 MiB more for it.
    monkeypatch.setattr(ground, "GROUND_MEMORY", 400 << 20)
    load_text.cache_clear()
    try:
        game = load_text(dense(300), "dense.kif")
        assert not game.reasoner.complete
        assert len(game.legal_moves(game.initial_state(), 0)) == 300
    finally:
        load_text.cache_clear()


@pytest.mark.corpus
@pytest.mark.slow
def test_chess_is_played_one_state_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its whole ground program has millions of rules; a threat relation alone 2.9 million
    # atoms over all boards. Made to give up early here, as it would after 10 s.
    monkeypatch.setattr(ground, "WHOLE_RULES", 1000)
    game = get_game(str(RULES / "chess.kif"))
    assert not game.reasoner.complete
    state = game.initial_state()
    white = game.legal_moves(state, 0)
    assert len(white) == 20 and "(move wp e 2 e 4)" in white
    assert game.legal_moves(state, 1) == ("noop",)
    state = game.next_state(state, ("(move wp e 2 e 4)", "noop"))
    assert "(cell e 4 wp)" in game.facts(state)
    assert len(game.legal_moves(state, 1)) == 20


def test_a_game_with_an_endless_domain_but_finite_states_is_played(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counting with (s ...) never ends as a whole program, but each state is small.
    monkeypatch.setattr(ground, "WHOLE_SECONDS", 1.0)
    game = load_text(
        """
        (role a) (init (count zero))
        (<= (legal a tick) (true (count ?x)))
        (<= (next (count (s ?x))) (true (count ?x)))
        (<= terminal (true (count (s (s (s zero))))))
        (<= (goal a 100) terminal)
        """,
        "counter.kif",
    )
    state = game.initial_state()
    for _ in range(3):
        state = game.next_state(state, ("tick",))
    assert game.is_terminal(state) and game.goals(state) == (100,)


@pytest.mark.slow
def test_a_game_whose_first_state_does_not_ground_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ground, "WHOLE_SECONDS", 1.0)
    monkeypatch.setattr(ground, "GROUND_SECONDS", 2.0)
    text = """
        (role a) (init s)
        (<= (num zero) (true s))
        (<= (num (succ ?x)) (num ?x))
        (<= (legal a (m ?x)) (num ?x))
    """
    with pytest.raises(RulesheetError) as caught:
        load_text(text, "endless.kif")
    assert str(caught.value) == "endless.kif: even its first state does not ground within 2 s"


def test_a_state_without_one_meaning_is_a_fault_of_the_rules() -> None:
    game = per_state(
        "(role a)\n(init s)\n(<= (legal a m) (true s))\n"
        "(<= p (true s) (not q))\n(<= q (true s) (not p))\n(<= terminal p)\n",
        "two.kif",
    )
    with pytest.raises(GameFault, match=r"two.kif: .*negation through recursion.* state \{s\}"):
        game.legal_moves(game.initial_state(), 0)


def test_a_goal_that_is_no_number_is_a_fault_of_the_rules() -> None:
    game = per_state("(role a) (init s) (<= terminal (true s)) (<= (goal a win) (true s))", "g.kif")
    with pytest.raises(GameFault, match=r"goal value win of a is not a number 0\.\.100"):
        game.goals(game.initial_state())
