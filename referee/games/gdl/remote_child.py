"""The child process of `remote.py`: the per-state reasoner, answering one line at a time.

Run as `python -m referee.games.gdl.remote_child MEMORY SECONDS`. Its address space is capped
at MEMORY bytes, and each question arms an alarm a little past SECONDS, whose default action
ends the process: the parent kills it at SECONDS, so the alarm only matters when the parent
is gone and `orphan.py` cannot see it. It reads JSON questions on standard input, one a line:

    {"op": "start", "rules": TEXT, "where": PATH, "facts": [SYMBOL...], "moves": [[SYMBOL...]...]}
    {"op": "view", "state": HEX}
    {"op": "next", "state": HEX, "moves": [INDEX...]}

and answers each with one JSON line: the answer's fields (`roles` and `initial`; `legal`,
`terminal` and `goals`; `state`), or `fault` for a fault of the rules, or `error` (then it
exits) when clingo failed or ran out of memory; and always the facts and moves met since
the last answer, as `[text, symbol]` pairs. States are bit sets in hexadecimal, which has
no length limit in Python's conversions.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from typing import Any, BinaryIO

from referee.errors import GameFault, RulesheetError
from referee.games.gdl.check import checked_rules
from referee.games.gdl.orphan import end_with_parent
from referee.games.gdl.per_state import PerState
from referee.games.gdl.remote import OUT_OF_MEMORY
from referee.games.gdl.syntax import parse_rulesheet

# What the alarm gives beyond the parent's deadline before the child ends itself.
_GRACE_S = 5


class _Answerer:
    """One reasoner, and how many of its facts and moves the parent already has."""

    def __init__(self, reasoner: PerState, facts: int, moves: list[int]) -> None:
        self.reasoner = reasoner
        self.facts = facts
        self.moves = moves + [0] * (len(reasoner.roles) - len(moves))

    def answer(self, question: dict[str, Any]) -> dict[str, Any]:
        op = question["op"]
        state = int(question.get("state", "0"), 16)
        if op == "view":
            return {
                "terminal": self.reasoner.terminal(state),
                "legal": self.reasoner.legal(state),
                "goals": self.reasoner.goals(state),
            }
        if op == "next":
            moves = question["moves"]
            following = format(self.reasoner.next(state, moves), "x")
            if not self.reasoner.imperfect:
                return {"state": following}
            return {"state": following, "sees": self.reasoner.sees(state, moves)}
        raise ValueError(f"unknown question {op!r}")

    def news(self) -> dict[str, Any]:
        """The facts and moves met since the last answer."""
        reasoner = self.reasoner
        facts = reasoner.facts_from(self.facts)
        moves = [reasoner.moves_from(role, seen) for role, seen in enumerate(self.moves)]
        self.facts += len(facts)
        self.moves = [seen + len(row) for seen, row in zip(self.moves, moves, strict=True)]
        return {"facts": facts, "moves": moves}


def _start(question: dict[str, Any]) -> _Answerer:
    where = question["where"]
    rules = checked_rules(parse_rulesheet(question["rules"], where), where)
    facts, moves = question["facts"], question["moves"]
    # The parent has what it gave: only what is met from here on is news to it.
    return _Answerer(PerState(rules, where, facts, moves), len(facts), [len(row) for row in moves])


def _write(out: BinaryIO, answer: dict[str, Any]) -> None:
    out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
    out.flush()


def _serve(memory: int, seconds: float) -> int:
    end_with_parent()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # Never above what this process may already use (a jailed player has a lower limit).
    ceiling = min(limit for limit in (memory, soft, hard) if limit != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    answerer: _Answerer | None = None
    for line in sys.stdin.buffer:
        question = json.loads(line)
        signal.alarm(int(seconds) + _GRACE_S)
        answer: dict[str, Any]
        try:
            if answerer is None:
                answerer = _start(question)
                reasoner = answerer.reasoner
                answer = {
                    "roles": reasoner.roles,
                    "initial": format(reasoner.initial, "x"),
                    "imperfect": reasoner.imperfect,
                }
            else:
                answer = answerer.answer(question)
        except GameFault as fault:
            if answerer is None:  # no reasoner to ask again
                _write(sys.stdout.buffer, {"error": str(fault)})
                return 1
            answer = {"fault": str(fault)}
        except (MemoryError, RulesheetError, RuntimeError, ValueError, KeyError) as error:
            text = str(error)
            memory_out = isinstance(error, MemoryError) or "bad_alloc" in text
            _write(sys.stdout.buffer, {"error": "memory" if memory_out else text})
            return OUT_OF_MEMORY if memory_out else 1
        finally:
            signal.alarm(0)
        if answerer is not None:
            answer.update(answerer.news())
        _write(sys.stdout.buffer, answer)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_serve(int(sys.argv[1]), float(sys.argv[2])))
    except MemoryError:
        sys.exit(OUT_OF_MEMORY)
