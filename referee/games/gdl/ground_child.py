"""The child process of `ground.py`: parse, check, ground and compile a rulesheet.

Run as `python -m referee.games.gdl.ground_child WHERE MODE MEMORY RULES SECONDS BYTES` with
the rulesheet on standard input. In the WHOLE mode it grounds the whole game and writes it
compiled (`compile.Translation`), or exits TOO_BIG once the program passes RULES rules,
TOO_SLOW when grounding passes SECONDS, TOO_LARGE when the compiled game passes
BYTES; in the FIRST_STATE mode it grounds the start and first state as the per-state
reasoner would, and writes nothing. Either exits REFUSED with the line and problem of a
rulesheet it refuses. Neither clingo nor Python's compiler ever works on a rulesheet in
the referee's own process.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
from collections.abc import Sequence

import clingo

from referee.errors import GameFault, RulesheetError
from referee.games.gdl.asp import Names, program
from referee.games.gdl.check import Rule, checked_rules, defines_percepts, negation_cycle
from referee.games.gdl.compile import GroundProgram, Translation, Unstratified, translate
from referee.games.gdl.decompose import decompose
from referee.games.gdl.ground import (
    REFUSED,
    TOO_BIG,
    TOO_LARGE,
    TOO_SLOW,
    Mode,
)
from referee.games.gdl.orphan import end_with_parent
from referee.games.gdl.per_state import PerState
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
    ("sees", 2),
)


def compile_whole(text: str, where: str, most: int, seconds: float) -> Translation:
    """Parse, check, ground and compile a rulesheet here; exit TOO_BIG past `most` ground
    rules, TOO_SLOW when grounding passes `seconds`."""
    rules = checked_rules(parse_rulesheet(text, where), where)
    # clingo lets go of the GIL while it grounds, so this timer runs meanwhile.
    deadline = threading.Timer(seconds, os._exit, [TOO_SLOW])
    deadline.start()
    try:
        ground = ground_rules(rules, where, most)
    finally:
        deadline.cancel()
    try:
        return translate(ground, defines_percepts(rules))
    except Unstratified:
        raise negation_cycle(rules, where) from None
    except (MemoryError, SystemError):
        # Python's compiler past the address-space cap; it can fail without saying why
        # (SystemError: kalaha_2009, whose compiling took 4 GiB in the referee's process).
        os._exit(TOO_LARGE)


def ground_rules(rules: Sequence[Rule], where: str, most: int) -> GroundProgram:
    """Ground checked rules here; exit TOO_BIG past `most` ground rules."""
    names = Names()
    source = program(decompose(rules), names)
    observer = _Observer(most)
    messages: list[str] = []
    control = clingo.Control(["--warn=none"], logger=lambda _code, text: messages.append(text))
    control.register_observer(observer)
    try:
        control.add("base", [], source)
        control.ground([("base", [])])
    except RuntimeError as error:
        said = "; ".join(" ".join(message.split()) for message in messages) or str(error)
        raise RulesheetError(where, None, f"clingo cannot ground it: {said}") from None
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

    def __init__(self, most: int) -> None:
        self.most = most
        self.rules: list[tuple[int, list[int], list[int]]] = []

    def rule(self, choice: bool, head: Sequence[int], body: Sequence[int]) -> None:
        if body and len(head) == 1:
            positive = [literal for literal in body if literal > 0]
            negative = [-literal for literal in body if literal < 0]
            self.rules.append((head[0], positive, negative))
            if len(self.rules) > self.most:
                # Straight out: clingo cannot be stopped mid-grounding from a callback.
                os._exit(TOO_BIG)


def _child(argv: Sequence[str]) -> int:
    where, mode, memory, most = argv[0], Mode(argv[1]), int(argv[2]), int(argv[3])
    seconds, most_bytes = float(argv[4]), int(argv[5])
    end_with_parent()
    # Never above what this process may already use (a jailed player has a lower limit).
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = min(limit for limit in (memory, soft, hard) if limit != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    try:
        if mode is Mode.WHOLE:
            compiled = compile_whole(text, where, most, seconds).to_bytes()
            if len(compiled) > most_bytes:
                return TOO_LARGE
            sys.stdout.buffer.write(compiled)
        else:
            first_state(text, where)
    except RulesheetError as error:
        sys.stdout.write(json.dumps({"line": error.line, "problem": error.problem}))
        return REFUSED
    return 0


def first_state(text: str, where: str) -> None:
    """Ground a rulesheet's start and first state as the per-state reasoner does."""
    try:
        reasoner = PerState(checked_rules(parse_rulesheet(text, where), where), where)
        reasoner.legal(reasoner.initial)
    except GameFault:
        pass  # It grounds: a fault of the rules there is the game's, told when it is played.


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
