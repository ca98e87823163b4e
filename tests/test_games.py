"""Properties every game must have, whatever its rules."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from referee.errors import IllegalMoveError, MoveParseError, UnknownGameError, UnknownRoleError
from referee.games import GAMES, NOOP, canonical_spelling, format_move, get_game
from referee.games.playout import random_steps
from tests.support.paths import REFERENCE_FILES

ALL = sorted(GAMES)


def test_registry_holds_the_five_games_with_the_rules_role_order() -> None:
    assert {game_id: get_game(game_id).roles for game_id in GAMES} == {
        "blocker-parallel": ("crosser", "blocker"),
        "ticblock": ("xcplayer", "obplayer"),
        "hex-pie": ("player1", "player2"),
        "double-tictactoe": ("xplayer", "oplayer"),
        "quad": ("x", "o"),
    }


def test_unknown_game_names_the_known_ones() -> None:
    with pytest.raises(UnknownGameError) as raised:
        get_game("chess")
    assert str(raised.value) == (
        "unknown game 'chess' (known: blocker-parallel, ticblock, hex-pie, double-tictactoe, quad;"
        " or the path of a .kif rulesheet)"
    )


@pytest.mark.parametrize(
    ("game_id", "counts"),
    [
        ("blocker-parallel", (256, 256)),
        ("ticblock", (9, 1)),
        ("hex-pie", (81, 1)),
        ("double-tictactoe", (18, 1)),
        ("quad", (90, 1)),
    ],
)
def test_move_counts_from_the_initial_state(game_id: str, counts: tuple[int, int]) -> None:
    game = get_game(game_id)
    state = game.initial_state()
    assert tuple(len(set(game.legal_moves(state, role))) for role in (0, 1)) == counts
    assert tuple(len(game.legal_moves(state, role)) for role in (0, 1)) == counts


@pytest.mark.parametrize("game_id", ALL)
def test_random_playouts_end_and_never_change_a_state(game_id: str) -> None:
    game = get_game(game_id)
    for seed in range(30):
        rng = random.Random(seed)
        before = game.initial_state()
        snapshot = (before, hash(before))
        for steps, (joint, after) in enumerate(random_steps(game, rng), start=1):
            assert steps <= game.max_steps
            for role, move in enumerate(joint):
                assert move in game.legal_moves(before, role)
            assert (before, hash(before)) == snapshot
            assert game.next_state(before, joint) == after
            before = after
            snapshot = (before, hash(before))
        assert game.is_terminal(before)
        assert all(game.legal_moves(before, role) == () for role in range(len(game.roles)))
        assert all(0 <= goal <= 100 for goal in game.goals(before))


@pytest.mark.parametrize("game_id", ALL)
def test_random_move_is_uniform_over_the_legal_moves(game_id: str) -> None:
    game = get_game(game_id)
    rng = random.Random(7)
    # A mid-game state, so that some cells are taken.
    steps = random_steps(game, random.Random(3))
    for _ in range(3):
        _, state = next(steps)
    role = max(range(len(game.roles)), key=lambda r: len(game.legal_moves(state, r)))
    legal = game.legal_moves(state, role)
    draws = 200 * len(legal)
    counts = Counter(game.random_move(state, role, rng) for _ in range(draws))
    assert set(counts) == set(legal)
    # Each move's count is Binomial(draws, 1/len(legal)): mean 200, sd about 14.
    assert all(120 < count < 280 for count in counts.values()), counts.most_common(3)


@pytest.mark.parametrize("game_id", ALL)
def test_every_move_round_trips_through_its_text(game_id: str) -> None:
    game = get_game(game_id)
    for move in game.all_moves():
        assert game.parse_move(str(move)) == move
        assert canonical_spelling(move) == move
    assert game.parse_move(str(game.example_move)) == game.example_move


@pytest.mark.parametrize(
    ("game_id", "text", "move"),
    [
        ("hex-pie", "(PLACE E 5)", "(place e 5)"),
        ("hex-pie", "  ( place   e  5 )  ", "(place e 5)"),
        ("hex-pie", "place e 5", "(place e 5)"),
        ("hex-pie", "Swap", "swap"),
        ("ticblock", "mark 2 2", "(mark 2 2)"),
        ("ticblock", "\tRESET\r\n", "reset"),
        ("quad", "Block R4 C4", "(block r4 c4)"),
        ("blocker-parallel", "(mark\t1 2 3 4)", "(mark 1 2 3 4)"),
        ("double-tictactoe", " NoOp ", "noop"),
    ],
)
def test_equivalent_spellings_parse_to_the_canonical_move(
    game_id: str, text: str, move: str
) -> None:
    assert get_game(game_id).parse_move(text) == move


@pytest.mark.parametrize(
    ("game_id", "text"),
    [
        ("hex-pie", ""),
        ("hex-pie", "(place j 5)"),
        ("hex-pie", "(place e 10)"),
        ("hex-pie", "(place e 5"),
        ("hex-pie", "((place e 5))"),
        ("hex-pie", "(place (e) 5)"),
        ("hex-pie", "(noop)"),
        ("hex-pie", "place e5"),
        ("ticblock", "(mark 1 2 3)"),
        ("ticblock", "(mark 0 1)"),
        ("quad", "(mark 4 4)"),
        ("quad", "(mark r1 c1)"),
        ("blocker-parallel", "noop"),
        ("double-tictactoe", "(mark 1 1)"),
    ],
)
def test_other_text_is_rejected_naming_game_and_text(game_id: str, text: str) -> None:
    with pytest.raises(MoveParseError) as raised:
        get_game(game_id).parse_move(text)
    assert str(raised.value) == f"{game_id}: {text!r} is not a move of this game"


@pytest.mark.parametrize("game_id", ALL)
def test_a_wrong_or_missing_move_is_illegal_and_leaves_no_trace(game_id: str) -> None:
    game = get_game(game_id)
    state = game.initial_state()
    legal = [game.legal_moves(state, role) for role in (0, 1)]
    good = (legal[0][0], legal[1][0])
    with pytest.raises(IllegalMoveError, match="a joint move has 2 moves, got 1"):
        game.next_state(state, good[:1])
    for role in (0, 1):
        # blocker-parallel allows every move at the start: then play a move of no game.
        outsider = next((m for m in game.all_moves() if m not in legal[role]), NOOP)
        joint = list(good)
        joint[role] = outsider
        with pytest.raises(IllegalMoveError, match=f"{game.roles[role]} cannot play"):
            game.next_state(state, tuple(joint))
    assert state == game.initial_state()


@pytest.mark.parametrize("game_id", ALL)
def test_no_move_is_played_or_drawn_after_the_end(game_id: str) -> None:
    game = get_game(game_id)
    *_, (joint, final) = random_steps(game, random.Random(1))
    with pytest.raises(IllegalMoveError, match="the game is over"):
        game.next_state(final, joint)
    with pytest.raises(IllegalMoveError, match="the game is over"):
        game.random_move(final, 0, random.Random(1))


def test_role_index_and_unknown_role() -> None:
    game = get_game("quad")
    assert game.role_index("o") == 1
    with pytest.raises(UnknownRoleError, match="quad has no role 'y'"):
        game.role_index("y")


def test_format_move_builds_canonical_text() -> None:
    assert format_move("noop") == NOOP
    assert format_move("place", "e", 5) == "(place e 5)"


@pytest.mark.parametrize(
    ("game_id", "cells"),
    [
        ("blocker-parallel", 32),
        ("ticblock", 9 + 16),  # both phases' boards
        ("hex-pie", 81),
        ("double-tictactoe", 18),
        ("quad", 45),
    ],
)
def test_render_draws_every_blank_cell_then_fewer_as_play_goes_on(game_id: str, cells: int) -> None:
    game = get_game(game_id)
    assert game.render(game.initial_state()).count(".") == cells
    (_, state), *_ = random_steps(game, random.Random(2))
    assert game.render(state).count(".") < cells


@pytest.mark.parametrize("game_id", ALL)
def test_the_text_board_keeps_its_shape_from_the_first_state_to_the_last(game_id: str) -> None:
    # --show prints one under the other: a board that grew as it filled would jump about.
    game = get_game(game_id)
    for seed in range(5):
        states = [
            game.initial_state(),
            *(state for _, state in random_steps(game, random.Random(seed))),
        ]
        shapes = Counter(tuple(map(len, game.render(state).splitlines())) for state in states)
        assert len(shapes) == 1, (seed, shapes)


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda path: path.stem)
def test_no_reference_game_is_longer_than_the_bound(path) -> None:
    for line in path.read_text().splitlines():
        record = json.loads(line)
        assert len(record["steps"]) <= get_game(record["game"]).max_steps
