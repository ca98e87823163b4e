"""Any GDL game behind the `Game` interface: a reasoner, with the faults of the rules.

A rulesheet can be wrong as written; where its rules leave a role without a legal move in a
state that is not terminal, or give a role no goal or several in a terminal state, the
game raises GameFault with the state, rather than guess what the author meant.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from referee.errors import GameFault, MoveParseError, RulesheetError
from referee.games.base import MOVE_LIMIT, Game, Goals, Move, with_outer_parentheses
from referee.games.boards.picture import Board
from referee.games.gdl.compile import load
from referee.games.gdl.ground import TooBig, ground, probe
from referee.games.gdl.limits import DEFAULT_LIMITS, StateLimits
from referee.games.gdl.reasoner import Reasoner, State
from referee.games.gdl.remote import RemotePerState
from referee.games.gdl.render import (
    Axes,
    board_extent,
    cartesian_relations,
    describe_facts,
    fact_boards,
    render_facts,
)
from referee.games.gdl.syntax import MAX_DEPTH, format_term, one_line, parse_terms

# GDL says nothing of how long a game lasts; what bounds the time a match may take.
GDL_MAX_STEPS = 500
# The deepest a move may nest: a GGP PLAY carries it two lists deep, and no KIF deeper than
# MAX_DEPTH is read, by the referee or by `serve`.
MOVE_DEPTH = MAX_DEPTH - 2
# States whose legal moves are kept: a match needs one, a search player thousands.
_MEMO = 1 << 14

_View = tuple[bool, tuple[tuple[int, ...], ...]]


class GdlGame(Game[State]):
    """A game defined by a rulesheet: its id is the file it came from."""

    description = "a game defined by a GDL rulesheet"
    marks = ()
    legend = ""
    max_steps = GDL_MAX_STEPS

    def __init__(self, reasoner: Reasoner, path: str, text: str) -> None:
        self.reasoner = reasoner
        self.slow_states = isinstance(reasoner, RemotePerState)
        # What computing one state may take, for a game played one state at a time.
        self.state_limits = reasoner.limits if isinstance(reasoner, RemotePerState) else None
        self.path = path
        self.rules = text
        self.sha256 = rulesheet_sha256(text)
        # One word, as a game id must be on a protocol line and in a match id.
        self.id = "_".join(Path(path).stem.split()) or "rulesheet"
        self.roles = reasoner.roles
        self.one_line = one_line(text)
        # Read once from the rules: which relations' cells are drawn as (column, row).
        self.cartesian = cartesian_relations(text)
        # The boards' axes, and how many known facts they were read from.
        self._extent: tuple[int, Axes] | None = None
        # A plain dict, emptied when full: the garbage collector walks each of an
        # lru_cache's linked entries, and with thousands a full collection took 40 ms,
        # twice what a step of the referee may take.
        self._views: dict[State, _View] = {}
        super().__init__()
        self.example_move = min(self._moves.values(), default=Move("noop"))
        # Per role, the moves met that no player could send, by index, and how many of its
        # moves were looked at: a legal move among them is a fault of the rules.
        self._unplayable: list[dict[int, str]] = [{} for _ in self.roles]
        self._looked_at = [0 for _ in self.roles]
        # A compiled game has all its moves now: when every one can be sent, no state needs
        # looking at, which the fastest games' steps could not afford.
        self._all_playable = reasoner.complete and not any(
            _unplayable(move) for move in reasoner.known_moves()
        )
        self.simultaneous = not self.slow_states and self._chosen_at_once()
        self.imperfect = reasoner.imperfect

    def give_up_at(self, moment: float | None) -> None:
        """Questions of the rules still unanswered at `moment` (time.monotonic()) raise
        GameFault, as a search player that must answer by then wants; None: no such moment.
        Only a game computed one state at a time in a child can be waiting that long."""
        self.reasoner.give_up_at(moment)

    def close(self) -> None:
        self.reasoner.close()

    def asked(self, given_up: threading.Event) -> contextlib.AbstractContextManager[None]:
        return self.reasoner.asked(given_up)

    def interrupt(self) -> None:
        self.reasoner.interrupt()

    def all_moves(self) -> Iterable[Move]:
        """Every move of the game; for a per-state reasoner, those met so far."""
        return {Move(move) for move in self.reasoner.known_moves()}

    def initial_state(self) -> State:
        return self.reasoner.initial

    def legal_moves(self, state: State, role: int) -> tuple[Move, ...]:
        return tuple(Move(self.reasoner.move(role, i)) for i in self.legal_indices(state)[role])

    def _chosen_at_once(self) -> bool:
        """Whether more than one role has a choice in the first state: what tells a game of
        simultaneous moves from one of turns without playing it (a game that reaches its
        simultaneous steps later is told by `ponder: true`)."""
        try:
            legal = self.legal_indices(self.initial_state())
        except GameFault:
            return False
        return sum(1 for moves in legal if len(moves) > 1) > 1

    def legal_indices(self, state: State) -> tuple[tuple[int, ...], ...]:
        """Each role's legal moves as indices into the reasoner's moves; GameFault for none."""
        return self._view(state)[1]

    def _view(self, state: State) -> _View:
        view = self._views.get(state)
        if view is None:
            if len(self._views) >= _MEMO:
                self._views.clear()
            view = self._views[state] = self._compute_view(state)
        return view

    def _compute_view(self, state: State) -> _View:
        if self.reasoner.terminal(state):
            return True, tuple(() for _ in self.roles)
        found = self.reasoner.legal(state)
        if not all(found):
            empty = [self.roles[r] for r, row in enumerate(found) if not row]
            raise GameFault(
                f"{self.id}: fault of the rules: {', '.join(empty)} has no legal move in a "
                f"state that is not terminal: {self.describe(state)}"
            )
        for role, row in enumerate(() if self._all_playable else found):
            unplayable = self._unplayable_moves(role, row)
            if unplayable:
                raise GameFault(
                    f"{self.id}: fault of the rules: {self.roles[role]} has a legal move that "
                    f"no player can send, {unplayable}, in {self.describe(state)}"
                )
        return False, found

    def _unplayable_moves(self, role: int, legal: Sequence[int]) -> str:
        """Why one of a role's legal moves cannot be sent by a player, or "" when all can.
        Each move is looked at once, when the reasoner first has it."""
        seen = self._looked_at[role]
        if legal and max(legal) >= seen:
            for index in range(seen, max(legal) + 1):
                why = _unplayable(self.reasoner.move(role, index))
                if why:
                    self._unplayable[role][index] = why
            self._looked_at[role] = max(legal) + 1
        bad = self._unplayable[role]
        return next((bad[index] for index in legal if index in bad), "") if bad else ""

    def _next_state(self, state: State, joint: Sequence[Move]) -> State:
        return self.reasoner.next(state, self._indices(state, joint))

    def percepts(self, state: State, joint: Sequence[Move]) -> tuple[tuple[str, ...], ...]:
        if len(joint) != len(self.roles) or self.is_terminal(state):
            self.next_state(state, joint)  # its error
        return self.reasoner.sees(state, self._indices(state, joint))

    def _indices(self, state: State, joint: Sequence[Move]) -> list[int]:
        """A joint move's indices into the reasoner's moves; IllegalMoveError for a move
        that is not legal in the state."""
        legal = self.legal_indices(state)
        indices = []
        for role, move in enumerate(joint):
            index = self.reasoner.move_index(role, move)
            if index is None or index not in legal[role]:
                raise self.illegal(role, move, "not a legal move in this state")
            indices.append(index)
        return indices

    def is_terminal(self, state: State) -> bool:
        return self._view(state)[0]

    def goals(self, state: State) -> Goals:
        found = self.reasoner.goals(state)
        wrong = [(self.roles[r], values) for r, values in enumerate(found) if len(values) != 1]
        if wrong:
            said = "; ".join(
                f"{role} has {'no goal' if not values else 'goals ' + ', '.join(map(str, values))}"
                for role, values in wrong
            )
            raise GameFault(f"{self.id}: fault of the rules: {said} in {self.describe(state)}")
        return tuple(values[0] for values in found)

    def parse_move(self, text: str) -> Move:
        canonical = _canonical(text)
        move = None if canonical is None else self._moves.get(canonical)
        if move is not None:
            return move
        # A per-state reasoner has not met every move: any one term may be one, and
        # next_state judges it.
        if canonical is None or self.reasoner.complete:
            raise MoveParseError(f"{self.id}: {text!r} is not a move of this game")
        return Move(canonical)

    def facts(self, state: State) -> list[str]:
        """The facts true in a state, sorted."""
        return self.reasoner.fact_texts(state)

    def describe(self, state: State) -> str:
        """A state on one line: its facts."""
        return describe_facts(self.facts(state))

    def render(self, state: State) -> str:
        return render_facts(self.facts(state), self.cartesian, self._board_extent(), self.roles)

    def boards(self, state: State) -> list[Board]:
        facts = self.facts(state)
        return fact_boards(facts, self.cartesian, self.roles, self._board_extent())[0]

    def other_facts(self, state: State) -> list[str]:
        return fact_boards(self.facts(state), self.cartesian, self.roles, self._board_extent())[1]

    def _board_extent(self) -> Axes:
        """The boards' axes from the facts known so far, read again only when more are
        known (a per-state game learns its facts as it meets states)."""
        known = self.reasoner.known_facts()
        if self._extent is None or self._extent[0] != len(known):
            self._extent = (len(known), board_extent(known))
        return self._extent[1]


def _unplayable(move: str) -> str:
    """Why a move cannot be sent on a line of the protocol or in a GGP message, or ""."""
    if len(move.encode()) > MOVE_LIMIT:
        return f"{move[:40]}... of {len(move.encode()):,} bytes (a line holds {MOVE_LIMIT:,})"
    if move.count("(") > MOVE_DEPTH:
        depth = deepest = 0
        for char in move:
            if char == "(":
                depth += 1
                deepest = max(deepest, depth)
            elif char == ")":
                depth -= 1
        if deepest > MOVE_DEPTH:
            return f"{move[:40]}... nested {deepest} deep (at most {MOVE_DEPTH})"
    return ""


def _canonical(text: str) -> str | None:
    """The canonical text of a move, or None for text that is not one term."""
    try:
        terms = parse_terms(with_outer_parentheses(text), "move")
    except RulesheetError:
        return None
    return format_term(terms[0][0]) if len(terms) == 1 else None


def rulesheet_sha256(text: str) -> str:
    """The SHA-256 a transcript records of a rulesheet: of its text, in UTF-8."""
    return hashlib.sha256(text.encode()).hexdigest()


# Grounding takes up to seconds: a tournament, a replay and a player load each game once.
@lru_cache(maxsize=8)
def load_text(text: str, path: str, limits: StateLimits = DEFAULT_LIMITS) -> GdlGame:
    """The game a rulesheet's text defines; RulesheetError naming `path` if it cannot be used.

    The rules are compiled whole when they ground within the budget for that, and else
    evaluated one state at a time, once the first state is shown to ground: in a child
    process, each state within `limits`.
    """
    try:
        reasoner = load(ground(text, path))
    except TooBig:
        probe(text, path)
        try:
            return GdlGame(RemotePerState(text, path, limits), path, text)
        except GameFault as fault:
            raise RulesheetError(path, None, f"its first state cannot be used: {fault}") from None
    if reasoner.bad_goals:
        role, value = reasoner.bad_goals[0]
        raise RulesheetError(path, None, f"goal value {value} of {role} is not a number 0..100")
    return GdlGame(reasoner, path, text)


def load_rulesheet(path: str | Path, limits: StateLimits = DEFAULT_LIMITS) -> GdlGame:
    """The game of a `.kif` file; RulesheetError if it cannot be read or used."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise RulesheetError(str(path), None, f"cannot read it: {error.strerror}") from None
    return load_text(text, str(path), limits)
