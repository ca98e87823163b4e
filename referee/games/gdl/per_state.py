"""The per-state reasoner: each state grounded on its own, as a program of its facts.

Some games' whole ground program is too big to build: chess's rules have millions of
instances over all the states a board can be in. One state has few, and the magic-set
rewriting (`magic.py`) makes its grounding derive only what the queries ask for, so a chess
state grounds in tens of milliseconds. The price is that every new state is a grounding,
hundreds of times slower than the compiled reasoner's step; it is for the games that one
cannot load.

Each state's grounding keeps the moves external, so the next state after any joint move is
one solve away. Facts and moves get indices as they are first met, which keeps states the
`int` bit sets that the compiled reasoner passes.

The rules must have exactly one model in each state, as stratified rules do; one that has
none or several is the fault of the rules, reported with the state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import clingo

from referee.errors import GameFault
from referee.games.gdl.asp import Names, game_program
from referee.games.gdl.check import Rule, defines_percepts, negation_cycle
from referee.games.gdl.magic import magic_rules
from referee.games.gdl.reasoner import QuestionControls, State, StateView, true_bits
from referee.games.gdl.render import describe_facts
from referee.games.gdl.syntax import format_term, name_of

_START = (("role", 1), ("init", 1))
_QUERIES = (("legal", 2), ("next", 1), ("goal", 2), ("terminal", 0))
_PERCEPTS = (("sees", 2),)
_MOVES = "#external does(R, M) : legal(R, M).\n"
_Step = tuple[tuple[int, tuple[int, ...]], int, tuple[tuple[str, ...], ...]]
# Groundings kept: a match needs the current state's, a search player's tree a few more.
_KEPT = 16


@dataclass(frozen=True)
class _View(StateView):
    """What the rules say of a state, and its grounding, from which its next states come."""

    control: clingo.Control


class PerState(QuestionControls):
    """The queries of a game's rules, each state grounded when it is first asked about."""

    complete = False
    bad_goals: tuple[tuple[str, str], ...] = ()

    def __init__(
        self,
        rules: Sequence[Rule],
        where: str,
        facts: Sequence[str] = (),
        moves: Sequence[Sequence[str]] = (),
    ) -> None:
        """`facts` and `moves` (clingo's text of each symbol) take the first indices, in
        order: a reasoner started again after one that was stopped keeps its states."""
        self._rules = rules
        self._where = where
        self._names = Names()
        self.imperfect = defines_percepts(rules)
        self._program = self._text(_QUERIES + (_PERCEPTS if self.imperfect else ())) + _MOVES
        # The last step solved, which both its next state and its percepts come from.
        self._step: _Step | None = None
        # In the order written: the role facts' order is the game's role order.
        self.roles = tuple(format_term(r.head[1]) for r in rules if name_of(r.head) == "role")
        self._role_symbol: list[clingo.Symbol] = []
        self._facts: list[str] = []
        self._fact_asp: list[str] = []
        self._fact_symbols: list[clingo.Symbol] = []
        self._bit: dict[clingo.Symbol, int] = {}
        self._moves: list[list[str]] = [[] for _ in self.roles]
        self._move_symbols: list[list[clingo.Symbol]] = [[] for _ in self.roles]
        self._move_at: list[dict[clingo.Symbol, int]] = [{} for _ in self.roles]
        self._move_by_text: list[dict[str, int]] = [{} for _ in self.roles]
        self._views: OrderedDict[State, _View] = OrderedDict()
        self._state(clingo.parse_term(fact) for fact in facts)
        for role, row in enumerate(moves):
            for move in row:
                self._move(role, clingo.parse_term(move))
        symbols = self._solve(self._ground(self._text(_START)), "the start")
        by_text = {
            format_term(self._names.term(s.arguments[0])): s.arguments[0]
            for s in symbols
            if s.name == "role"
        }
        self._role_symbol = [by_text[role] for role in self.roles]
        self.initial = self._state(s.arguments[0] for s in symbols if s.name == "init")

    def legal(self, state: State, /) -> tuple[tuple[int, ...], ...]:
        return self._view(state).legal

    def terminal(self, state: State, /) -> bool:
        return self._view(state).terminal

    def goals(self, state: State, /) -> tuple[tuple[int, ...], ...]:
        return self._view(state).goals

    def next(self, state: State, moves: Sequence[int], /) -> State:
        return self._solve_step(state, moves)[0]

    def sees(self, state: State, moves: Sequence[int], /) -> tuple[tuple[str, ...], ...]:
        return self._solve_step(state, moves)[1]

    def _solve_step(
        self, state: State, moves: Sequence[int]
    ) -> tuple[State, tuple[tuple[str, ...], ...]]:
        key = (state, tuple(moves))
        if self._step is not None and self._step[0] == key:
            return self._step[1], self._step[2]
        control = self._view(state).control
        does = [
            clingo.Function("does", [self._role_symbol[role], self._move_symbols[role][move]])
            for role, move in enumerate(moves)
        ]
        for atom in does:
            control.assign_external(atom, True)
        try:
            symbols = self._solve(control, self.describe(state))
        finally:
            for atom in does:
                control.assign_external(atom, False)
        following = self._state(s.arguments[0] for s in symbols if s.name == "next")
        seen: list[list[str]] = [[] for _ in self.roles]
        roles = {symbol: r for r, symbol in enumerate(self._role_symbol)}
        for symbol in symbols:
            if symbol.name == "sees" and symbol.arguments[0] in roles:
                text = format_term(self._names.term(symbol.arguments[1]))
                seen[roles[symbol.arguments[0]]].append(text)
        percepts = tuple(tuple(sorted(set(row))) for row in seen)
        self._step = (key, following, percepts)
        return following, percepts

    def move(self, role: int, index: int) -> str:
        return self._moves[role][index]

    def move_index(self, role: int, text: str) -> int | None:
        return self._move_by_text[role].get(text)

    def known_moves(self) -> Iterable[str]:
        return {move for row in self._moves for move in row}

    def facts_from(self, first: int) -> list[tuple[str, str]]:
        """The facts met from index `first` on: each one's GDL text and clingo's."""
        symbols = self._fact_symbols
        return [(self._facts[i], str(symbols[i])) for i in range(first, len(self._facts))]

    def moves_from(self, role: int, first: int) -> list[tuple[str, str]]:
        """A role's moves met from index `first` on: each one's GDL text and clingo's."""
        row = self._moves[role]
        return [(row[i], str(self._move_symbols[role][i])) for i in range(first, len(row))]

    def known_facts(self) -> Sequence[str]:
        return self._facts

    def fact_texts(self, state: State) -> list[str]:
        return sorted(self._facts[i] for i in true_bits(state))

    def describe(self, state: State) -> str:
        return describe_facts(self.fact_texts(state))

    def _text(self, queries: Sequence[tuple[str, int]]) -> str:
        """The rules rewritten for the queries, as clingo text that shows only their answers."""
        shown = "".join(f"#show {name}/{arity}.\n" for name, arity in queries)
        return game_program(magic_rules(self._rules, queries), self._names) + shown

    def _view(self, state: State) -> _View:
        view = self._views.get(state)
        if view is not None:
            self._views.move_to_end(state)
            return view
        facts = "".join(self._fact_asp[i] for i in true_bits(state))
        control = self._ground(self._program + facts)
        symbols = self._solve(control, self.describe(state))
        legal: list[list[tuple[str, int]]] = [[] for _ in self.roles]
        goals: list[list[int]] = [[] for _ in self.roles]
        terminal = False
        roles = {symbol: r for r, symbol in enumerate(self._role_symbol)}
        for symbol in symbols:
            if symbol.name == "terminal":
                terminal = True
            elif symbol.name == "legal" and symbol.arguments[0] in roles:
                role = roles[symbol.arguments[0]]
                index = self._move(role, symbol.arguments[1])
                legal[role].append((self._moves[role][index], index))
            elif symbol.name == "goal" and symbol.arguments[0] in roles:
                goals[roles[symbol.arguments[0]]].append(self._goal(symbol))
        view = _View(
            tuple(tuple(i for _text, i in sorted(row)) for row in legal),
            terminal,
            tuple(tuple(sorted(row)) for row in goals),
            control,
        )
        self._views[state] = view
        if len(self._views) > _KEPT:
            self._views.popitem(last=False)
        return view

    def _ground(self, program: str) -> clingo.Control:
        control = clingo.Control(["--warn=none", "--models=2"])
        control.add("base", [], program)
        control.ground([("base", [])])
        return control

    def _solve(self, control: clingo.Control, where: str) -> list[clingo.Symbol]:
        models: list[list[clingo.Symbol]] = []
        with control.solve(yield_=True) as handle:
            for model in handle:
                models.append(model.symbols(shown=True))
        if len(models) != 1:
            problem = negation_cycle(self._rules, self._where).problem
            raise GameFault(
                f"{self._where}: fault of the rules: {problem}: "
                f"{'no' if not models else 'more than one'} meaning in {where}"
            )
        return models[0]

    def _state(self, facts: Iterable[clingo.Symbol]) -> State:
        state = 0
        for fact in facts:
            bit = self._bit.get(fact)
            if bit is None:
                bit = self._bit[fact] = len(self._facts)
                self._facts.append(format_term(self._names.term(fact)))
                self._fact_asp.append(f"true({fact}).\n")
                self._fact_symbols.append(fact)
            state |= 1 << bit
        return state

    def _move(self, role: int, symbol: clingo.Symbol) -> int:
        index = self._move_at[role].get(symbol)
        if index is None:
            index = self._move_at[role][symbol] = len(self._moves[role])
            text = format_term(self._names.term(symbol))
            self._moves[role].append(text)
            self._move_symbols[role].append(symbol)
            self._move_by_text[role][text] = index
        return index

    def _goal(self, symbol: clingo.Symbol) -> int:
        value = format_term(self._names.term(symbol.arguments[1]))
        if not value.isdigit() or int(value) > 100:
            role = format_term(self._names.term(symbol.arguments[0]))
            raise GameFault(
                f"{self._where}: fault of the rules: goal value {value} of {role} "
                "is not a number 0..100"
            )
        return int(value)
