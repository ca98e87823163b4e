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

from referee.errors import RulesheetError

# What a rulesheet may take to ground (hexPie, the biggest of the five originals: about 3 s).
GROUND_SECONDS = 60.0
GROUND_MEMORY = 4 << 30
# The grounder's exit status for a rulesheet it refuses, the line and problem on its output.
REFUSED = 3


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
    command = [sys.executable, "-m", "referee.games.gdl.grounder", where, str(GROUND_MEMORY)]
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
    if done.returncode == REFUSED:
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
