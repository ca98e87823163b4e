"""Whether a seat is charged only its own time: CPU contention and false timeouts.

Usage: python benchmarks/fairness.py [--parts contention,timeouts,fastchess]
           [--work-clock MS] [--work-share PERCENT] [--work-answers N] [--clocks MS,MS]
           [--answers N]
           [--long-answers N] [--fractions 80,90,95,98] [--concurrency 1,CORES]
           [--fastchess PATH] [--json]

Contention: a worker (benchmarks/bots/fair_bot.py) does a fixed amount of CPU work at each
move, calibrated at the start to take --work-share of --work-clock (half, by default) alone on
a core, in quad
tournaments (`policy: random`, so that a timeout does not end the match; concurrency 1) against
a quiet opponent, against one that spins a core whenever it can (frozen while the worker is
asked, under `ponder: false`, the default), and against the spinner with `ponder: true,
cores_per_seat: 1` (each seat on a core of its own). For each: the worker's median answer
time (a timeout counted as the clock), the median CPU time its answers took (`cpu_ms`), and
its timeouts. A config key this referee does not know makes its row say so, not fail.

Timeouts: sleepers answering after 80, 90, 95 and 98% of each play clock (--fractions), two
in quad, at concurrency 1 and at the machine's cores (--concurrency), --answers answers per
cell at the shortest clock
and --long-answers at the others (by default a twentieth; a round, two matches, at least).
For each cell: the timeouts, of them those the sleeper itself measured at its clock or over
("own late": not the referee's), and the referee's error, its recorded time minus the time
the sleeper measured itself from reading its request to writing its answer (median, p99,
max in ms), over every answer the referee timed: those taken, and those it read too late.

fastchess, where it is found (on PATH or --fastchess): the same sleepers speaking UCI, the
same clocks as a fixed time per move (`st`, no time margin), the same concurrencies, its time
losses and its own error (its `latency`: its measured time minus the sleeper's, whole ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from _help import described
from pinning import Noted  # the script beside this one
from tabulate import tabulate

from referee.errors import ConfigError, FaultKind
from referee.games import GAMES
from referee.pauses import short_pauses
from referee.records.signing import results_key
from referee.records.transcript import Transcript
from referee.sandbox.cores import available_cores
from referee.tournaments.config import load_config
from referee.tournaments.runner import run_tournament
from referee.tournaments.standings import load_results

BOT = Path(__file__).resolve().parent / "bots" / "fair_bot.py"
GAME = "quad"
FRACTIONS = "80,90,95,98"
# The line the sleeper writes to standard error before each answer.
SLEPT = re.compile(r"^slept (\S+) (\S+) (\d+) ([\d.]+)$", re.MULTILINE)
# fastchess's comment on a move in its PGN: the time it measured, then its latency (that time
# less the time the engine reported in its last `info`).
FASTCHESS_MOVE = re.compile(r"\{[^}]*?(\d+\.\d{3})s[^}]*?latency=(-?\d+\.\d{3})s")


class Part(StrEnum):
    """What the benchmark measures; each can be left out."""

    CONTENTION = "contention"
    TIMEOUTS = "timeouts"
    FASTCHESS = "fastchess"


@dataclass(frozen=True)
class Opponent:
    """The worker's opponent in one contention case, and the config keys of its seats."""

    label: str
    mode: str
    keys: str


OPPONENTS = (
    Opponent("quiet", "quiet", ""),
    Opponent("spinning, ponder: false (default)", "spin", ""),
    Opponent("spinning, ponder: true", "spin", "ponder: true\ncores_per_seat: 1\n"),
)


@dataclass(frozen=True)
class Played:
    """A tournament played in a temporary directory, what the benchmark reads of it."""

    transcripts: list[Transcript]
    # What the sleepers measured, by (match, role, step): ms from request to answer.
    slept: dict[tuple[str, str, int], float]
    note: str
    wall_s: float


@dataclass(frozen=True)
class ContentionRow:
    opponent: str
    answers: int | None
    median_ms: float | None
    # The median CPU time of its answers, as the transcripts record it.
    cpu_ms: float | None
    timeouts: int | None
    other_faults: int | None
    # The worker's median over its median against the quiet opponent (the first row).
    vs_quiet: float | None
    note: str


@dataclass(frozen=True)
class TimeoutRow:
    runner: str
    clock_ms: int
    percent: int
    concurrency: int
    answers: int
    timeouts: int
    # Of the timeouts, those the sleeper itself measured at the clock or over (None: unknown).
    own_late: int | None
    error_median_ms: float | None
    error_p99_ms: float | None
    error_max_ms: float | None


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def p99(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.99 * (len(ordered) - 1))]


def first_move_steps(game_id: str) -> int:
    """The steps of a match in which every role plays its first legal move, as the bots do."""
    game = GAMES[game_id]
    state, steps = game.initial_state(), 0
    while not game.is_terminal(state):
        joint = [game.legal_moves(state, role)[0] for role in range(len(game.roles))]
        state, steps = game.next_state(state, joint), steps + 1
    return steps


def bot(*args: object) -> str:
    return " ".join([sys.executable, str(BOT), *map(str, args)])


def tournament(
    clock_ms: int, rounds: int, concurrency: int, players: Sequence[tuple[str, str]], keys: str
) -> Played:
    """A quad tournament of `players` (name, command); ConfigError when `keys` are refused."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fairness.yaml"
        entries = "".join(
            f"  - name: {name}\n    command: {command}\n" for name, command in players
        )
        path.write_text(
            f"name: fairness\ngames: [{GAME}]\nrounds: {rounds}\nplay_clock: {clock_ms}\n"
            f"policy: random\nconcurrency: {concurrency}\n{keys}players:\n{entries}"
        )
        config = load_config(path)
        key, _ = results_key(config.output, None)
        observer = Noted()
        began = time.perf_counter()
        with short_pauses():  # as `referee tournament` plays them
            asyncio.run(run_tournament(config, key, observer))
        wall = time.perf_counter() - began
        transcripts, _ = load_results(config.output, key.public)
        slept = {
            (match, role, int(step)): float(ms)
            for log in (config.output / "logs").glob("*.log")
            for match, role, step, ms in SLEPT.findall(log.read_text(errors="replace"))
        }
    return Played(transcripts, slept, observer.note, wall)


def seat_answers(
    transcripts: Sequence[Transcript], player: str, clock_ms: int
) -> tuple[list[float], int, int]:
    """Each request's answer time for `player` (a timeout counted as the clock), its
    timeouts, and its other faults."""
    times: list[float] = []
    timeouts = others = 0
    for transcript in transcripts:
        roles = {seat.role for seat in transcript.seats if seat.player == player}
        times += [
            ms for step in transcript.steps for role, ms in step.times_ms.items() if role in roles
        ]
        for fault in transcript.faults:
            if fault.role in roles and fault.step > 0:
                if fault.kind == FaultKind.TIMEOUT:
                    timeouts += 1
                    times.append(float(clock_ms))
                else:
                    others += 1
    return times, timeouts, others


def contention(clock_ms: int, work_ms: float, answers: int) -> list[ContentionRow]:
    """The worker, needing `work_ms` alone, against each opponent, alone on the machine
    (concurrency 1)."""
    found = subprocess.run(
        [sys.executable, str(BOT), "calibrate", str(work_ms)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    iterations = int(found.stdout)
    # Each round plays both roles; the worker answers every other step of each match.
    rounds = math.ceil(answers / first_move_steps(GAME))
    progress(f"contention: the worker loops {iterations} times a move ({work_ms:.0f} ms alone)")
    rows = []
    for opponent in OPPONENTS:
        players = [("worker", bot("work", iterations)), ("opponent", bot(opponent.mode))]
        try:
            played = tournament(clock_ms, rounds, 1, players, opponent.keys)
        except ConfigError as error:
            # What the config refused, without the temporary file's name before it.
            note = f"not run: {str(error).partition(': ')[2]}"
            progress(f"contention: {opponent.label}: {note}")
            rows.append(ContentionRow(opponent.label, None, None, None, None, None, None, note))
            continue
        times, timeouts, others = seat_answers(played.transcripts, "worker", clock_ms)
        median = round(statistics.median(times), 1)
        quiet = rows[0].median_ms if rows else median
        vs_quiet = round(median / quiet, 2) if quiet else None
        progress(
            f"contention: {opponent.label}: {len(times)} answers, median {median} ms,"
            f" {timeouts} timeouts ({played.wall_s:.0f} s)"
        )
        cpu = [
            ms
            for transcript in played.transcripts
            for step in transcript.steps
            for role, ms in step.cpu_ms.items()
            if any(s.role == role and s.player == "worker" for s in transcript.seats)
        ]
        cpu_ms = round(statistics.median(cpu), 1) if cpu else None
        rows.append(
            ContentionRow(
                opponent.label, len(times), median, cpu_ms, timeouts, others, vs_quiet, played.note
            )
        )
    return rows


def error_figures(errors: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    if not errors:
        return None, None, None
    return round(statistics.median(errors), 2), round(p99(errors), 2), round(max(errors), 2)


def referee_timeouts(clock_ms: int, fraction: float, concurrency: int, answers: int) -> TimeoutRow:
    """Two sleepers in quad; the timeouts and the referee's error over their answers."""
    rounds = math.ceil(answers / (2 * first_move_steps(GAME)))
    players = [(name, bot("sleep", fraction)) for name in ("one", "two")]
    played = tournament(clock_ms, rounds, concurrency, players, "")
    # Every time the referee recorded: the answers taken, and the late ones it read.
    recorded = [
        ((transcript.match_id, role, step.step), ms)
        for transcript in played.transcripts
        for step in transcript.steps
        for role, ms in step.times_ms.items()
    ] + [
        ((transcript.match_id, fault.role, fault.step), fault.time_ms)
        for transcript in played.transcripts
        for fault in transcript.faults
        if fault.kind == FaultKind.TIMEOUT and fault.time_ms is not None
    ]
    errors = [ms - played.slept[key] for key, ms in recorded if key in played.slept]
    late = [
        (transcript.match_id, fault.role, fault.step)
        for transcript in played.transcripts
        for fault in transcript.faults
        if fault.kind == FaultKind.TIMEOUT and fault.step > 0
    ]
    # A timeout is the sleeper's own when it measured itself over the clock: not the referee's.
    own = sum(played.slept.get(key, 0.0) >= clock_ms for key in late)
    answered = sum(
        len(step.times_ms) for transcript in played.transcripts for step in transcript.steps
    )
    return TimeoutRow(
        "referee", clock_ms, round(fraction * 100), concurrency, answered + len(late), len(late),
        own, *error_figures(errors),
    )  # fmt: skip


def fastchess_timeouts(
    fastchess: str, clock_ms: int, fraction: float, concurrency: int, answers: int
) -> TimeoutRow:
    """The same sleepers under fastchess: each game is 8 plies, ended by repetition (or by a
    loss on time)."""
    plies = 8
    with tempfile.TemporaryDirectory() as directory:
        pgn = Path(directory) / "games.pgn"
        engine = ["cmd=" + sys.executable, f"args={BOT} uci {fraction}"]
        subprocess.run(
            [
                fastchess,
                "-engine", *engine, "name=one",
                "-engine", *engine, "name=two",
                "-each", "proto=uci", f"st={clock_ms / 1000}",
                "-rounds", str(math.ceil(answers / (2 * plies))), "-games", "2",
                "-concurrency", str(concurrency),
                "-pgnout", f"file={pgn}", "notation=uci", "latency=true",
                "-ratinginterval", "0",
            ],
            capture_output=True, text=True, check=True, cwd=directory,
        )  # fmt: skip
        text = pgn.read_text()
    moves = FASTCHESS_MOVE.findall(text)
    losses = text.count('[Termination "time forfeit"]')
    return TimeoutRow(
        "fastchess", clock_ms, round(fraction * 100), concurrency, len(moves), losses, None,
        *error_figures([float(latency) * 1000 for _, latency in moves]),
    )  # fmt: skip


def timeouts(
    clocks: Sequence[int],
    answers: dict[int, int],
    fractions: Sequence[float],
    concurrencies: Sequence[int],
    referee: bool,
    fastchess: str | None,
) -> list[TimeoutRow]:
    """Every cell of the sleepers, under the referee and under fastchess when given."""
    runners = [*(["referee"] if referee else []), *(["fastchess"] if fastchess else [])]
    rows = []
    for runner in runners:
        for clock_ms in clocks:
            for concurrency in concurrencies:
                for fraction in fractions:
                    began = time.perf_counter()
                    cell = (clock_ms, fraction, concurrency, answers[clock_ms])
                    if fastchess and runner == "fastchess":
                        row = fastchess_timeouts(fastchess, *cell)
                    else:
                        row = referee_timeouts(*cell)
                    progress(
                        f"timeouts: {runner} {clock_ms} ms at {row.percent}%, concurrency"
                        f" {concurrency}: {row.timeouts} in {row.answers}, error p99"
                        f" {row.error_p99_ms} ms ({time.perf_counter() - began:.0f} s)"
                    )
                    rows.append(row)
    return rows


def print_tables(report: dict[str, Any]) -> None:
    if report["contention"]:
        print(f"Contention: a worker needing {report['work_ms']:.0f} ms of a"
              f" {report['work_clock_ms']} ms clock, quad, concurrency 1")  # fmt: skip
        rows = [
            [r["opponent"], r["answers"], r["median_ms"], r["vs_quiet"], r["cpu_ms"],
             r["timeouts"], r["other_faults"], r["note"]]
            if r["answers"] is not None
            else [r["opponent"], "-", "-", "-", "-", "-", "-", r["note"]]
            for r in report["contention"]
        ]  # fmt: skip
        headers = [
            "opponent", "worker answers", "median ms", "x quiet", "median cpu ms", "timeouts",
            "other faults",
        ]  # fmt: skip
        print(tabulate(rows, headers=[*headers, "note"], floatfmt=".2f"))
    if report["timeouts"]:
        print("\nFalse timeouts: sleepers, quad; error = recorded - slept, ms")
        headers = [
            "runner", "clock ms", "sleeps %", "concurrency", "answers", "timeouts", "own late",
        ]  # fmt: skip
        rows = [
            [r["runner"], r["clock_ms"], r["percent"], r["concurrency"], r["answers"],
             r["timeouts"], "-" if r["own_late"] is None else r["own_late"],
             r["error_median_ms"], r["error_p99_ms"], r["error_max_ms"]]
            for r in report["timeouts"]
        ]  # fmt: skip
        print(tabulate(rows, headers=[*headers, "err median", "err p99", "err max"]))
    if report["fastchess"] is None:
        print("\nfastchess: not run (not asked for, or none on PATH; --fastchess PATH)")


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument(
        "--parts",
        default=",".join(Part),
        help=f"what to measure: some of {','.join(Part)} (default all)",
    )
    parser.add_argument(
        "--work-clock", type=int, default=300, help="contention's play clock, ms (default 300)"
    )
    parser.add_argument(
        "--work-share",
        type=int,
        default=50,
        help="the worker's work alone, %% of --work-clock (default 50)",
    )
    parser.add_argument(
        "--work-answers",
        type=int,
        default=120,
        help="the worker's answers against each opponent (default 120)",
    )
    parser.add_argument(
        "--clocks", default="100,1000", help="the sleepers' play clocks, ms (default 100,1000)"
    )
    parser.add_argument(
        "--answers",
        type=int,
        default=400,
        help="answers per cell at the shortest clock, in whole rounds (default 400)",
    )
    parser.add_argument(
        "--long-answers",
        type=int,
        help="answers per cell at the longer clocks (default a twentieth)",
    )
    parser.add_argument(
        "--fractions",
        default=FRACTIONS,
        help="the sleepers' sleeps, %% of a clock (default 80,90,95,98)",
    )
    parser.add_argument("--concurrency", help="the sleepers' concurrencies (default 1,CORES)")
    parser.add_argument("--fastchess", help="the fastchess program (default: on PATH)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args()
    try:
        parts = {Part(name) for name in args.parts.split(",")}
        clocks = sorted(int(clock) for clock in args.clocks.split(","))
        fractions = [int(percent) / 100 for percent in args.fractions.split(",")]
        cores = str(len(available_cores()))
        concurrencies = sorted({int(n) for n in (args.concurrency or f"1,{cores}").split(",")})
    except ValueError as error:
        print(f"fairness.py: --parts, --clocks, --fractions or --concurrency: {error}",
              file=sys.stderr)  # fmt: skip
        return 2
    if not 0 < args.work_share < 100:
        print("fairness.py: --work-share: a percent between 1 and 99", file=sys.stderr)
        return 2
    if not all(0 < fraction < 1 for fraction in fractions):
        print("fairness.py: --fractions: each a percent between 1 and 99", file=sys.stderr)
        return 2
    counts = (
        args.work_clock, args.work_answers, args.answers, args.long_answers or 1, *clocks,
        *concurrencies,
    )  # fmt: skip
    if min(counts) < 1:
        print("fairness.py: every clock and number of answers must be positive", file=sys.stderr)
        return 2
    if args.fastchess and not shutil.which(args.fastchess):
        print(f"fairness.py: --fastchess {args.fastchess}: no such program", file=sys.stderr)
        return 2
    long_answers = args.long_answers or max(1, args.answers // 20)
    answers = {clock: args.answers if clock == clocks[0] else long_answers for clock in clocks}
    fastchess = (args.fastchess or shutil.which("fastchess")) if Part.FASTCHESS in parts else None
    work_ms = args.work_clock * args.work_share / 100
    began = time.perf_counter()
    try:
        rows = (
            contention(args.work_clock, work_ms, args.work_answers)
            if Part.CONTENTION in parts
            else []
        )
        cells = timeouts(
            clocks, answers, fractions, concurrencies, Part.TIMEOUTS in parts, fastchess
        )
    except subprocess.CalledProcessError as error:
        print(f"fairness.py: {error.cmd[0]} failed: {error.stderr.strip()[-300:]}", file=sys.stderr)
        return 1
    report: dict[str, Any] = {
        "work_clock_ms": args.work_clock,
        "work_ms": work_ms,
        "cores": len(available_cores()),
        "contention": [asdict(row) for row in rows],
        "timeouts": [asdict(row) for row in cells],
        "fastchess": fastchess,
        "seconds": round(time.perf_counter() - began),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_tables(report)
        print(f"\n{report['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
