"""Rules split so that grounding does not multiply independent variables together.

A rule body whose literals fall into groups that share no variable outside the head is a
product: `(next (cell ?x ?y)) :- (does a (mark ?x ?y ?u ?v)) (does b (mark ?p ?q ?r ?t))
(apart ?x ?y ?p ?q)` grounds to every combination of both moves. Each such group becomes
an auxiliary relation over the head variables it uses, grounded on its own, and the rule
joins the auxiliaries: the same meaning, a ground program the size of its parts.
"""

from __future__ import annotations

from collections.abc import Sequence

from referee.games.gdl.check import Literal, Rule, Sign
from referee.games.gdl.syntax import Term, variables

# A space never occurs in a GDL name, so no rulesheet can define or use these relations.
_AUX = "aux {}"


def decompose(rules: Sequence[Rule]) -> tuple[Rule, ...]:
    """The rules, each split into its independent parts where it has more than one."""
    found: list[Rule] = []
    for rule in rules:
        found.extend(_split(rule, len(found)))
    return tuple(found)


def _split(rule: Rule, serial: int) -> list[Rule]:
    head_vars = variables(rule.head)
    literal_vars = [literal.variables() for literal in rule.body]
    groups = _components([found - head_vars for found in literal_vars])
    if len(groups) < 2:
        return [rule]
    body: list[Literal] = []
    extra: list[Rule] = []
    for group in groups:
        literals = [rule.body[i] for i in group]
        inner = set().union(*(literal_vars[i] for i in group))
        interface = sorted(inner & head_vars)
        bound = set().union(
            *(literal_vars[i] for i in group if rule.body[i].sign is Sign.POS), set()
        )
        if inner <= head_vars or not set(interface) <= bound:
            body.extend(literals)
            continue
        name = _AUX.format(f"{serial}.{len(extra)}")
        aux: Term = (name, *interface) if interface else name
        extra.append(Rule(aux, tuple(literals), rule.line))
        body.append(Literal(Sign.POS, (aux,)))
    if not extra:
        return [rule]
    return [*extra, Rule(rule.head, tuple(body), rule.line)]


def _components(links: Sequence[set[str]]) -> list[list[int]]:
    """The indices of the literals, grouped by shared variables (transitively)."""
    parent = list(range(len(links)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, names in enumerate(links):
        for name in names:
            if name in owner:
                parent[root(i)] = root(owner[name])
            else:
                owner[name] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(links)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())
