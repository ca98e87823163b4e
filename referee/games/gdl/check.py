"""What makes a rulesheet GDL: the checks a rule must pass before it is grounded.

Each check refuses a rulesheet with the file, the line of the offending sentence and the
problem: a reserved word used wrongly, an unsafe variable, negation through recursion, a
rule of the game's frame (legal, goal, terminal, init) that depends on the moves played.
Bodies come out in disjunctive normal form, so `or` never reaches the grounder.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NoReturn

from referee.errors import RulesheetError
from referee.games.gdl.syntax import Sentence, Term, format_term, is_variable, name_of, variables

# The arity GDL gives each reserved relation.
ARITY = {
    "role": 1,
    "init": 1,
    "true": 1,
    "does": 2,
    "next": 1,
    "legal": 2,
    "goal": 2,
    "terminal": 0,
    "base": 1,
    "input": 2,
    # GDL-II: what a role perceives after a joint move (Thielscher 2010).
    "sees": 2,
}
# Words of the language itself: never the name of a relation a rule defines.
_CONNECTIVES = {"<=", "not", "or", "and", "distinct"}
_NEVER_HEADS = _CONNECTIVES | {"true", "does"}
# Relations that describe the game before any move: none may depend on what was played.
_NO_DOES = ("legal", "goal", "terminal", "init", "role", "base", "input")
_NO_STATE = ("init", "role")


Fail = Callable[[str], NoReturn]


class Sign(Enum):
    """The kinds of literal a normalised body holds."""

    POS = "pos"
    NEG = "neg"
    DISTINCT = "distinct"
    SAME = "same"


@dataclass(frozen=True)
class Literal:
    """One literal of a normalised body: an atom, its negation, or a (dis)equality of terms."""

    sign: Sign
    terms: tuple[Term, ...]

    def variables(self) -> set[str]:
        """The variables that occur in the literal."""
        return set().union(*(variables(term) for term in self.terms))


@dataclass(frozen=True)
class Rule:
    """A fact or rule with a conjunctive body, and the line of the sentence it came from."""

    head: Term
    body: tuple[Literal, ...]
    line: int


def checked_rules(sentences: Sequence[Sentence], where: str) -> tuple[Rule, ...]:
    """The rules of a rulesheet in normal form, after every GDL check; RulesheetError if not."""
    rules: list[Rule] = []
    for sentence in sentences:
        fail = _failer(where, sentence.line)
        _check_atom(sentence.head, fail, head=True)
        if name_of(sentence.head) == "role" and sentence.body:
            fail("role must be a fact, not a rule")
        for body in _alternatives(sentence.body, fail):
            rule = Rule(sentence.head, body, sentence.line)
            _check_safe(rule, fail)
            rules.append(rule)
    _check_roles(rules, where)
    _check_dependencies(rules, where)
    return tuple(rules)


def _failer(where: str, line: int) -> Fail:
    def fail(problem: str) -> NoReturn:
        raise RulesheetError(where, line, problem)

    return fail


def _check_atom(atom: Term, fail: Fail, head: bool = False) -> None:
    if is_variable(atom):
        fail(f"a variable {atom} stands where a sentence must")
    name = name_of(atom)
    if head and name in _NEVER_HEADS:
        fail(f"'{name}' cannot be the head of a rule")
    if not head and name in _CONNECTIVES:
        fail(f"'{name}' cannot stand here")
    arity = 0 if isinstance(atom, str) else len(atom) - 1
    if name in ARITY and arity != ARITY[name]:
        fail(f"'{name}' takes {ARITY[name]} argument(s), got {arity}: {format_term(atom)}")
    if isinstance(atom, tuple):
        for argument in atom[1:]:
            _check_term(argument, fail)


def _check_term(term: Term, fail: Fail) -> None:
    if isinstance(term, tuple):
        if term[0] in _CONNECTIVES:
            fail(f"'{term[0]}' cannot stand inside a term: {format_term(term)}")
        for argument in term[1:]:
            _check_term(argument, fail)


def _alternatives(body: Iterable[Term], fail: Fail) -> Iterator[tuple[Literal, ...]]:
    """The conjunctions a body's `or`s stand for, in order."""
    choices = [list(_literal(term, fail)) for term in body]
    for pick in itertools.product(*choices):
        yield tuple(literal for conjunction in pick for literal in conjunction)


def _literal(term: Term, fail: Fail) -> Iterator[tuple[Literal, ...]]:
    """The conjunctions of simple literals one body term stands for (several for `or`)."""
    name = name_of(term)
    args = term[1:] if isinstance(term, tuple) else ()
    if name == "or" and isinstance(term, tuple):
        for part in args:
            yield from _literal(part, fail)
    elif name == "and" and isinstance(term, tuple):
        for pick in itertools.product(*(list(_literal(part, fail)) for part in args)):
            yield tuple(literal for conjunction in pick for literal in conjunction)
    elif name == "distinct" and isinstance(term, tuple):
        if len(args) != 2:
            fail(f"'distinct' takes 2 arguments, got {len(args)}: {format_term(term)}")
        for argument in args:
            _check_term(argument, fail)
        yield (Literal(Sign.DISTINCT, args),)
    elif name == "not" and isinstance(term, tuple):
        if len(args) != 1:
            fail(f"'not' takes 1 argument, got {len(args)}: {format_term(term)}")
        yield _negation(args[0], fail)
    else:
        _check_atom(term, fail)
        yield (Literal(Sign.POS, (term,)),)


def _negation(term: Term, fail: Fail) -> tuple[Literal, ...]:
    """`(not X)` as a conjunction: negated atoms, or equality for `(not (distinct a b))`."""
    name = name_of(term)
    if name == "distinct" and isinstance(term, tuple) and len(term) == 3:
        return (Literal(Sign.SAME, term[1:]),)
    if name == "or" and isinstance(term, tuple):
        return tuple(literal for part in term[1:] for literal in _negation(part, fail))
    if name == "not" and isinstance(term, tuple) and len(term) == 2:
        conjunctions = list(_literal(term[1], fail))
        if len(conjunctions) == 1:
            return conjunctions[0]
    if name in _CONNECTIVES:
        fail(f"GDL negates only a sentence, not {format_term(term)}")
    _check_atom(term, fail)
    return (Literal(Sign.NEG, (term,)),)


def _check_safe(rule: Rule, fail: Fail) -> None:
    """Every variable of the head, a negation or a distinct must occur in a positive literal."""
    bound: set[str] = set()
    for literal in rule.body:
        if literal.sign is Sign.POS:
            bound |= variables(literal.terms[0])
    unsafe = variables(rule.head) - bound
    where = "the head"
    for literal in rule.body:
        if unsafe:
            break
        if literal.sign is not Sign.POS:
            unsafe = literal.variables() - bound
            where = _shown(literal)
    if unsafe:
        names = ", ".join(sorted(unsafe))
        fail(f"unsafe variable {names} in {where}: it occurs in no positive literal of the rule")


def _shown(literal: Literal) -> str:
    inner = " ".join(format_term(term) for term in literal.terms)
    return {
        Sign.POS: inner,
        Sign.NEG: f"(not {inner})",
        Sign.DISTINCT: f"(distinct {inner})",
        Sign.SAME: f"(not (distinct {inner}))",
    }[literal.sign]


def _check_roles(rules: Sequence[Rule], where: str) -> None:
    seen: set[Term] = set()
    for rule in rules:
        if name_of(rule.head) != "role":
            continue
        role = rule.head[1] if isinstance(rule.head, tuple) else rule.head
        if not isinstance(role, str) or variables(role):
            raise RulesheetError(where, rule.line, f"a role must be a constant: {role}")
        if role in seen:
            raise RulesheetError(where, rule.line, f"role {role} is declared twice")
        seen.add(role)
    if not seen:
        raise RulesheetError(where, None, "no (role ...) declared")


def defines_percepts(rules: Iterable[Rule | Sentence]) -> bool:
    """Whether the rules are GDL-II's, of imperfect information: they say what each role
    sees after a step (`sees`), and a role is told that alone, never the others' moves."""
    return any(name_of(rule.head) == "sees" for rule in rules)


def _dependencies(rules: Sequence[Rule]) -> dict[str, set[tuple[str, bool, int]]]:
    """Each relation's edges: the relations its rules' bodies use, negated or not, and where."""
    edges: dict[str, set[tuple[str, bool, int]]] = {}
    for rule in rules:
        targets = edges.setdefault(name_of(rule.head), set())
        for literal in rule.body:
            if literal.sign in (Sign.POS, Sign.NEG):
                targets.add((name_of(literal.terms[0]), literal.sign is Sign.NEG, rule.line))
    return edges


def _check_dependencies(rules: Sequence[Rule], where: str) -> None:
    """No `does` (or `true`) under the relations that forbid it."""
    edges = _dependencies(rules)
    for name in edges:
        found = _reachable(name, edges)
        for forbidden, of in (("does", _NO_DOES), ("true", _NO_STATE)):
            if name in of and forbidden in found:
                raise RulesheetError(where, found[forbidden], f"{name} depends on {forbidden}")


def negation_cycle(rules: Sequence[Rule], where: str) -> RulesheetError:
    """The error for a rulesheet whose ground rules negate through recursion.

    Relations may negate themselves with other arguments (`(goal ?r 0)` from
    `(not (goal ?r 100))` is stratified once ground), so the grounded program decides and
    this only names the first rule whose relation negates its own recursion.
    """
    edges = _dependencies(rules)
    reach = {name: _reachable(name, edges) for name in edges}
    for name in edges:
        for target, negative, line in sorted(edges[name], key=lambda edge: edge[2]):
            if negative and name in reach.get(target, {}):
                return RulesheetError(
                    where,
                    line,
                    f"negation through recursion: {name} depends on (not {target}), "
                    f"which depends on {name} (unstratified)",
                )
    return RulesheetError(where, None, "negation through recursion (unstratified)")


def _reachable(start: str, edges: dict[str, set[tuple[str, bool, int]]]) -> dict[str, int]:
    """Every relation `start` depends on, each with the line of the first rule on the way."""
    found: dict[str, int] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        for target, _negative, line in edges.get(name, ()):
            if target not in found:
                found[target] = line
                todo.append(target)
    return found
