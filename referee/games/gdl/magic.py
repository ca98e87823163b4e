"""Rules rewritten so that a state's grounding derives only what its queries ask for.

Grounding bottom up derives every instance of every relation. For most games that is
what a state needs, but a rule like chess's `(threatened_with_capture ?owner ?cx ?cy ?x ?y
?ignorex ?ignorey)` has millions of instances, of which the legal-move rules ask about a
few dozen. The magic-set rewriting makes grounding demand-driven: each relation is split
by which of its arguments are known where it is used (its *adornment*), and a `magic`
relation collects the argument values actually asked for, from the literals that come
before the use in the calling rule. A rule then fires only for values someone asked for.
The rewritten program has the same answers to the queries as the original.

Body literals are taken in the order written (GDL authors order them for left-to-right
provers), except that a negation or a (dis)equality waits until its variables are bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from referee.games.gdl.check import Literal, Rule, Sign
from referee.games.gdl.syntax import Term, name_of, variables

# A space never occurs in a GDL name, so no rulesheet can define or use these relations.
_ADORNED = "{} {}"
_MAGIC = "magic {} {}"

# Registers that a relation is asked for with an adornment; the adorned relation's name.
_Ask = Callable[[str, str], str]


def magic_rules(rules: Sequence[Rule], queries: Iterable[tuple[str, int]]) -> tuple[Rule, ...]:
    """The rules rewritten for the queries (relation, arity), all of whose arguments are free.

    Each query keeps its own name in the result, so a model is read as before.
    """
    defined: dict[str, list[Rule]] = {}
    for rule in rules:
        defined.setdefault(name_of(rule.head), []).append(rule)
    # A relation of facts alone is as cheap to ground whole as to ask about.
    derived = {name for name, found in defined.items() if any(r.body for r in found)}
    written: list[Rule] = [rule for rule in rules if name_of(rule.head) not in derived]
    pending: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def ask(name: str, adornment: str) -> str:
        if (name, adornment) not in seen:
            seen.add((name, adornment))
            pending.append((name, adornment))
        return _ADORNED.format(name, adornment)

    for name, arity in queries:
        if name not in derived:
            continue
        free = "f" * arity
        adorned = ask(name, free)
        args = tuple(f"?q{i}" for i in range(arity))
        written.append(Rule(_MAGIC.format(name, free), (), 0))
        written.append(Rule(_atom(name, args), (Literal(Sign.POS, (_atom(adorned, args),)),), 0))
    while pending:
        name, adornment = pending.pop()
        for rule in defined[name]:
            if len(_arguments(rule.head)) == len(adornment):
                written.extend(_rewrite(rule, adornment, derived, ask))
    return tuple(written)


def _rewrite(rule: Rule, adornment: str, derived: set[str], ask: _Ask) -> list[Rule]:
    head_args = _arguments(rule.head)
    name = name_of(rule.head)
    known = tuple(arg for arg, how in zip(head_args, adornment, strict=True) if how == "b")
    body = [Literal(Sign.POS, (_atom(_MAGIC.format(name, adornment), known),))]
    found: list[Rule] = []
    head_bound = set().union(*(variables(arg) for arg in known))
    for literal, bound in _ordered(rule.body, head_bound):
        atom = literal.terms[0]
        if literal.sign in (Sign.POS, Sign.NEG) and name_of(atom) in derived:
            args = _arguments(atom)
            how = "".join("b" if variables(arg) <= bound else "f" for arg in args)
            asked = tuple(arg for arg, h in zip(args, how, strict=True) if h == "b")
            found.append(
                Rule(_atom(_MAGIC.format(name_of(atom), how), asked), tuple(body), rule.line)
            )
            literal = Literal(literal.sign, (_atom(ask(name_of(atom), how), args),))
        body.append(literal)
    found.append(Rule(_atom(_ADORNED.format(name, adornment), head_args), tuple(body), rule.line))
    return found


def _ordered(body: Sequence[Literal], bound: set[str]) -> Iterator[tuple[Literal, set[str]]]:
    """The body in written order, each negation or (dis)equality once its variables are bound;
    each literal with the variables bound before it."""
    waiting = list(body)
    known = set(bound)
    while waiting:
        ready = next(
            (
                literal
                for literal in waiting
                if literal.sign is Sign.POS or literal.variables() <= known
            ),
            waiting[0],
        )
        waiting.remove(ready)
        yield ready, set(known)
        if ready.sign in (Sign.POS, Sign.SAME):
            known |= ready.variables()


def _arguments(atom: Term) -> tuple[Term, ...]:
    return () if isinstance(atom, str) else atom[1:]


def _atom(name: str, args: Sequence[Term]) -> Term:
    return (name, *args) if args else name
