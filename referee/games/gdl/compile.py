"""A ground program compiled to straight-line Python: the propositional network, as code.

Each query (legal moves, terminal, goals, next state, and for GDL-II what each role sees
after a joint move) becomes one Python function that
evaluates exactly the atoms it depends on, in dependency order, as local variables; a
recursive group of atoms loops to its least fixpoint. A state is an `int` whose bit `i` is
the i-th fact that can ever be true, so states hash and compare as fast as numbers do.

Compiling is done where the grounding is, in the grounder's limited child (`translate`):
Python's compiler takes about 1.5 KiB for each literal of the ground program while it
works (hexPie: 1.2 GiB), which a rulesheet could raise to anything. The child sends the
code object, marshalled, with what its numbers stand for (`Translation`); the referee
only loads it (`load`: hexPie's 15 MiB, 76 MiB at the referee's peak).
"""

from __future__ import annotations

import json
import marshal
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from referee.games.gdl.reasoner import QuestionControls, State, true_bits


@dataclass(frozen=True)
class GroundProgram:
    """The ground rules of a game, over numbered atoms, and what the numbers stand for.

    `atoms[relation]` lists `[arguments, atom, is_fact]` with the arguments as canonical
    GDL text; rules are `[head, positive body, negative body]`. An atom that is a fact is
    true in every state; one that heads no rule and is not a fact is false in every state.
    """

    atoms: dict[str, list[tuple[list[str], int, bool]]]
    rules: list[tuple[int, list[int], list[int]]]


class Unstratified(Exception):
    """The ground rules negate an atom inside its own recursion."""


@dataclass(frozen=True)
class Compiled(QuestionControls):
    """The compiled rules of one game: roles, every move and fact by index, five queries."""

    roles: tuple[str, ...]
    # Per role, every move it can ever make, sorted; moves are passed by index in this list.
    moves: tuple[tuple[str, ...], ...]
    # The facts that can ever be true, sorted: bit i of a state is facts[i].
    facts: tuple[str, ...]
    initial: State
    legal: Callable[[State], tuple[tuple[int, ...], ...]]
    terminal: Callable[[State], bool]
    goals: Callable[[State], tuple[tuple[int, ...], ...]]
    next: Callable[[State, Sequence[int]], State]
    bad_goals: tuple[tuple[str, str], ...]
    # GDL-II: whether the rules say what each role sees (else every role sees every move),
    # per role every percept it can ever have, sorted, and those it has after a joint move.
    imperfect: bool
    percept_texts: tuple[tuple[str, ...], ...]
    seen: Callable[[State, Sequence[int]], tuple[tuple[int, ...], ...]]
    complete: bool = field(default=True, init=False)
    _index: tuple[dict[str, int], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        index = tuple({move: i for i, move in enumerate(row)} for row in self.moves)
        object.__setattr__(self, "_index", index)

    def move(self, role: int, index: int) -> str:
        return self.moves[role][index]

    def move_index(self, role: int, text: str) -> int | None:
        return self._index[role].get(text)

    def known_moves(self) -> Iterable[str]:
        return {move for row in self.moves for move in row}

    def known_facts(self) -> Sequence[str]:
        return self.facts

    def fact_texts(self, state: State) -> list[str]:
        return [self.facts[i] for i in true_bits(state)]

    def sees(self, state: State, moves: Sequence[int], /) -> tuple[tuple[str, ...], ...]:
        return tuple(
            tuple(texts[i] for i in row)
            for texts, row in zip(self.percept_texts, self.seen(state, moves), strict=True)
        )


@dataclass(frozen=True)
class Translation:
    """A ground program's queries as compiled Python, and what its numbers stand for: what
    the grounder child sends the referee."""

    roles: tuple[str, ...]
    moves: tuple[tuple[str, ...], ...]
    facts: tuple[str, ...]
    initial: State
    bad_goals: tuple[tuple[str, str], ...]
    imperfect: bool
    percepts: tuple[tuple[str, ...], ...]
    code: CodeType

    def to_bytes(self) -> bytes:
        """One JSON line of the names, then the code, marshalled (the same Python reads it:
        the child is run by this interpreter)."""
        names = {
            "roles": self.roles,
            "moves": self.moves,
            "facts": self.facts,
            "initial": format(self.initial, "x"),
            "bad_goals": self.bad_goals,
            "imperfect": self.imperfect,
            "percepts": self.percepts,
        }
        return json.dumps(names, separators=(",", ":")).encode() + b"\n" + marshal.dumps(self.code)

    @classmethod
    def from_bytes(cls, data: bytes) -> Translation:
        line, _, code = data.partition(b"\n")
        names = json.loads(line)
        return cls(
            tuple(names["roles"]),
            tuple(tuple(row) for row in names["moves"]),
            tuple(names["facts"]),
            int(names["initial"], 16),
            tuple((role, value) for role, value in names["bad_goals"]),
            bool(names["imperfect"]),
            tuple(tuple(row) for row in names["percepts"]),
            marshal.loads(code),
        )


def load(translation: Translation) -> Compiled:
    """The compiled reasoner of a translation: its code run to define the queries."""
    namespace: dict[str, Any] = {}
    exec(translation.code, namespace)
    return Compiled(
        translation.roles,
        translation.moves,
        translation.facts,
        translation.initial,
        namespace["legal"],
        namespace["terminal"],
        namespace["goals"],
        namespace["next_state"],
        translation.bad_goals,
        translation.imperfect,
        translation.percepts,
        namespace["sees"],
    )


def translate(program: GroundProgram, imperfect: bool = False) -> Translation:
    """The queries of a ground program, compiled; Unstratified for negation inside a
    recursion. `imperfect`: the rules say what each role sees (GDL-II)."""
    atoms = program.atoms
    facts = {atom for rows in atoms.values() for _args, atom, fact in rows if fact}
    roles = tuple(args[0] for args, _atom, _fact in atoms["role"])
    role_index = {role: i for i, role in enumerate(roles)}
    base = sorted((args[0], atom) for args, atom, _fact in atoms["true"])
    bit = {atom: i for i, (_text, atom) in enumerate(base)}
    by_fact = {text: i for i, (text, _atom) in enumerate(base)}
    moves_of: list[set[str]] = [set() for _ in roles]
    for relation in ("does", "legal"):
        for (role, move), _atom, _fact in atoms[relation]:
            if role in role_index:
                moves_of[role_index[role]].add(move)
    moves = tuple(tuple(sorted(found)) for found in moves_of)
    move_index = [{move: i for i, move in enumerate(row)} for row in moves]
    does = {
        atom: (role_index[role], move_index[role_index[role]][move])
        for (role, move), atom, _fact in atoms["does"]
        if role in role_index
    }
    builder = _Builder(program.rules, facts, bit, does)

    legal_rows: list[list[tuple[int, int]]] = [[] for _ in roles]
    for (role, move), atom, _fact in atoms["legal"]:
        if role in role_index:
            r = role_index[role]
            legal_rows[r].append((move_index[r][move], atom))
    goal_rows: list[list[tuple[int, int]]] = [[] for _ in roles]
    bad_goals = []
    for (role, value), atom, _fact in atoms["goal"]:
        if role not in role_index:
            continue
        if not value.isdigit() or int(value) > 100:
            bad_goals.append((role, value))
            continue
        goal_rows[role_index[role]].append((int(value), atom))
    next_rows = [(by_fact[fact], atom) for (fact,), atom, _fact in atoms["next"] if fact in by_fact]
    terminal_atoms = [atom for _args, atom, _fact in atoms["terminal"]]
    seen_by: list[set[str]] = [set() for _ in roles]
    for (role, percept), _atom, _fact in atoms.get("sees", ()):
        if role in role_index:
            seen_by[role_index[role]].add(percept)
    percepts = tuple(tuple(sorted(found)) for found in seen_by)
    percept_index = [{percept: i for i, percept in enumerate(row)} for row in percepts]
    sees_rows: list[list[tuple[int, int]]] = [[] for _ in roles]
    for (role, percept), atom, _fact in atoms.get("sees", ()):
        if role in role_index:
            r = role_index[role]
            sees_rows[r].append((percept_index[r][percept], atom))

    sources = [
        builder.function("legal", _collect(legal_rows, builder)),
        builder.function(
            "terminal", ([*terminal_atoms], "return " + builder.any_of(terminal_atoms))
        ),
        builder.function("goals", _collect(goal_rows, builder)),
        builder.function("next_state", _pack(next_rows, builder), joint=True),
        builder.function("sees", _collect(sees_rows, builder), joint=True),
    ]
    initial = 0
    for (fact,), _atom, _fact in atoms["init"]:
        if fact in by_fact:
            initial |= 1 << by_fact[fact]
    return Translation(
        roles,
        moves,
        tuple(text for text, _atom in base),
        initial,
        tuple(bad_goals),
        imperfect,
        percepts,
        compile("\n".join(sources), "<gdl>", "exec"),
    )


def _collect(rows: Sequence[Sequence[tuple[int, int]]], builder: _Builder) -> tuple[list[int], str]:
    """The targets and return statement of a query that lists, per role, the values true."""
    targets = [atom for row in rows for _value, atom in row]
    parts = []
    for row in rows:
        items = ", ".join(f"({value}, {builder.value(atom)})" for value, atom in sorted(row))
        parts.append(f"tuple(v for v, t in ({items}{',' if len(row) == 1 else ''}) if t)")
    return targets, "return (" + "".join(part + ", " for part in parts) + ")"


def _pack(rows: Sequence[tuple[int, int]], builder: _Builder) -> tuple[list[int], str]:
    # In chunks: one long chain of `|` nests deeper than Python's compiler recurses.
    terms = [f"{builder.value(atom)} << {index}" for index, atom in sorted(rows)]
    chunks = [" | ".join(terms[i : i + 64]) for i in range(0, len(terms), 64)]
    return [atom for _index, atom in rows], "return " + (
        " | ".join(f"({c})" for c in chunks) or "0"
    )


class _Builder:
    """Writes the Python of queries over one ground program."""

    def __init__(
        self,
        rules: Iterable[tuple[int, list[int], list[int]]],
        facts: set[int],
        bits: dict[int, int],
        does: dict[int, tuple[int, int]],
    ) -> None:
        self.facts = facts
        self.bits = bits
        self.does = does
        self.rules: dict[int, list[tuple[list[int], list[int]]]] = defaultdict(list)
        for head, positive, negative in rules:
            if head in facts:
                continue
            if any(atom in facts for atom in negative):
                continue
            self.rules[head].append(
                ([a for a in positive if a not in facts], [a for a in negative])
            )

    def value(self, atom: int) -> str:
        if atom in self.facts:
            return "1"
        if atom in self.rules or atom in self.bits or atom in self.does:
            return f"a{atom}"
        return "0"

    def any_of(self, atoms: Sequence[int]) -> str:
        return " or ".join(self.value(atom) for atom in atoms) or "0"

    def function(self, name: str, query: tuple[list[int], str], joint: bool = False) -> str:
        """A query as a function of the state `s`, and of the joint move `j` if it needs one."""
        targets, result = query
        lines = [f"def {name}(s, j):" if joint else f"def {name}(s):"]
        if joint:
            roles = 1 + max((role for role, _move in self.does.values()), default=0)
            lines.append("    " + "".join(f"j{r}, " for r in range(roles)) + "= j")
        for group in self._order(targets):
            lines.extend(self._evaluate(group))
        lines.append("    " + result)
        return "\n".join(lines)

    def _order(self, targets: Iterable[int]) -> list[list[int]]:
        """The atoms the targets depend on, in groups of mutual recursion, dependencies first."""
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        stack: list[int] = []
        on_stack: set[int] = set()
        groups: list[list[int]] = []
        counter = 0
        for root in targets:
            if root in index:
                continue
            work = [(root, iter(self._depends(root)))]
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                node, children = work[-1]
                advanced = False
                for child in children:
                    if child not in index:
                        index[child] = low[child] = counter
                        counter += 1
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(self._depends(child))))
                        advanced = True
                        break
                    if child in on_stack:
                        low[node] = min(low[node], index[child])
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    groups.append(group)
        return groups

    def _depends(self, atom: int) -> list[int]:
        found: list[int] = []
        for positive, negative in self.rules.get(atom, ()):
            found.extend(positive)
            found.extend(negative)
        return found

    def _evaluate(self, group: list[int]) -> list[str]:
        if len(group) == 1 and group[0] not in self._depends(group[0]):
            atom = group[0]
            if atom in self.bits:
                return [f"    a{atom} = s >> {self.bits[atom]} & 1"]
            if atom in self.does:
                role, move = self.does[atom]
                return [f"    a{atom} = j{role} == {move}"]
            if atom in self.facts or atom not in self.rules:
                return []
            bodies = [self._body(p, n) for p, n in self.rules[atom]]
            return [f"    a{atom} = " + (" or ".join(f"({b})" for b in bodies) or "0")]
        members = set(group)
        for atom in group:
            for _positive, negative in self.rules.get(atom, ()):
                if members.intersection(negative):
                    raise Unstratified(atom)
        lines = ["    " + " = ".join(f"a{atom}" for atom in group) + " = 0", "    while True:"]
        lines.append("        c = 0")
        for atom in group:
            bodies = [self._body(p, n) for p, n in self.rules[atom]]
            condition = " or ".join(f"({b})" for b in bodies) or "0"
            lines.append(f"        if not a{atom} and ({condition}):")
            lines.append(f"            a{atom} = c = 1")
        lines.append("        if not c:")
        lines.append("            break")
        return lines

    def _body(self, positive: Sequence[int], negative: Sequence[int]) -> str:
        terms = [self.value(atom) for atom in positive]
        terms += [f"not {self.value(atom)}" for atom in negative]
        return " and ".join(terms) or "1"
