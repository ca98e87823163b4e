"""hex-pie: the six neighbours, the edges each colour links, and the swap."""

from __future__ import annotations

import pytest

from referee.errors import IllegalMoveError
from referee.games import get_game, hex_pie
from tests.support.boards import alternate, play

game = get_game("hex-pie")


def places(*cells: str) -> list[str]:
    return [f"(place {cell[0]} {cell[1:]})" for cell in cells]


# Eight blue stones, none in column 1 and none on the red chains tested here.
BLUE_SCATTER = places("a7", "b4", "c9", "d8", "f8", "g6", "h6", "i4")


def test_swap_only_at_step_2() -> None:
    state = game.initial_state()
    assert "swap" not in game.legal_moves(state, 0)
    state = play(game, places("e5"))
    assert "swap" in game.legal_moves(state, 1)
    assert len(game.legal_moves(state, 1)) == 81
    assert "swap" not in game.legal_moves(play(game, ["swap"], state), 0)
    later = play(game, places("a1", "e6"), state)
    assert "swap" not in game.legal_moves(later, 1)
    with pytest.raises(IllegalMoveError, match="swap is only allowed at step 2"):
        play(game, ["swap"], later)


def test_swap_exchanges_colours_not_stones() -> None:
    # player1 opens on a1 (red); player2 swaps; from then on player1 plays blue.
    player1 = places("a1", *[f"e{c}" for c in range(1, 10)])
    player2 = ["swap", *places(*[f"c{c}" for c in range(1, 9)])]
    state = play(game, alternate(player1, player2)[:-1])
    assert not game.is_terminal(state)
    assert "red X (player2)" in game.render(state)
    state = play(game, player1[-1:], state)
    assert game.is_terminal(state)
    assert game.goals(state) == (100, 0)


def test_without_swap_player2_plays_blue() -> None:
    player1 = places(*[f"a{c}" for c in range(1, 10)])
    player2 = places(*[f"e{c}" for c in range(1, 10)])
    state = play(game, alternate(player1, player2))
    assert game.is_terminal(state)
    assert game.goals(state) == (0, 100)


def test_a_stone_next_to_an_empty_edge_cell_does_not_link_that_edge() -> None:
    player1 = places(*[f"a{c}" for c in range(1, 10)])
    player2 = places(*[f"e{c}" for c in range(1, 9)])
    state = play(game, alternate(player1, player2))
    assert not game.is_terminal(state)  # blue holds e1..e8; e9 is empty


@pytest.mark.parametrize(
    ("chain", "links"),
    [
        ([f"{r}5" for r in "abcdefghi"], True),  # (r+1, c): straight down
        ([f"{r}{10 - i}" for i, r in enumerate("abcdefghi", 1)], True),  # (r+1, c-1) steps
        ([f"{r}{i}" for i, r in enumerate("abcdefghi", 1)], False),  # (r+1, c+1) does not touch
        (["a2", "b1", "c1", "d1", "e1", "f1", "g1", "h1", "i1"], True),  # (r+1, c-1) then straight
        (["a1", "b2", "c2", "d2", "e2", "f2", "g2", "h2", "i2"], False),  # a1 and b2 do not touch
    ],
)
def test_red_links_rows_a_and_i_through_the_six_neighbours(chain: list[str], links: bool) -> None:
    state = play(game, alternate(places(*chain), BLUE_SCATTER))
    assert game.is_terminal(state) == links
    if links:
        assert game.goals(state) == (100, 0)


def _mask(*cells: str) -> int:
    return sum(1 << (9 * "abcdefghi".index(cell[0]) + int(cell[1:]) - 1) for cell in cells)


@pytest.mark.parametrize(
    ("cell", "touching"),
    [
        ("e5", {"e4", "e6", "d5", "f5", "d6", "f4"}),  # not d4 nor f6
        ("a1", {"a2", "b1"}),
        ("a9", {"a8", "b9", "b8"}),
        ("i1", {"i2", "h1", "h2"}),
        ("i9", {"i8", "h9"}),
        ("e1", {"d1", "f1", "e2", "d2"}),
        ("e9", {"d9", "f9", "e8", "f8"}),
    ],
)
def test_the_six_neighbours_of_a_cell(cell: str, touching: set[str]) -> None:
    assert hex_pie.neighbours(_mask(cell)) == _mask(*touching)
