"""GDL rulesheets: the reasoner against independent reference games and the native engines,
every refusal as one line with its place, faults of the rules reported with their state."""

from __future__ import annotations

import json
import multiprocessing
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import GameFault, IllegalMoveError, MoveParseError, RulesheetError
from referee.games import GAMES, get_game, load_text
from referee.games.gdl.reasoner import true_bits
from referee.records.conformance import check_file
from tests.support.paths import CONFORMANCE, EXAMPLES, GDL_REFERENCES, RULES

runner = CliRunner()
# The original rulesheet of each built-in game in the public corpus (its README).
ORIGINALS = {
    "blocker-parallel": "blockerParallel",
    "ticblock": "ticblock",
    "hex-pie": "hexPie",
    "double-tictactoe": "double_tictactoe_dengji",
    "quad": "quad_7x7",
}


def rulesheet(name: str):  # type: ignore[no-untyped-def]
    return get_game(str(RULES / f"{name}.kif"))


@pytest.mark.corpus
def test_there_are_reference_games_for_one_two_and_three_roles() -> None:
    assert len(GDL_REFERENCES) == 15
    roles = {len(rulesheet(path.stem).roles) for path in GDL_REFERENCES}
    assert roles == {1, 2, 3}


@pytest.mark.corpus
@pytest.mark.parametrize("path", GDL_REFERENCES, ids=lambda p: p.stem)
def test_gdl_reference_games_are_reproduced(path: Path) -> None:
    report = check_file(path)
    assert report.games == len(path.read_text().splitlines())
    assert [str(m) for m in report.mismatches] == []


def in_a_child(function: Callable[[str], None], argument: str) -> None:
    """Run a check in a fresh process: hexPie's compiled rules take over 1 GiB, which must
    not stay in the test process, whose size every player it forks starts from."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(function, argument).result()


@pytest.mark.corpus
@pytest.mark.parametrize("native", sorted(ORIGINALS), ids=str)
@pytest.mark.slow
def test_original_rulesheets_reproduce_the_native_reference_games(native: str) -> None:
    in_a_child(reproduces_native_references, native)


def reproduces_native_references(native: str) -> None:
    report = check_file(CONFORMANCE / f"{native}.jsonl", rulesheet(ORIGINALS[native]))
    assert report.games == 40
    assert [str(m) for m in report.mismatches] == []


@pytest.mark.corpus
@pytest.mark.parametrize("native", sorted(ORIGINALS), ids=str)
@pytest.mark.slow
def test_original_rulesheets_agree_with_the_native_engines_on_random_playouts(
    native: str,
) -> None:
    in_a_child(agrees_on_random_playouts, native)


def agrees_on_random_playouts(native: str) -> None:
    engine, gdl = GAMES[native], rulesheet(ORIGINALS[native])
    assert engine.roles == gdl.roles
    rng = random.Random(native)
    for _ in range(5 if native == "hex-pie" else 20):
        ours, theirs = engine.initial_state(), gdl.initial_state()
        while True:
            assert engine.is_terminal(ours) == gdl.is_terminal(theirs)
            if engine.is_terminal(ours):
                break
            legal = [sorted(engine.legal_moves(ours, r)) for r in range(len(engine.roles))]
            assert legal == [sorted(gdl.legal_moves(theirs, r)) for r in range(len(gdl.roles))]
            joint = tuple(rng.choice(moves) for moves in legal)
            ours, theirs = engine.next_state(ours, joint), gdl.next_state(theirs, joint)
        assert engine.goals(ours) == gdl.goals(theirs)


@pytest.mark.corpus
def test_cli_conformance_finds_the_rulesheets_by_name() -> None:
    result = runner.invoke(app, ["conformance", *map(str, GDL_REFERENCES[:3])])
    assert result.exit_code == 0, result.output
    assert result.output.count(", 0 mismatches") == 3


def test_a_rulesheet_game_checks_moves_and_spellings() -> None:
    game = get_game(str(EXAMPLES / "tictactoe.kif"))
    state = game.initial_state()
    assert game.parse_move("(MARK  1 1)") == "(mark 1 1)"
    with pytest.raises(IllegalMoveError, match="cannot play"):
        game.next_state(state, ("noop", "(mark 1 1)"))
    state = game.next_state(state, ("(mark 2 2)", "noop"))
    assert "x" in game.render(state)


def test_an_answer_nested_deeper_than_any_move_is_no_move_and_no_crash() -> None:
    # A hostile bot's 64 KiB answer: thousands of nested lists, one recursion each to print.
    game = get_game(str(EXAMPLES / "tictactoe.kif"))
    with pytest.raises(MoveParseError, match="is not a move of this game"):
        game.parse_move("(mark " * 5000 + ")" * 5000)


def test_nested_function_terms_and_recursion() -> None:
    game = load_text(
        """
        (role walker)
        (init (at (pos 0)))
        (succ 0 1) (succ 1 2) (succ 2 3)
        (<= (legal walker (go (pos ?y))) (true (at (pos ?x))) (succ ?x ?y))
        (<= (next (at ?p)) (does walker (go ?p)))
        (<= (reach ?x ?y) (succ ?x ?y))
        (<= (reach ?x ?z) (succ ?x ?y) (reach ?y ?z))
        (<= terminal (true (at (pos ?x))) (not (reach ?x 3)) (or (distinct ?x 0) (distinct ?x 1)))
        (<= (goal walker 100) terminal)
        (<= (goal walker 0) (not terminal))
        """,
        "walk.kif",
    )
    state = game.initial_state()
    for _ in range(3):
        assert game.legal_moves(state, 0) == (game.legal_moves(state, 0)[0],)
        state = game.next_state(state, game.legal_moves(state, 0))
    assert game.is_terminal(state)
    assert game.goals(state) == (100,)
    assert game.facts(state) == ["(at (pos 3))"]


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("(role a)\n(init (p 1)\n", 2, "'(' is never closed"),
        ("(role a))\n", 1, "')' closes nothing"),
        ("(role a)\n(init (c a\x00b))\n", 2, "a control character, U+0000, in a name"),
        ("(role a)\n(init ((p) 1))\n", 2, "a list must start with a name, not (p)"),
        ("", 1, "the rulesheet is empty"),
        ("; only a comment\n", 1, "the rulesheet is empty"),
        ("(role a)\n\n(<= (legal a (m ?x)) (true (p 1)))\n", 3, "unsafe variable ?x in the head"),
        ("(role a)\n(<= (q 1) (true (p 1)) (not (r ?x)))\n", 2, "unsafe variable ?x in (not"),
        ("(role a)\n(<= (q 1) (distinct ?x 2))\n", 2, "unsafe variable ?x"),
        ("(role a)\n(<= (legal a x) (does a y))\n", 2, "legal depends on does"),
        ("(role a)\n(<= (true x) (p 1))\n", 2, "'true' cannot be the head"),
        ("(role a)\n(<= (next x y) (p 1))\n", 2, "'next' takes 1 argument"),
        ("(role a)\n(role a)\n", 2, "role a is declared twice"),
        ("(init (p 1))\n", None, "no (role ...) declared"),
        ("(role a)\n(<= (role b) (p 1))\n", 2, "role must be a fact"),
        ("(role a)\n(init " + "(f " * 70 + ")" * 71 + "\n", 2, "nested more than 64 deep"),
    ],
)
def test_an_unusable_rulesheet_is_refused_with_its_line(
    text: str, line: int | None, problem: str
) -> None:
    with pytest.raises(RulesheetError) as caught:
        load_text(text, "bad.kif")
    assert caught.value.line == line
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"bad.kif:{line}: " if line else "bad.kif: ")


def test_negation_through_recursion_is_refused_with_the_rule() -> None:
    text = (
        "(role a)\n(init s)\n(<= (legal a m) (true s))\n"
        "(<= p (true s) (not q))\n(<= q (true s) (not p))\n(<= terminal p)\n"
    )
    with pytest.raises(RulesheetError, match=r"bad.kif:[45]: negation through recursion"):
        load_text(text, "bad.kif")


def test_a_relation_negating_itself_with_other_arguments_is_stratified_once_ground() -> None:
    text = """
        (role a) (init s) (<= (legal a m) (true s)) (<= terminal (true s))
        (<= (goal a 100) (true s) (true t))
        (<= (goal ?r 0) (role ?r) (not (goal ?r 100)))
    """
    game = load_text(text, "self.kif")
    assert game.goals(game.initial_state()) == (0,)


def test_faults_of_the_rules_are_reported_with_the_state() -> None:
    text = """
        (role a) (role b) (init (cell 1 x))
        (<= (legal a go) (true (cell 1 x)))
        (<= (next (cell 1 o)) (does a go))
        (<= terminal (true (cell 1 o)))
        (<= (goal a 100) (true (cell 1 o)))
        (<= (goal a 0) (true (cell 1 o)))
    """
    game = load_text(text, "faulty.kif")
    with pytest.raises(GameFault, match=r"b has no legal move .*\(cell 1 x\)"):
        game.legal_moves(game.initial_state(), 0)


def test_pentago_gives_a_role_two_goals_and_it_is_said() -> None:
    text = """
        (role a) (init s) (<= (legal a m) (true s)) (<= (next t) (does a m))
        (<= terminal (true t))
        (<= (goal a 100) (true t)) (<= (goal a 0) (true t) (not (true s)))
    """
    game = load_text(text, "two.kif")
    end = game.next_state(game.initial_state(), ("m",))
    with pytest.raises(GameFault, match=r"a has goals 0, 100 in state \{t\}"):
        game.goals(end)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(role a)\n(init (p 1)\n", "bad.kif:2: '(' is never closed"),
        ("(role a)\n(<= (legal a (m ?x)) (true (p 1)))\n", "bad.kif:2: unsafe variable ?x"),
        ("", "bad.kif:1: the rulesheet is empty"),
        ("(role a)\n(init (c a\x00b))\n", "bad.kif:2: a control character, U+0000, in a name"),
    ],
    ids=["syntax", "unsafe", "empty", "control"],
)
def test_cli_refuses_a_bad_rulesheet_in_one_line_with_exit_2(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.kif"
    path.write_text(text)
    for command in (["rules", str(path)], ["random", str(path)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, result.output
        assert expected.replace("bad.kif", str(path)) in lines[0]


def test_random_and_rules_take_a_rulesheet() -> None:
    path = str(EXAMPLES / "three-in-a-row.kif")
    result = runner.invoke(app, ["random", path, "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].startswith("goals: red ")
    shown = runner.invoke(app, ["rules", path])
    assert "(role blue)" in shown.output
    assert json.loads(runner.invoke(app, ["games", "--json"]).output)


def test_a_board_whose_empty_cells_are_no_facts_is_drawn_whole() -> None:
    game = load_text(
        "(role a) (init (cell 1 1 q)) (init (cell 2 5 q)) (init (cell 4 2 q)) (init (cell 5 4 q))"
        " (<= (legal a noop) (true (cell 1 1 q)))",
        "sparse.kif",
    )
    rows = game.render(game.initial_state()).splitlines()
    # Row 3 and column 3 hold no piece, so no fact names them.
    assert rows[1].split() == ["1", "2", "3", "4", "5"]
    assert [row.split() for row in rows[2:7]] == [
        ["1", "q", ".", ".", ".", "."],
        ["2", ".", ".", ".", ".", "q"],
        ["3", ".", ".", ".", ".", "."],
        ["4", ".", "q", ".", ".", "."],
        ["5", ".", ".", ".", "q", "."],
    ]


def test_a_cell_that_facts_give_several_values_shows_them_all_under_whole_labels() -> None:
    # (at alpha 1 x) and (at alpha 1 y) are two facts of one cell: neither hides the other.
    game = load_text(
        "(role a) (init (at alpha 1 x)) (init (at alpha 1 y)) (init (at beta 2 z))"
        " (init (at beta 3 v)) (init (at gamma 3 w)) (<= (legal a noop) (true (at beta 2 z)))",
        "several.kif",
    )
    state = game.initial_state()
    (board,) = game.boards(state)
    assert board.rows == (
        ("alpha", ("x,y", ".", ".")),
        ("beta", (".", "z", "v")),
        ("gamma", (".", ".", "w")),
    )
    # As text, each label whole and every column under its heading.
    lines = game.render(state).splitlines()
    assert lines == [
        "at:",
        "        1   2   3",
        "alpha x,y   .   .",
        " beta   .   z   v",
        "gamma   .   .   w",
    ]


def test_the_true_bits_of_a_state_are_its_facts_indices_in_order() -> None:
    rng = random.Random(3)
    for size in (0, 1, 64, 1000, 20_000):
        state = rng.getrandbits(size) if size else 0
        assert true_bits(state) == [i for i in range(size) if state >> i & 1]
