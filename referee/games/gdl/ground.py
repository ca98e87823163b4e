"""A rulesheet's ground program, from clingo's grounder, in a child process with limits.

Grounding is the step that can blow up (a rule whose variables range over a big domain, a
recursion through function terms that never ends), so it runs in a child process under a
memory limit and a deadline; the parent only ever sees a ground program or one line of why
not. The child parses and checks the rulesheet too, so every refusal comes out the same way.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import clingo

from referee.errors import RulesheetError
from referee.games.gdl.asp import Names, program
from referee.games.gdl.check import checked_rules
from referee.games.gdl.decompose import decompose
from referee.games.gdl.syntax import format_term, parse_rulesheet

# What a rulesheet may take to ground: the largest of the 314 public ones takes 4 s, 2 GiB.
GROUND_SECONDS = 60.0
GROUND_MEMORY = 4 << 30

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


@dataclass(frozen=True)
class GroundProgram:
    """The ground rules of a game, over numbered atoms, and what the numbers stand for.

    `atoms[relation]` lists `[arguments, atom, is_fact]` with the arguments as canonical
    GDL text; rules are `[head, positive body, negative body]`. An atom that is a fact is
    true in every state; one that heads no rule and is not a fact is false in every state.
    """

    atoms: dict[str, list[tuple[list[str], int, bool]]]
    rules: list[tuple[int, list[int], list[int]]]

    def to_json(self) -> str:
        return json.dumps({"atoms": self.atoms, "rules": self.rules}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> GroundProgram:
        data = json.loads(text)
        return cls(
            {name: [(list(a), i, f) for a, i, f in rows] for name, rows in data["atoms"].items()},
            [(h, p, n) for h, p, n in data["rules"]],
        )


def ground(text: str, where: str, seconds: float = GROUND_SECONDS) -> GroundProgram:
    """The ground program of a rulesheet's text; RulesheetError for one that cannot be used."""
    command = [sys.executable, "-m", "referee.games.gdl.ground", where, str(GROUND_MEMORY)]
    try:
        done = subprocess.run(
            command, input=text.encode(), capture_output=True, timeout=seconds, check=False
        )
    except subprocess.TimeoutExpired:
        raise RulesheetError(
            where, None, f"the game does not ground within {seconds:g} s (too big a domain?)"
        ) from None
    if done.returncode == 0:
        return GroundProgram.from_json(done.stdout.decode())
    if done.returncode == 3:
        refusal = json.loads(done.stdout.decode())
        raise RulesheetError(where, refusal["line"], refusal["problem"])
    raise RulesheetError(
        where,
        None,
        f"the game does not ground within {GROUND_MEMORY >> 30} GiB of memory"
        if b"MemoryError" in done.stderr or b"std::bad_alloc" in done.stderr or done.returncode < 0
        else f"grounding failed: {_last_line(done.stderr)}",
    )


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"


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
        return 3
    sys.stdout.write(found.to_json())
    return 0


def _main() -> Any:
    sys.exit(_child(sys.argv[1:]))


if __name__ == "__main__":
    _main()
