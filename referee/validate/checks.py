"""From the evidence of a validation to its checks: each pass, warn or fail, with the first
offence, the pattern the offences make, the known cause and how to fix it."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from referee.clock import QUIT_GRACE_S, Clocks
from referee.plaintext import counted
from referee.players.base import quoted
from referee.players.http import Exchange
from referee.players.log import LOG_LIMIT
from referee.sandbox.isolation import Protections
from referee.sandbox.limits import Limits
from referee.validate.evidence import Evidence, Late, Offence, Process
from referee.validate.mistakes import SAFE_SHARE, Language, Mistake, advice, diagnose

# The answers to one kind of request shown one by one, at most; more are counted.
SHOWN_ANSWERS = 3
NOISY_BYTES = 64 * 1024  # standard error per match above this is a warning


class Verdict(StrEnum):
    """A check's result, in increasing order of gravity; or that nothing put it to the test,
    which says neither that the program does what it checks nor that it does not."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NOT_RUN = "not run"


_GRAVITY = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2}


@dataclass(frozen=True)
class Check:
    """One thing a tournament needs of a player, and whether this one does it.

    A failing check may name its known cause and say how to fix it (`advice`), and show what
    the program last wrote to standard error before it crashed (`stderr`), and to standard
    output when it died at its start (`stdout`).
    """

    name: str
    description: str
    verdict: Verdict
    detail: str
    cause: Mistake | None = None
    advice: str = ""
    stderr: tuple[str, ...] = ()
    stdout: tuple[str, ...] = ()


@dataclass(frozen=True)
class Requests:
    """What a GGP player at a URL was sent of one kind of request, and what came of it:
    each different answer and each reason none came, most frequent first, and the times."""

    request: str  # START, PLAY, STOP or ABORT
    sent: int
    answers: tuple[tuple[str, int], ...]
    failures: tuple[tuple[str, int], ...]
    median_ms: float
    max_ms: float

    def summary(self) -> str:
        """`START 4: answered 4 ('ready' 4); median 3 ms, max 5 ms`."""
        answered = sum(count for _, count in self.answers)
        parts = [f"{self.request} {self.sent}: answered {answered}"]
        if self.answers and len(self.answers) <= SHOWN_ANSWERS:
            parts[0] += " (" + ", ".join(f"{quoted(a, 40)} {n}" for a, n in self.answers) + ")"
        elif self.answers:
            parts[0] += f" ({len(self.answers)} different answers)"
        parts += [f"no answer {n}: {why}" for why, n in self.failures]
        parts.append(f"median {self.median_ms:.0f} ms, max {self.max_ms:.0f} ms")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "sent": self.sent,
            "answers": dict(self.answers),
            "failures": dict(self.failures),
            "median_ms": round(self.median_ms, 1),
            "max_ms": round(self.max_ms, 1),
        }


def requests(exchanges: Sequence[Exchange]) -> tuple[Requests, ...]:
    """The requests sent to a GGP player, by kind, in the order first sent."""
    kinds: dict[str, list[Exchange]] = {}
    for exchange in exchanges:
        kinds.setdefault(exchange.request, []).append(exchange)
    result = []
    for kind, sent in kinds.items():
        answers = Counter(e.answer.strip() for e in sent if e.answer is not None)
        failures = Counter(e.failure for e in sent if e.answer is None)
        times = [e.ms for e in sent]
        result.append(
            Requests(
                kind,
                len(sent),
                tuple(answers.most_common()),
                tuple(failures.most_common()),
                statistics.median(times),
                max(times),
            )
        )
    return tuple(result)


@dataclass(frozen=True)
class Report:
    """All checks of a validation, how long it took against its bound, and whether it
    stopped early (`stopped` says why, `skipped` how many matches it did not play).

    A program is run under `limits` and `protections`; a GGP player at a URL is a server
    that none of them reach: what it was sent, and what came back, is `requests`.
    """

    command: tuple[str, ...]
    checks: list[Check]
    matches: int
    seconds: float
    bound_s: float
    limits: Limits | None
    protections: Protections | None
    stopped: str = ""
    skipped: int = 0
    requests: tuple[Requests, ...] = ()

    @property
    def warnings(self) -> list[str]:
        """What the machine does not give that may keep a program from running."""
        memory = self.protections.memory_warning if self.protections is not None else ""
        return [memory] if memory else []

    @property
    def verdict(self) -> Verdict:
        """The gravest result of the checks that ran: pass, warn or fail."""
        ran = [check.verdict for check in self.checks if check.verdict is not Verdict.NOT_RUN]
        return max(ran, key=_GRAVITY.__getitem__, default=Verdict.PASS)

    def summary(self) -> str:
        """The verdict in words: `PASS`, `PASS with warnings (...)` or `FAIL (...)`."""
        failed = [c.name for c in self.checks if c.verdict is Verdict.FAIL]
        warned = [c.name for c in self.checks if c.verdict is Verdict.WARN]
        if failed:
            return f"FAIL ({', '.join(failed)})"
        return "PASS" + (f" with warnings ({', '.join(warned)})" if warned else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "command": list(self.command),
            "verdict": str(self.verdict),
            "matches": self.matches,
            "skipped": self.skipped,
            "stopped": self.stopped or None,
            "seconds": round(self.seconds, 1),
            "bound_s": round(self.bound_s, 1),
            "checks": [
                {
                    "name": c.name,
                    "verdict": str(c.verdict),
                    "detail": c.detail,
                    "cause": c.cause,
                    "advice": c.advice or None,
                    "stderr": list(c.stderr),
                    "stdout": list(c.stdout),
                }
                for c in self.checks
            ],
            "limits": asdict(self.limits) if self.limits is not None else None,
            "protections": self.protections.to_json() if self.protections is not None else None,
            "warnings": self.warnings,
            "requests": [sent.to_json() for sent in self.requests],
        }


_DESCRIPTIONS = {
    "start": ("answers ready within the start clock", "every start"),
    "legal moves": ("plays only legal moves", "all legal"),
    "play clock": ("answers every go within the play clock", "no timeouts"),
    "clean output": ("writes only protocol lines and # comments", "clean"),
    "stays up": ("runs to the end of every match, and on to the next", "no crashes"),
    "limits": ("stays within its memory, CPU and process limits", "within limits"),
    "reuse": ("plays several matches in one process", "matches in a row"),
    "fresh start": ("plays a match in a freshly started process", "fine"),
    "quit": (f"exits within {QUIT_GRACE_S * 1000:.0f} ms of quit", "exits on quit"),
    "no leftovers": ("leaves no process behind", "none left"),
}


def checks(evidence: Evidence, clocks: Clocks, program: Language) -> list[Check]:
    """Every check, judged on the evidence."""
    causes = diagnose(evidence, program, clocks.play_ms)
    unchecked = evidence.unchecked()
    result = []
    for name, offences in evidence.by_check().items():
        description, good = _DESCRIPTIONS[name]
        if not offences:
            if name in unchecked:
                result.append(Check(name, description, Verdict.NOT_RUN, unchecked[name]))
            else:
                result.append(Check(name, description, Verdict.PASS, good))
            continue
        cause = causes.get(name)
        if cause and cause.mistake is Mistake.ANSWERS_NO_ANSWER:
            # The lines it wrote unasked come first: a fault they caused is a timing accident.
            offences = sorted(offences, key=lambda offence: offence.step is not None)
        signs = [_pattern(name, offences, evidence), cause.sign if cause else ""]
        if name == "play clock":
            signs.append(_busy(evidence))
        detail = "; ".join(part for part in [_first(offences), *signs] if part)
        mistake = cause.mistake if cause else None
        fix = advice(mistake, program, clocks.start_ms, clocks.play_ms) if mistake else ""
        fix = cause.advice if cause and cause.advice else fix
        stderr = tuple(next((offence.stderr for offence in offences if offence.stderr), []))
        stdout: tuple[str, ...] = ()
        if mistake is Mistake.DIES_AT_START and evidence.died is not None:
            stdout, stderr = evidence.died.stdout, evidence.died.stderr
        result.append(Check(name, description, Verdict.FAIL, detail, mistake, fix, stderr, stdout))
    result.append(_rules(evidence.rules_ended, evidence.matches))
    result.append(_response_times(evidence.times_ms, evidence.late, clocks.play_ms))
    result.append(_stderr(evidence.stderr))
    result.append(
        Check(
            "bounded",
            "the validation ends within its time bound",
            Verdict.FAIL if evidence.overrun else Verdict.PASS,
            evidence.overrun or f"{evidence.matches} matches",
        )
    )
    return result


def _first(offences: list[Offence]) -> str:
    more = f" (and {len(offences) - 1} more)" if len(offences) > 1 else ""
    return f"{offences[0]}{more}"


def _pattern(check: str, offences: list[Offence], evidence: Evidence) -> str:
    """What the offences of `check` have in common, when there are several and it says
    something the check does not say itself."""
    if len(offences) < 2:
        return ""
    if all(offence.first_move for offence in offences):
        return f"all {len(offences)} at its first move of a match"
    if all(offence.step == 1 for offence in offences):
        return f"all {len(offences)} at step 1"
    if check != "reuse" and all(
        offence.process is Process.REUSED and offence.match > 1 for offence in offences
    ):
        return "only in a reused process, from its second match on"
    if check not in ("start", "reuse") and all(offence.step == 0 for offence in offences):
        return f"all {len(offences)} at the start of a match"
    if len({(offence.process, offence.match) for offence in offences}) == evidence.matches:
        return "in every match"
    return ""


def _busy(evidence: Evidence) -> str:
    """What followed from its late answers, told with them: a process replaced as it still
    owed some a play clock after its match, and a quit it did not obey while still busy with
    an earlier request. Neither is a fault of its own, nor fails a check."""
    parts = []
    if evidence.replaced:
        processes = counted(len(evidence.replaced), "process", "processes")
        parts.append(
            f"{processes} still owed late answers a play clock after a match ended, and a"
            " fresh one played the next match, as in a tournament"
        )
    if evidence.busy_quits:
        processes = counted(len(evidence.busy_quits), "process", "processes")
        parts.append(
            f"{processes} still busy with a late answer did not exit within"
            f" {QUIT_GRACE_S * 1000:.0f} ms of quit"
        )
    if not parts:
        return ""
    return f"{' and '.join(parts)}: a consequence of its late answers, not a fault of its own"


def _rules(ended: list[str], matches: int) -> Check:
    description = "the rules compute every state (their faults are not the program's)"
    if not ended:
        return Check("rules", description, Verdict.PASS, "every state computed")
    # No fault of the program, but the rest of those matches was never played: like an
    # answer time never measured, a warning, not a pass.
    detail = (
        f"{len(ended)} of {matches} matches ended by a fault of the rules, not of the program,"
        f" and were not checked past it; the first: {ended[0]}"
    )
    return Check("rules", description, Verdict.WARN, detail)


def _response_times(times: list[float], late: list[Late], play_ms: int) -> Check:
    """The times of its moves, those answered late included: each by its own time
    (`Late.own_ms`), and one never answered as over the clock and every time measured, the
    slowest of all: so the maximum is never below the 95th percentile."""
    description = f"95th percentile of response times within {SAFE_SHARE:.0%} of the play clock"
    if not times and not late:
        # What kept it from answering is a check of its own, already told.
        return Check("response time", description, Verdict.NOT_RUN, "no answers to measure")
    ordered = sorted([*times, *(math.inf if t.own_ms is None else t.own_ms for t in late)])
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]

    # What a move never answered is known to be over.
    floor = max([play_ms, *(ms for ms in ordered if math.isfinite(ms))])

    def shown(ms: float) -> str:
        return f"{ms:.0f} ms" if math.isfinite(ms) else f"over {floor:.0f} ms"

    told = f"{len(ordered)} answers"
    if late:
        never = sum(t.own_ms is None for t in late)
        unanswered = f", {never} of them never answered" if never else ""
        told = f"{len(ordered)} moves, {len(late)} late{unanswered}"
    detail = (
        f"median {shown(statistics.median(ordered))}, 95th percentile {shown(p95)}, "
        f"max {shown(ordered[-1])} of {play_ms} ms ({told})"
    )
    slow = p95 > SAFE_SHARE * play_ms
    return Check("response time", description, Verdict.WARN if slow else Verdict.PASS, detail)


def _stderr(volumes: list[tuple[str, int]]) -> Check:
    description = f"standard error under {LOG_LIMIT // 1024} KiB per match (the log's cap)"
    if not volumes:
        return Check("stderr", description, Verdict.PASS, "nothing written")
    where, most = max(volumes, key=lambda item: item[1])
    detail = f"at most {most / 1024:.1f} KiB per match ({where})"
    if most > LOG_LIMIT:
        return Check("stderr", description, Verdict.FAIL, detail + "; the log was cut")
    return Check(
        "stderr", description, Verdict.WARN if most > NOISY_BYTES else Verdict.PASS, detail
    )
