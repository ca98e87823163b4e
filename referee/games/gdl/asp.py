"""GDL rules as an answer-set program for clingo's grounder, and clingo's symbols back as GDL.

Two programs in one text. The *domain* program is the rules with every negation dropped:
it is positive, so the grounder computes its one model, a superset of every fact that can
ever be true and every move that can ever be legal. The *game* program is the rules as
written, with `true` and `does` declared external over that domain, so that grounding keeps
every rule that a state or a joint move can switch on.

Names are renamed so that any GDL spelling is a clingo identifier: constants become strings,
function and relation names a numbered identifier; `Names` holds the way back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import clingo

from referee.games.gdl.check import ARITY, Literal, Rule, Sign
from referee.games.gdl.syntax import Term, name_of

_FRAME = (
    "d_true(F) :- d_init(F).\n"
    "d_true(F) :- d_next(F).\n"
    "d_does(R, M) :- d_legal(R, M).\n"
    "#external true(F) : d_true(F).\n"
    "#external does(R, M) : d_does(R, M).\n"
)


@dataclass
class Names:
    """The clingo identifier of each GDL function or relation name, and the way back."""

    to_asp: dict[str, str] = field(default_factory=dict)
    to_gdl: dict[str, str] = field(default_factory=dict)

    def function(self, name: str) -> str:
        if name not in self.to_asp:
            asp = f"f{len(self.to_asp)}"
            self.to_asp[name] = asp
            self.to_gdl[asp] = name
        return self.to_asp[name]

    def relation(self, name: str, domain: bool) -> str:
        asp = name if name in ARITY else "r" + self.function(name)
        return "d_" + asp if domain else asp

    def term(self, symbol: clingo.Symbol) -> Term:
        """The GDL term a clingo symbol stands for."""
        if symbol.type is clingo.SymbolType.String:
            return symbol.string
        name = self.to_gdl[symbol.name]
        if not symbol.arguments:
            return name
        return (name, *(self.term(argument) for argument in symbol.arguments))


def program(rules: Sequence[Rule], names: Names) -> str:
    """The domain and game programs of a rulesheet, as clingo text."""
    return _FRAME + "".join(
        _rule(rule, names, domain) for rule in rules for domain in (True, False)
    )


def game_program(rules: Sequence[Rule], names: Names) -> str:
    """The game program alone, `true` and `does` left for the caller to give."""
    return "".join(_rule(rule, names, False) for rule in rules)


def _rule(rule: Rule, names: Names, domain: bool) -> str:
    variables: dict[str, str] = {}
    head = _atom(rule.head, names, variables, domain)
    body = [
        text
        for literal in rule.body
        if (text := _literal(literal, names, variables, domain)) is not None
    ]
    return f"{head} :- {', '.join(body)}.\n" if body else f"{head}.\n"


def _literal(literal: Literal, names: Names, variables: dict[str, str], domain: bool) -> str | None:
    if literal.sign is Sign.POS:
        return _atom(literal.terms[0], names, variables, domain)
    if literal.sign is Sign.NEG:
        return None if domain else "not " + _atom(literal.terms[0], names, variables, domain)
    left, right = (_term(term, names, variables) for term in literal.terms)
    return f"{left} != {right}" if literal.sign is Sign.DISTINCT else f"{left} = {right}"


def _atom(atom: Term, names: Names, variables: dict[str, str], domain: bool) -> str:
    relation = names.relation(name_of(atom), domain)
    if isinstance(atom, str):
        return relation
    return f"{relation}({', '.join(_term(arg, names, variables) for arg in atom[1:])})"


def _term(term: Term, names: Names, variables: dict[str, str]) -> str:
    if isinstance(term, tuple):
        args = ", ".join(_term(arg, names, variables) for arg in term[1:])
        return f"{names.function(str(term[0]))}({args})"
    if term.startswith("?"):
        return variables.setdefault(term, f"V{len(variables)}")
    escaped = term.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
