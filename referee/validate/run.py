"""Playing a submitted program against random in every role of every game, for the evidence.

For every selected game and role the program plays `matches_per_role` matches in one
process (reuse) and one more in a fresh process, under the `random` policy so that a fault
does not hide the rest of its behaviour. A reused process that still owes late answers
after a match is let run to write them, and replaced if they do not come, by the rule a
tournament follows (`ProgramPlayer.settled`). A GGP player at a URL is a server that outlives
its matches: it plays the `matches_per_role` matches only, and the checks of a process
(its limits, standard error, reuse, a fresh start, quit, leftovers) do not apply. Once
the evidence is conclusive (nothing answered to the first two starts, or the same check
failed in every match so far) the rest is skipped, unless the validation is thorough.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from referee.clock import CLOSE_S, QUIT_GRACE_S, SEND_LIMIT_S, SETTLE_S, Clocks
from referee.errors import FaultKind, MoveParseError
from referee.games import Game
from referee.match import MatchSetup, play_match
from referee.plaintext import counted
from referee.players.base import Player, PlayerKind, PlayerSpec, quoted
from referee.players.builtin import make_player, player_spec
from referee.players.connection import LateAnswer, PlayerConnection
from referee.players.http import HttpPlayer
from referee.players.process import ProgramPlayer
from referee.players.startup import diagnose_start
from referee.players.trace import Trace, TraceChannel, trace_channel
from referee.policy import OUT_OF_THE_MATCH, Policy
from referee.records.signing import SigningKey, results_key
from referee.records.transcript import Transcript
from referee.sandbox.isolation import machine_protections
from referee.validate.checks import Report, checks, requests
from referee.validate.evidence import (
    FAULT_CHECKS,
    Evidence,
    Late,
    Offence,
    Process,
    Reply,
    StartDeath,
)
from referee.validate.mistakes import language

STDERR_LINES = 8  # the last lines of standard error a report shows for a crash
STDOUT_LINES = 4  # ... and of standard output, for a program that died at its start
# How much longer than the start clock a silent start's late ready is awaited, to measure it.
LATE_READY_S = 5.0


@dataclass(frozen=True)
class _Session:
    """One process of the program playing `count` matches in `role` of `game`."""

    game: Game
    role: str
    process: Process
    count: int

    @property
    def where(self) -> str:
        return f"{self.game.id}, {self.role}"


def time_bound_s(
    games: Sequence[Game], matches_per_role: int, clocks: Clocks, server: bool = False
) -> float:
    """The longest a validation can take, whatever the program does."""
    total = 0.0
    # A GGP player is also sent PLAY on its forced turns, each answered within the play clock.
    plays_per_step = 2 if server else 1
    for game in games:
        per_match = (
            clocks.start_ms + plays_per_step * game.max_steps * clocks.play_ms
        ) / 1000 + 2 * SEND_LIMIT_S
        sessions = len(game.roles) * 2  # a reused process and a fresh one, per role
        matches = len(game.roles) * (matches_per_role + 1)
        # A reused process still owing late answers after a match is let run to write them,
        # then replaced: at most before each of its matches but the first.
        replaced = 0 if server else len(game.roles) * (matches_per_role - 1)
        total += matches * per_match + sessions * CLOSE_S + replaced * (SETTLE_S + CLOSE_S)
    return total


# Checks that only a process can fail.
PROCESS_CHECKS = frozenset({"limits", "reuse", "fresh start", "quit", "no leftovers", "stderr"})


def _sessions(games: Sequence[Game], matches_per_role: int, server: bool) -> Iterator[_Session]:
    for game in games:
        for role in game.roles:
            yield _Session(game, role, Process.REUSED, matches_per_role)
            if not server:
                yield _Session(game, role, Process.FRESH, 1)


async def validate(
    spec: PlayerSpec,
    games: Sequence[Game],
    matches_per_role: int,
    clocks: Clocks,
    workdir: Path,
    progress: Callable[[int, int], None] | None = None,
    thorough: bool = False,
    trace: Trace | None = None,
) -> Report:
    """Play the program against random in every role of every game and check what it did.

    `thorough` plays every match even when the verdict is already certain. `trace`, when
    given, is told every line exchanged with the program.
    """
    server = spec.kind is PlayerKind.HTTP
    total = sum(len(game.roles) * (matches_per_role + (not server)) for game in games)
    bound = time_bound_s(games, matches_per_role, clocks, server)
    key, _ = results_key(workdir, None)
    run = _Validation(spec, clocks, workdir, key, thorough, trace, total, progress)
    started = time.monotonic()
    evidence = run.evidence
    try:
        async with asyncio.timeout(bound):
            for session in _sessions(games, matches_per_role, server):
                await run.play(session)
                if evidence.stopped:
                    break
    except TimeoutError:
        evidence.overrun = f"stopped at the bound of {bound:.0f} s"
    skipped = total - evidence.matches
    stopped = ""
    if evidence.stopped and skipped:
        stopped = (
            f"stopped after {evidence.matches} of {total} matches, as {evidence.stopped};"
            " --thorough plays them all"
        )
    judged = checks(evidence, clocks, language(spec.argv))
    return Report(
        spec.command,
        [check for check in judged if not (server and check.name in PROCESS_CHECKS)],
        evidence.matches,
        time.monotonic() - started,
        bound,
        # A server at a URL runs where none of this machine's limits and protections reach.
        None if server else spec.limits,
        None if server else machine_protections(),
        stopped,
        skipped,
        requests(evidence.exchanges),
    )


@dataclass
class _Validation:
    """A validation under way: how its matches are played, and the evidence they give."""

    spec: PlayerSpec
    clocks: Clocks
    workdir: Path
    key: SigningKey
    thorough: bool
    trace: Trace | None
    total: int
    progress: Callable[[int, int], None] | None
    evidence: Evidence = field(default_factory=Evidence)

    def _submitted(self, channel: TraceChannel | None, log: Path) -> Player:
        """The submitted player; one at a URL tells the evidence every request it is sent."""
        if self.spec.kind is PlayerKind.HTTP:
            return HttpPlayer(self.spec, channel, self.evidence.exchanges.append)
        return make_player(self.spec, log, trace=channel)

    async def play(self, session: _Session) -> None:
        """One process of the program playing its session's matches against random."""
        game, role, where = session.game, session.role, session.where
        logs = self.workdir / "logs"
        match_ids = [
            f"{game.id}-{role}-{session.process}-{number}" for number in range(1, session.count + 1)
        ]
        channel = trace_channel(self.trace, self.spec.name)
        players = [
            self._submitted(channel, logs / f"{match_ids[0]}.{r}.log")
            if r == role
            else make_player(player_spec("random", "random"), logs / f"{match_ids[0]}.{r}.log")
            for r in game.roles
        ]
        index = game.role_index(role)
        submitted = players[index]
        evidence = self.evidence
        stderr: list[str] = []  # its last words, filled in when its process has ended
        crashed = False  # in a match of this process: what follows is no new offence
        timed_out: list[_TimedOut] = []  # its moves not answered in time, in order
        died = ""  # why it died at a start, if it did: its last words say more
        first = 1  # the number of the first match of the process playing now
        last = 0  # ... and of the last match played
        try:
            for player in players:
                await player.start()
            for number, match_id in enumerate(match_ids, start=1):
                # As in a tournament: one more of its clock to write the late answers it owes,
                # or a fresh process plays the next match (one gone meanwhile is told below).
                if (
                    number > first
                    and isinstance(submitted, ProgramPlayer)
                    and submitted.alive
                    and submitted.connection.owed
                    and not await submitted.settled()
                    and submitted.alive
                ):
                    busy = _late_moves_owed(submitted.connection)
                    text = (
                        f"{where}, {session.process} process: replaced after match"
                        f" {number - 1}, still owing the answers to"
                        f" {counted(busy, 'late move')} a play clock after it ended"
                    )
                    evidence.replaced.append(Offence(text, session.process, number - 1))
                    await submitted.close()
                    self._retired(submitted, session, number - 1, timed_out, stderr, busy, died)
                    submitted = self._submitted(channel, logs / f"{match_id}.{role}.log")
                    players[index] = submitted
                    stderr, crashed, timed_out, died, first = [], False, [], "", number
                    await submitted.start()
                seen = submitted.connection if isinstance(submitted, ProgramPlayer) else None
                for player, r in zip(players, game.roles, strict=True):
                    if isinstance(player, ProgramPlayer):
                        player.switch_log(logs / f"{match_id}.{r}.log")
                gone = number > first and not submitted.alive
                failed: set[str] = set()
                if gone:
                    # Seen before the match rather than at its start: told as the same event.
                    text = f"{where}: the process was gone before match {number}"
                    if not crashed and seen is not None and seen.gone is not None:
                        text = _exited_after(where, number - 1, seen.gone.detail)
                    offence = Offence(text, session.process, number, 0, stderr=stderr)
                    evidence.reuse.append(offence)
                    if not crashed:
                        evidence.after_end.append(offence)
                        failed.add("stays up")
                before = {} if seen is None else {a: s.count for a, s in seen.strays.items()}
                stderr_before = 0 if seen is None else seen.stderr_bytes
                # Never paused: a line written in reply to `moves` or `end` is then seen as
                # such, not taken for the answer to the next request.
                setup = MatchSetup(
                    match_id, game, players, self.clocks, Policy.RANDOM, number, ponder=True
                )
                transcript = await play_match(setup, self.workdir / f"{match_id}.json", self.key)
                evidence.matches += 1
                last = number
                if transcript.rules_fault is not None:
                    text = f"{where}, {session.process} process, match {number}"
                    evidence.rules_ended.append(f"{text}: {transcript.rules_fault}")
                if self.progress is not None:
                    self.progress(evidence.matches, self.total)
                failed |= _judge(
                    transcript, session, number, number > first, gone, crashed, evidence, stderr
                )
                first_move = _first_move(transcript, role)
                timed_out += [
                    _TimedOut(number, fault.step, fault.step == first_move, fault.time_ms)
                    for fault in transcript.faults
                    if fault.role == role and fault.step and fault.kind is FaultKind.TIMEOUT
                ]
                at_start = {
                    fault.kind: fault.detail
                    for fault in transcript.faults
                    if fault.role == role and fault.step == 0 and not gone
                }
                death = next((at_start[k] for k in OUT_OF_THE_MATCH if k in at_start), "")
                if death:
                    evidence.start_deaths += 1
                    died = died or death
                if FaultKind.TIMEOUT in at_start and seen is not None and not evidence.late_ready_s:
                    evidence.late_ready_s = await seen.late_answer(LATE_READY_S)
                crashed = crashed or any(
                    fault.role == role and fault.kind in OUT_OF_THE_MATCH
                    for fault in transcript.faults
                )
                if seen is not None:
                    for after, strays in seen.strays.items():
                        count = strays.count - before.get(after, 0)
                        # What a program that died at its start wrote, before its `start`
                        # (as fast as the referee writes it, when the machine is busy) or
                        # after, is its last words, not lines nobody asked for.
                        if count and not (death and after in ("", "start")):
                            failed |= _stray(session, number, after, count, strays.last, evidence)
                    evidence.stderr.append((match_id, seen.stderr_bytes - stderr_before))
                evidence.failed_by_match.append(failed)
                if not self.thorough:
                    evidence.stopped = evidence.conclusive()
                if evidence.stopped:
                    break
        finally:
            seen = submitted.connection if isinstance(submitted, ProgramPlayer) else None
            busy = _late_moves_owed(seen)
            await asyncio.gather(*(player.close() for player in players), return_exceptions=True)
        self._retired(submitted, session, last, timed_out, stderr, busy, died)

    def _retired(
        self,
        submitted: Player,
        session: _Session,
        match: int,
        timed_out: list[_TimedOut],
        stderr: list[str],
        busy: int,
        died: str,
    ) -> None:
        """Take in what one process of the program showed once it has ended, its last match
        `match`: the times of its late answers, how it ended, and its last words. `busy`: the
        late answers it still owed when it was told to quit."""
        evidence = self.evidence
        answers = submitted.connection.late_answers if isinstance(submitted, ProgramPlayer) else []
        evidence.late += _late(session, timed_out, answers)
        if isinstance(submitted, ProgramPlayer):
            _ended(submitted, session, match, evidence, stderr, busy)
            if died and evidence.died is None:
                evidence.died = _death(submitted, died)


@dataclass(frozen=True)
class _TimedOut:
    """A move of the program's not answered in time: its match and step, whether it was its
    first move there, and the time of an answer read after the clock, if one was."""

    match: int
    step: int
    first_move: bool
    time_ms: float | None


def _late_moves_owed(seen: PlayerConnection | None) -> int:
    """How many late answers to `go` the program owes: moves it is still busy with."""
    return 0 if seen is None else sum(r.startswith("go ") for r in seen.owed_requests)


def _first_move(transcript: Transcript, role: str) -> int:
    """The step of the role's first `go` in the match (0: none)."""
    asked = [step.step for step in transcript.steps if role in step.times_ms]
    asked += [fault.step for fault in transcript.faults if fault.role == role and fault.step]
    return min(asked, default=0)


def _late(
    session: _Session, timed_out: list[_TimedOut], answers: Sequence[LateAnswer]
) -> list[Late]:
    """The moves of one process not answered in time, each with its own time when its late
    answer came. Late answers come in the order of their requests, each naming its step
    (`go 7`): each is the answer to the next move timed out at that step."""
    own: dict[int, float] = {}
    index = 0
    for answer in answers:
        kind, _, step = answer.request.partition(" ")
        if kind != "go":
            continue
        while index < len(timed_out) and str(timed_out[index].step) != step:
            index += 1
        if index == len(timed_out):
            break
        own[index] = answer.own_s * 1000
        index += 1
    return [
        Late(
            session.where,
            session.process,
            late.match,
            late.step,
            late.first_move,
            # An answer read after its time is timed from the answer before it, if later.
            own.get(index, late.time_ms),
        )
        for index, late in enumerate(timed_out)
    ]


def _judge(
    transcript: Transcript,
    session: _Session,
    number: int,
    again: bool,
    gone: bool,
    crashed_earlier: bool,
    evidence: Evidence,
    stderr: list[str],
) -> set[str]:
    """Take in the faults of the program in one match; the checks they fail. `again`: its
    process had played a match before (not a fresh one, come to replace it); `gone`: its
    process had ended before the match; `crashed_earlier`: in an earlier match."""
    role, where, process = session.role, session.where, session.process
    failed: set[str] = set()
    asked = [step.step for step in transcript.steps if role in step.times_ms]
    asked += [fault.step for fault in transcript.faults if fault.role == role and fault.step]
    first_move = _first_move(transcript, role)
    evidence.asked += len(set(asked))
    at_start = [f.kind for f in transcript.faults if f.role == role and f.step == 0]
    if not gone:
        evidence.starts += 1
        evidence.ready += not at_start
    evidence.second_matches += again
    evidence.fresh_matches += process is Process.FRESH
    for fault in transcript.faults:
        # A process already gone fails reuse, above; it was not asked to start.
        if fault.role != role or (fault.step == 0 and gone):
            continue
        crashed = fault.kind in OUT_OF_THE_MATCH
        last_words = stderr if crashed else []
        if fault.step == 0 and again and crashed and not crashed_earlier:
            # It was there when the last match ended, and is not now: it exited on `end`.
            text = _exited_after(where, number - 1, fault.detail)
            offence = Offence(text, process, number, 0, stderr=last_words)
            evidence.after_end.append(offence)
            evidence.reuse.append(offence)
            failed.add("stays up")
        elif fault.step == 0:
            text = f"{where}, {process} process: {fault.detail}"
            offence = Offence(text, process, number, 0, stderr=last_words)
            evidence.start.append(offence)
            evidence.silent_starts += fault.kind is FaultKind.TIMEOUT
            failed.add("start")
            if again:
                text = f"{where}: match {number}: {fault.detail}"
                evidence.reuse.append(Offence(text, process, number, 0))
        else:
            text = f"{where}, step {fault.step}: {fault.detail}"
            first = fault.step == first_move
            offence = Offence(text, process, number, fault.step, first, last_words, where)
            evidence.faults.setdefault(fault.kind, []).append(offence)
            failed.add(FAULT_CHECKS[fault.kind])
        if process is Process.FRESH and (fault.step == 0 or crashed):
            evidence.fresh.append(offence)
    evidence.times_ms.extend(
        step.times_ms[role] for step in transcript.steps if role in step.times_ms
    )
    return failed


def _exited_after(where: str, match: int, detail: str) -> str:
    """The offence of a process that exited once a match had ended, however it was seen."""
    return f"{where}: exited after match {match} ended: {detail}"


def _stray(
    session: _Session, number: int, after: str, count: int, last: str, evidence: Evidence
) -> set[str]:
    """Take in the `count` lines nobody asked for that followed `after` lines in one match;
    the checks they fail."""
    try:
        session.game.parse_move(last)
        is_move = True
    except MoveParseError:
        is_move = False
    evidence.replies.append(Reply(after, count, last, is_move))
    following = f" after `{after}`" if after else ""
    text = (
        f"{session.where}, match {number}: {count} line(s) nobody asked for{following},"
        f" the last {quoted(last, 60)}"
    )
    evidence.stray.append(Offence(text, session.process, number))
    return {"clean output"}


def _death(submitted: ProgramPlayer, detail: str) -> StartDeath:
    """What a program that died at its start last wrote, and what that says."""
    spec, seen = submitted.spec, submitted.connection
    stdout = [quoted(line, 200)[1:-1] for line in seen.stdout_tail]
    stderr = [quoted(line, 200)[1:-1] for line in seen.stderr_lines()]
    diagnosis = diagnose_start(spec.argv, detail, [*stdout, *stderr], spec.env, spec.cwd)
    return StartDeath(diagnosis, tuple(stdout[-STDOUT_LINES:]), tuple(stderr[-STDERR_LINES:]))


def _ended(
    submitted: ProgramPlayer,
    session: _Session,
    match: int,
    evidence: Evidence,
    stderr: list[str],
    busy: int,
) -> None:
    """Take in how the program's process ended after match `match`, and what it last wrote
    to standard error. `busy`: the late answers it still owed when it was told to quit."""
    where, process = session.where, session.process
    seen = submitted.connection
    at_quit = seen.strays.get("quit")
    if at_quit is not None:
        # Lines it wrote only as it exited, after quit: a sign that they waited in a buffer.
        evidence.replies.append(Reply("quit", at_quit.count, at_quit.last, False))
    ending = submitted.ending
    stayed = ending is not None and ending.told_to_quit and not ending.exited_after_quit
    text = f"{where}, {process} process: still running {QUIT_GRACE_S * 1000:.0f} ms after quit"
    if stayed and busy:
        # Still busy with the late answer of a move, as it would be after any timeout: what
        # kept it from reading `quit` is that move's, not a fault of its own.
        evidence.busy_quits.append(Offence(text, process, match))
    elif ending is not None:
        evidence.told_to_quit += ending.told_to_quit
        evidence.exited_on_quit += ending.exited_after_quit
        if stayed:
            evidence.quit.append(Offence(text, process, match))
    if ending is not None and ending.left_behind:
        text = (
            f"{where}, {process} process: {ending.left_behind} process(es) still running after"
            " it exited"
        )
        evidence.left_behind.append(Offence(text, process, match))
    stderr += [quoted(line, 200)[1:-1] for line in seen.stderr_lines()[-STDERR_LINES:]]
