"""Opening books: read and checked legal move by move when a config is read, a line played
in each round with both seatings alike, kept in the transcript and verified against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import ConfigError
from referee.games import GAMES
from referee.records.verify import Outcome, verify_file
from referee.tournaments.books import Order, built_in_book, read_book
from referee.tournaments.config import load_config
from tests.support.tournaments import run, seeded, transcripts, write_config

runner = CliRunner()
TICBLOCK = GAMES["ticblock"]
# Two openings of ticblock, the second in another case and spacing.
BOOK = (
    "# two openings\n(mark 1 1) noop; noop (mark 2 2)\n\n(MARK 2 2) noop ;NOOP ( mark 1 1 )  # x\n"
)
FIRST = [["(mark 1 1)", "noop"], ["noop", "(mark 2 2)"]]
SECOND = [["(mark 2 2)", "noop"], ["noop", "(mark 1 1)"]]


def book(tmp_path: Path, text: str = BOOK) -> Path:
    path = tmp_path / "book.txt"
    path.write_text(text)
    return path


def test_every_built_in_game_ships_a_book_of_legal_openings() -> None:
    for game in GAMES.values():
        found = built_in_book(game, Order.IN_ORDER, 0)
        assert found is not None, game.id
        assert len(found.lines) >= 8 and found.source == f"built-in:{game.id}.txt"
        assert len({json.dumps(line.steps) for line in found.lines}) == len(found.lines)


def test_a_line_is_read_as_the_canonical_moves_of_its_steps(tmp_path: Path) -> None:
    found = read_book(book(tmp_path), "book.txt", TICBLOCK, Order.IN_ORDER, 0)
    assert [(line.line, line.steps) for line in found.lines] == [(2, FIRST), (4, SECOND)]
    # Past its last line, the book begins again.
    assert [found.line_for(n).line for n in range(3)] == [2, 4, 2]


def test_shuffled_is_an_order_of_all_the_lines_set_by_the_seed(tmp_path: Path) -> None:
    moves = ["(mark 1 1)", "(mark 1 2)", "(mark 1 3)", "(mark 2 1)", "(mark 2 2)", "(mark 3 3)"]
    path = book(tmp_path, "".join(f"{move} noop\n" for move in moves))

    def order(kind: Order, seed: int) -> list[int]:
        return [line.line for line in read_book(path, "b", TICBLOCK, kind, seed).lines]

    assert order(Order.IN_ORDER, 7) == [1, 2, 3, 4, 5, 6]
    shuffled = order(Order.SHUFFLED, 7)
    assert sorted(shuffled) == [1, 2, 3, 4, 5, 6] and shuffled != [1, 2, 3, 4, 5, 6]
    assert order(Order.SHUFFLED, 7) == shuffled
    assert {tuple(order(Order.SHUFFLED, seed)) for seed in range(5)} != {tuple(shuffled)}


BAD_BOOKS = {
    "an illegal move": (
        "(mark 1 1) noop\n(mark 1 2) noop\n(mark 3 3) noop; noop (mark 3 3)\n",
        "b.txt:3: step 2: (mark 3 3) is not a legal move of obplayer there (legal: (mark 1 1),",
    ),
    "a move of no game": ("(jump 1) noop\n", "b.txt:1: step 1: (jump 1) is not a legal move"),
    "a move too few": (
        "\n(mark 1 1)\n",
        "b.txt:2: step 1: 1 moves for ticblock's 2 roles (xcplayer, obplayer, in that order;",
    ),
    "an empty step": ("(mark 1 1) noop;\n", "b.txt:1: step 2: 0 moves for ticblock's 2 roles"),
    "no openings": ("# only a comment\n\n", "b.txt: no openings in the file"),
}


@pytest.mark.parametrize("kind", list(BAD_BOOKS))
def test_a_bad_book_is_refused_at_its_line_and_step(tmp_path: Path, kind: str) -> None:
    text, message = BAD_BOOKS[kind]
    with pytest.raises(ConfigError) as error:
        read_book(book(tmp_path, text), "b.txt", TICBLOCK, Order.IN_ORDER, 0)
    assert str(error.value).startswith(message), error.value


def test_an_opening_past_the_end_of_the_game_is_refused(tmp_path: Path) -> None:
    # Every role's first legal move, to the end of a match, and one step more.
    game = GAMES["double-tictactoe"]
    state, steps = game.initial_state(), []
    while not game.is_terminal(state):
        joint = tuple(game.legal_moves(state, role)[0] for role in range(2))
        steps.append(" ".join(joint))
        state = game.next_state(state, joint)
    path = book(tmp_path, "; ".join([*steps, "noop noop"]) + "\n")
    with pytest.raises(ConfigError) as error:
        read_book(path, "b.txt", game, Order.IN_ORDER, 0)
    over = f"b.txt:1: step {len(steps) + 1}: the game is over after step {len(steps)}"
    assert str(error.value) == over


def test_an_illegal_move_in_a_book_is_one_line_naming_the_config_and_the_book(
    tmp_path: Path,
) -> None:
    book(tmp_path, BAD_BOOKS["an illegal move"][0])
    config = write_config(
        tmp_path, {"a": "random", "b": "random"}, "[ticblock]", "openings: {file: book.txt}\n"
    )
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"referee: error: {config}:6: openings.file: book.txt:3: step 2: (mark 3 3) is not a"
        " legal move of obplayer there"
    ), line
    assert not (tmp_path / "results").exists()


@pytest.mark.usefixtures("every_transcript_verifies")
def test_each_round_plays_the_next_line_with_both_seatings_alike(tmp_path: Path) -> None:
    book(tmp_path)
    games = "\n  - id: ticblock\n    openings: {file: book.txt}\n  - double-tictactoe"
    players = {"a": seeded(1), "b": seeded(2)}
    config = load_config(write_config(tmp_path, players, games, "rounds: 3\nopenings: 2\n"))
    run(config)
    found = transcripts(config.output)
    assert len(found) == 12
    for transcript in found.values():
        round_ = int(transcript.match_id.split("-r")[1][0])
        if transcript.game == "ticblock":
            assert transcript.book is not None and transcript.opening == 2
            expected = FIRST if round_ % 2 else SECOND
            assert transcript.book.steps == expected
            opening = [list(step.moves.values()) for step in transcript.steps[:2]]
            assert opening == expected, transcript.match_id
        else:
            # The other game keeps the tournament's own openings: two steps at random.
            assert transcript.book is None and transcript.opening == 2
        # Nobody was asked during the opening.
        assert all(step.times_ms == {} for step in transcript.steps[:2])


def test_a_changed_book_stops_a_resumed_tournament_until_restarted(tmp_path: Path) -> None:
    path = book(tmp_path)
    config = write_config(
        tmp_path, {"a": seeded(1), "b": seeded(2)}, "[ticblock]", "openings: {file: book.txt}\n"
    )
    run(load_config(config))
    path.write_text(BOOK.replace("noop (mark 2 2)", "noop (mark 3 3)"))
    with pytest.raises(ConfigError) as error:
        run(load_config(config))
    assert "played with another opening at book.txt:2 (the book has changed)" in str(error.value)
    assert "run with --restart" in str(error.value)
    run(load_config(config), restart=True)
    assert all(
        t.book is not None and t.book.steps[1] == ["noop", "(mark 3 3)"]
        for t in transcripts(load_config(config).output).values()
    )


def test_a_transcript_whose_opening_is_not_its_books_line_fails_at_that_step(
    tmp_path: Path,
) -> None:
    book(tmp_path)
    config = write_config(
        tmp_path, {"a": seeded(1), "b": seeded(2)}, "[ticblock]", "openings: {file: book.txt}\n"
    )
    run(load_config(config))
    path = sorted((tmp_path / "results" / "cup").glob("*.json"))[0]
    data = json.loads(path.read_text())
    del data["signature"]
    data["book"]["steps"][1] = ["noop", "(mark 3 3)"]
    path.write_text(json.dumps(data))
    verdict = verify_file(path)
    assert verdict.outcome is Outcome.FAILED
    assert verdict.problem == f"{path}: " + (
        "step 2: obplayer: the opening's move at line 2 of the book book.txt is (mark 3 3),"
        " but the transcript has (mark 2 2)"
    )


def test_a_tournament_with_a_book_resumes_and_a_swiss_plays_its_rounds(tmp_path: Path) -> None:
    book(tmp_path)
    path = write_config(
        tmp_path, {"a": seeded(1), "b": seeded(2)}, "[ticblock]", "openings: {file: book.txt}\n"
    )
    run(load_config(path))
    # Run again: every match is found played, with its opening.
    assert run(load_config(path)).played == []
    swiss = path.read_text().replace("name: cup", "name: swiss\nformat: swiss\nrounds: 2")
    path.write_text(swiss + "  - name: c\n    command: " + seeded(3) + "\n")
    run(load_config(path))
    found = transcripts(load_config(path).output)
    assert len(found) == 2 * 1 * 2
    assert {t.book.line for t in found.values() if t.book} == {2, 4}


def test_a_step_whose_parentheses_do_not_balance_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        read_book(book(tmp_path, "(mark 2 2 noop\n"), "b.txt", TICBLOCK, Order.IN_ORDER, 0)
    assert str(error.value) == "b.txt:1: step 1: its parentheses do not balance: (mark 2 2 noop"
