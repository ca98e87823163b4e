"""Validating a submitted player program: matches against random in every role, then checks.

For every selected game and role the program plays `matches_per_role` matches in one
process (reuse) and one more in a fresh process, under the `random` policy so that a fault
does not hide the rest of its behaviour. The evidence of all matches becomes one list of
checks, each pass, warn or fail with the first offence named precisely.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from referee.clock import CLOSE_S, QUIT_GRACE_S, SEND_LIMIT_S, Clocks
from referee.errors import FaultKind
from referee.games import Game
from referee.match import MatchSetup, play_match
from referee.players.base import PlayerSpec, quoted
from referee.players.builtin import player_spec
from referee.players.log import LOG_LIMIT
from referee.players.process import ProgramPlayer
from referee.policy import OUT_OF_THE_MATCH, Policy
from referee.records.signing import SigningKey, results_key
from referee.sandbox.isolation import Protections, machine_protections
from referee.sandbox.limits import Limits

SLOW_SHARE = 0.8  # a 95th percentile above this share of the play clock is a warning
NOISY_BYTES = 64 * 1024  # standard error per match above this is a warning


class Verdict(StrEnum):
    """A check's result, in increasing order of gravity."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"


_GRAVITY = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2}


@dataclass(frozen=True)
class Check:
    """One thing a tournament needs of a player, and whether this one does it."""

    name: str
    description: str
    verdict: Verdict
    detail: str


@dataclass(frozen=True)
class Report:
    """All checks of a validation, and how long it took against its bound."""

    command: tuple[str, ...]
    checks: list[Check]
    matches: int
    seconds: float
    bound_s: float
    limits: Limits
    protections: Protections

    @property
    def verdict(self) -> Verdict:
        return max((check.verdict for check in self.checks), key=_GRAVITY.__getitem__)

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
            "seconds": round(self.seconds, 1),
            "bound_s": round(self.bound_s, 1),
            "checks": [
                {"name": c.name, "verdict": str(c.verdict), "detail": c.detail} for c in self.checks
            ],
            "limits": asdict(self.limits),
            "protections": self.protections.to_json(),
        }


@dataclass
class _Evidence:
    """What the matches showed, offence by offence, each as `game, role, step: what`."""

    faults: dict[FaultKind, list[str]] = field(default_factory=dict)
    start_faults: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)
    reuse: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    quit: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)
    stderr: list[tuple[str, int]] = field(default_factory=list)
    matches: int = 0
    overrun: str = ""


def time_bound_s(games: Sequence[Game], matches_per_role: int, clocks: Clocks) -> float:
    """The longest a validation can take, whatever the program does."""
    total = 0.0
    for game in games:
        per_match = (clocks.start_ms + game.max_steps * clocks.play_ms) / 1000 + 2 * SEND_LIMIT_S
        sessions = len(game.roles) * 2  # a reused process and a fresh one, per role
        matches = len(game.roles) * (matches_per_role + 1)
        total += matches * per_match + sessions * CLOSE_S
    return total


async def validate(
    spec: PlayerSpec,
    games: Sequence[Game],
    matches_per_role: int,
    clocks: Clocks,
    workdir: Path,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Play the program against random in every role of every game and check what it did."""
    evidence = _Evidence()
    key, _ = results_key(workdir, None)
    total = sum(len(game.roles) * (matches_per_role + 1) for game in games)
    bound = time_bound_s(games, matches_per_role, clocks)
    started = time.monotonic()

    def played() -> None:
        evidence.matches += 1
        if progress is not None:
            progress(evidence.matches, total)

    try:
        async with asyncio.timeout(bound):
            for game in games:
                for role in game.roles:
                    for fresh, count in ((False, matches_per_role), (True, 1)):
                        await _session(
                            spec, game, role, count, fresh, clocks, workdir, key, evidence, played
                        )
    except TimeoutError:
        evidence.overrun = f"stopped at the bound of {bound:.0f} s"
    return Report(
        spec.argv,
        _checks(evidence, clocks),
        evidence.matches,
        time.monotonic() - started,
        bound,
        spec.limits,
        machine_protections(),
    )


async def _session(
    spec: PlayerSpec,
    game: Game,
    role: str,
    count: int,
    fresh: bool,
    clocks: Clocks,
    workdir: Path,
    key: SigningKey,
    evidence: _Evidence,
    played: Callable[[], None],
) -> None:
    """One process of the program playing `count` matches in `role` against random."""
    kind = "fresh" if fresh else "reused"
    where = f"{game.id}, {role}"
    match_ids = [f"{game.id}-{role}-{kind}-{number}" for number in range(1, count + 1)]
    players = [
        ProgramPlayer(
            spec if r == role else player_spec("random", "random"),
            workdir / "logs" / f"{match_ids[0]}.{r}.log",
        )
        for r in game.roles
    ]
    submitted = players[game.role_index(role)]
    try:
        for player in players:
            await player.start()
        for number, match_id in enumerate(match_ids, start=1):
            for player, r in zip(players, game.roles, strict=True):
                player.switch_log(workdir / "logs" / f"{match_id}.{r}.log")
            gone = number > 1 and not submitted.alive
            if gone:
                evidence.reuse.append(f"{where}: the process was gone before match {number}")
            seen = submitted.connection
            stray_before, stderr_before = seen.stray_count, seen.stderr_bytes
            setup = MatchSetup(match_id, game, players, clocks, Policy.RANDOM, seed=number)
            transcript = await play_match(setup, workdir / f"{match_id}.json", key)
            played()
            for fault in transcript.faults:
                if fault.role != role:
                    continue
                offence = f"{where}, step {fault.step}: {fault.detail}"
                # A process already gone fails reuse, above; it was not asked to start.
                if fault.step == 0 and not gone:
                    evidence.start_faults.append(f"{where}, {kind} process: {fault.detail}")
                    if number > 1:
                        evidence.reuse.append(f"{where}: match {number}: {fault.detail}")
                elif fault.step > 0:
                    evidence.faults.setdefault(fault.kind, []).append(offence)
                if fresh and (fault.step == 0 or fault.kind in OUT_OF_THE_MATCH):
                    evidence.fresh.append(offence)
            evidence.times_ms.extend(
                step.times_ms[role] for step in transcript.steps if role in step.times_ms
            )
            strays = seen.stray_count - stray_before
            if strays and seen.last_stray is not None:
                evidence.stray.append(
                    f"{where}, match {number}: {strays} line(s) nobody asked for,"
                    f" the last {quoted(seen.last_stray, 60)}"
                )
            evidence.stderr.append((match_id, seen.stderr_bytes - stderr_before))
    finally:
        await asyncio.gather(*(player.close() for player in players), return_exceptions=True)
    ending = submitted.ending
    if ending is not None and ending.told_to_quit and not ending.exited_after_quit:
        evidence.quit.append(
            f"{where}, {kind} process: still running {QUIT_GRACE_S * 1000:.0f} ms after quit"
        )
    if ending is not None and ending.left_behind:
        evidence.left_behind.append(
            f"{where}, {kind} process: {ending.left_behind} process(es) still running after it"
            " exited"
        )


def _first(offences: list[str]) -> str:
    more = f" (and {len(offences) - 1} more)" if len(offences) > 1 else ""
    return offences[0] + more


def _verdict(offences: list[str], good: str) -> tuple[Verdict, str]:
    return (Verdict.FAIL, _first(offences)) if offences else (Verdict.PASS, good)


def _checks(evidence: _Evidence, clocks: Clocks) -> list[Check]:
    faults = evidence.faults
    output = faults.get(FaultKind.PROTOCOL, []) + evidence.stray
    rows = [
        ("start", "answers ready within the start clock", evidence.start_faults, "every start"),
        ("legal moves", "plays only legal moves", faults.get(FaultKind.ILLEGAL, []), "all legal"),
        ("play clock", "answers every go within the play clock",
         faults.get(FaultKind.TIMEOUT, []), "no timeouts"),
        ("clean output", "writes only protocol lines and # comments", output, "clean"),
        ("stays up", "runs to the end of every match", faults.get(FaultKind.CRASH, []),
         "no crashes"),
        ("limits", "stays within its memory, CPU and process limits",
         faults.get(FaultKind.RESOURCE, []), "within limits"),
        ("reuse", "plays several matches in one process", evidence.reuse, "matches in a row"),
        ("fresh start", "plays a match in a freshly started process", evidence.fresh, "fine"),
        ("quit", f"exits within {QUIT_GRACE_S * 1000:.0f} ms of quit", evidence.quit,
         "exits on quit"),
        ("no leftovers", "leaves no process behind", evidence.left_behind, "none left"),
    ]  # fmt: skip
    checks = [
        Check(name, description, *_verdict(offences, good))
        for name, description, offences, good in rows
    ]
    checks.append(_response_times(evidence.times_ms, clocks.play_ms))
    checks.append(_stderr(evidence.stderr))
    checks.append(
        Check(
            "bounded",
            "the validation ends within its time bound",
            Verdict.FAIL if evidence.overrun else Verdict.PASS,
            evidence.overrun or f"{evidence.matches} matches",
        )
    )
    return checks


def _response_times(times: list[float], play_ms: int) -> Check:
    description = f"95th percentile of response times within {SLOW_SHARE:.0%} of the play clock"
    if not times:
        return Check("response time", description, Verdict.WARN, "no answers to measure")
    ordered = sorted(times)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    detail = (
        f"median {statistics.median(ordered):.0f} ms, 95th percentile {p95:.0f} ms, "
        f"max {ordered[-1]:.0f} ms of {play_ms} ms ({len(ordered)} answers)"
    )
    slow = p95 > SLOW_SHARE * play_ms
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
