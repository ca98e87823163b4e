"""The child process of `ground.ground`: parse, check and ground a rulesheet with clingo.

Run as `python -m referee.games.gdl.grounder WHERE MEMORY` with the rulesheet on standard
input; it writes the ground program as JSON, or exits REFUSED with the line and problem.
Only this process imports clingo: a referee or a player that loads no rulesheet never pays
for it.
"""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Sequence

import clingo

from referee.errors import RulesheetError
from referee.games.gdl.asp import Names, program
from referee.games.gdl.check import checked_rules
from referee.games.gdl.decompose import decompose
from referee.games.gdl.ground import REFUSED, GroundProgram
from referee.games.gdl.syntax import format_term, parse_rulesheet

# The relations whose ground atoms the reasoner needs by name.
_RELATIONS = (
    ("role", 1),
    ("init", 1),
    ("true", 1),
    ("does", 2),
    ("legal", 2),
    ("next", 1),
    ("goal", 2),
    ("terminal", 0),
)


def ground_in_process(text: str, where: str) -> GroundProgram:
    """Parse, check and ground a rulesheet here; the child process's work."""
    rules = checked_rules(parse_rulesheet(text, where), where)
    names = Names()
    source = program(decompose(rules), names)
    observer = _Observer()
    messages: list[str] = []
    control = clingo.Control(["--warn=none"], logger=lambda _code, text: messages.append(text))
    control.register_observer(observer)
    try:
        control.add("base", [], source)
        control.ground([("base", [])])
    except RuntimeError as error:
        raise RulesheetError(where, None, f"clingo cannot ground it: {messages or error}") from None
    atoms: dict[str, list[tuple[list[str], int, bool]]] = {}
    for name, arity in _RELATIONS:
        atoms[name] = [
            (
                [format_term(names.term(argument)) for argument in atom.symbol.arguments],
                atom.literal,
                atom.is_fact,
            )
            for atom in control.symbolic_atoms.by_signature(name, arity)
        ]
    return GroundProgram(atoms, observer.rules)


class _Observer(clingo.Observer):
    """Collects the ground rules clingo's grounder passes on (facts come from the atoms)."""

    def __init__(self) -> None:
        self.rules: list[tuple[int, list[int], list[int]]] = []

    def rule(self, choice: bool, head: Sequence[int], body: Sequence[int]) -> None:
        if body and len(head) == 1:
            positive = [literal for literal in body if literal > 0]
            negative = [-literal for literal in body if literal < 0]
            self.rules.append((head[0], positive, negative))


def _child(argv: Sequence[str]) -> int:
    where, memory = argv[0], int(argv[1])
    # Never above what this process may already use (a jailed player has a lower limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = min(limit for limit in (memory, soft, hard) if limit != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    try:
        found = ground_in_process(text, where)
    except RulesheetError as error:
        sys.stdout.write(json.dumps({"line": error.line, "problem": error.problem}))
        return REFUSED
    sys.stdout.write(found.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
