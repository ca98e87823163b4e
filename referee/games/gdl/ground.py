"""A rulesheet's ground program, from clingo's grounder, in a child process with limits.

Grounding is the step that can blow up (a rule whose variables range over a big domain, a
recursion through function terms that never ends), and so is compiling what it grounds
(`compile.py`), so both run in a child process under a memory limit and deadlines; the
parent only ever sees the compiled game or one line of why not. The child parses and checks
the rulesheet too, so every refusal comes out the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from enum import Enum

from referee.errors import RulesheetError
from referee.games.gdl.compile import Translation

# What a rulesheet may take to ground whole (hexPie, the biggest of the five originals: 2 s
# and 180,000 rules). A bigger game is evaluated one state at a time instead: its whole
# ground program would take longer to build and compile than a match takes to play.
WHOLE_SECONDS = 10.0
WHOLE_RULES = 1_000_000
# What compiling a ground program may take once it is grounded (hexPie: 4 s), and what the
# compiled game the referee loads may be (hexPie: 15 MiB, which take 41 MiB loaded).
COMPILE_SECONDS = 60.0
WHOLE_BYTES = 128 << 20
# What the first state of such a game may take to ground, in the same child process.
GROUND_SECONDS = 60.0
GROUND_MEMORY = 4 << 30
# The grounder's exit statuses: a rulesheet it refuses (the line and problem on its output),
# a whole ground program that passed WHOLE_RULES, WHOLE_SECONDS or WHOLE_BYTES.
REFUSED = 3
TOO_BIG = 4
TOO_SLOW = 5
TOO_LARGE = 6


class TooBig(RulesheetError):
    """The whole game does not ground within the budget; one state at a time may."""


class Mode(Enum):
    """What the grounder child grounds: the whole game, or the start and first state."""

    WHOLE = "whole"
    FIRST_STATE = "first-state"


def ground(text: str, where: str) -> Translation:
    """The whole game of a rulesheet's text, grounded and compiled in the child.

    RulesheetError for a rulesheet that cannot be used; TooBig for one whose whole program
    passes the budget of time, memory or size.
    """
    done = _run(text, where, Mode.WHOLE)
    if done.returncode != 0:
        raise _failure(done, where, Mode.WHOLE)
    return Translation.from_bytes(done.stdout)


def probe(text: str, where: str) -> None:
    """Check that a rulesheet's start and first state ground; RulesheetError if not."""
    done = _run(text, where, Mode.FIRST_STATE)
    if done.returncode != 0:
        raise _failure(done, where, Mode.FIRST_STATE)


def _run(text: str, where: str, mode: Mode) -> subprocess.CompletedProcess[bytes]:
    # Read at each call, not bound at import: tests lower them.
    seconds = WHOLE_SECONDS if mode is Mode.WHOLE else GROUND_SECONDS
    # The child gives up grounding the whole game at WHOLE_SECONDS itself, and then has
    # COMPILE_SECONDS to compile it: this deadline is for a child that cannot stop.
    deadline = seconds + COMPILE_SECONDS if mode is Mode.WHOLE else seconds
    command = [sys.executable, "-m", "referee.games.gdl.ground_child", where, mode.value]
    try:
        return subprocess.run(
            [*command, str(GROUND_MEMORY), str(WHOLE_RULES), str(seconds), str(WHOLE_BYTES)],
            input=text.encode(),
            capture_output=True,
            timeout=deadline,
            check=False,
        )
    except subprocess.TimeoutExpired:
        problem = f"{_what(mode)} does not ground within {deadline:g} s"
        raise _over_budget(mode)(where, None, problem) from None


def _failure(done: subprocess.CompletedProcess[bytes], where: str, mode: Mode) -> RulesheetError:
    if done.returncode == REFUSED:
        refusal = json.loads(done.stdout.decode())
        return RulesheetError(where, refusal["line"], refusal["problem"])
    if done.returncode == TOO_BIG:
        return TooBig(where, None, f"the whole game grounds to over {WHOLE_RULES:,} rules")
    if done.returncode == TOO_SLOW:
        return TooBig(where, None, f"the whole game does not ground within {WHOLE_SECONDS:g} s")
    if done.returncode == TOO_LARGE:
        within = f"{GROUND_MEMORY >> 30} GiB and to {WHOLE_BYTES >> 20} MiB"
        return TooBig(where, None, f"the whole game does not compile within {within}")
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
