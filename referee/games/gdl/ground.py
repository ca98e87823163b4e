"""A rulesheet's ground program, from clingo's grounder, in a child process with limits.

Grounding is the step that can blow up (a rule whose variables range over a big domain, a
recursion through function terms that never ends), so it runs in a child process under a
memory limit and a deadline; the parent only ever sees a ground program or one line of why
not. The child parses and checks the rulesheet too, so every refusal comes out the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from enum import Enum

from referee.errors import RulesheetError

# What a rulesheet may take to ground whole (hexPie, the biggest of the five originals: 2 s
# and 180,000 rules). A bigger game is evaluated one state at a time instead: its whole
# ground program would take longer to build and compile than a match takes to play.
WHOLE_SECONDS = 10.0
WHOLE_RULES = 1_000_000
# What the first state of such a game may take to ground, in the same child process.
GROUND_SECONDS = 60.0
GROUND_MEMORY = 4 << 30
# The grounder's exit statuses: a rulesheet it refuses (the line and problem on its output),
# and a whole ground program that passed WHOLE_RULES.
REFUSED = 3
TOO_BIG = 4


class TooBig(RulesheetError):
    """The whole game does not ground within the budget; one state at a time may."""


class Mode(Enum):
    """What the grounder child grounds: the whole game, or the start and first state."""

    WHOLE = "whole"
    FIRST_STATE = "first-state"


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


def ground(text: str, where: str) -> GroundProgram:
    """The whole ground program of a rulesheet's text.

    RulesheetError for a rulesheet that cannot be used; TooBig for one whose whole program
    passes the budget of time, memory or size.
    """
    done = _run(text, where, Mode.WHOLE)
    if done.returncode != 0:
        raise _failure(done, where, Mode.WHOLE)
    return GroundProgram.from_json(done.stdout.decode())


def probe(text: str, where: str) -> None:
    """Check that a rulesheet's start and first state ground; RulesheetError if not."""
    done = _run(text, where, Mode.FIRST_STATE)
    if done.returncode != 0:
        raise _failure(done, where, Mode.FIRST_STATE)


def _run(text: str, where: str, mode: Mode) -> subprocess.CompletedProcess[bytes]:
    # Read at each call, not bound at import: tests lower them.
    seconds = WHOLE_SECONDS if mode is Mode.WHOLE else GROUND_SECONDS
    command = [sys.executable, "-m", "referee.games.gdl.grounder", where, mode.value]
    try:
        return subprocess.run(
            [*command, str(GROUND_MEMORY), str(WHOLE_RULES)],
            input=text.encode(),
            capture_output=True,
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:
        problem = f"{_what(mode)} does not ground within {seconds:g} s"
        raise _over_budget(mode)(where, None, problem) from None


def _failure(done: subprocess.CompletedProcess[bytes], where: str, mode: Mode) -> RulesheetError:
    if done.returncode == REFUSED:
        refusal = json.loads(done.stdout.decode())
        return RulesheetError(where, refusal["line"], refusal["problem"])
    if done.returncode == TOO_BIG:
        return TooBig(where, None, f"the whole game grounds to over {WHOLE_RULES:,} rules")
    if b"MemoryError" in done.stderr or b"std::bad_alloc" in done.stderr or done.returncode < 0:
        memory = f"{GROUND_MEMORY >> 30} GiB of memory"
        return _over_budget(mode)(where, None, f"{_what(mode)} does not ground within {memory}")
    return RulesheetError(where, None, f"grounding failed: {_last_line(done.stderr)}")


def _over_budget(mode: Mode) -> type[RulesheetError]:
    """Past a limit the whole game may still be played one state at a time; a state may not."""
    return TooBig if mode is Mode.WHOLE else RulesheetError


def _what(mode: Mode) -> str:
    return "the game" if mode is Mode.WHOLE else "even its first state"


def _last_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"
