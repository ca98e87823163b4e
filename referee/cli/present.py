"""How the command line shows things: lines for steps, faults and results, boards, tables,
and progress bars. Everything here returns text or writes to the terminal; nothing decides."""

from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)

from referee import plaintext
from referee.arena.intake.new_bot import NewBot
from referee.cli.width import terminal_width
from referee.errors import FaultKind
from referee.games import Game, JointMove
from referee.match import StepCallback
from referee.plaintext import counted, versus
from referee.players import startup
from referee.players.base import Player
from referee.players.connection import ConnectedPlayer
from referee.records.replayed import Frame, Replay
from referee.records.seats import SeatView
from referee.records.transcript import Fault, RulesFault, Transcript
from referee.records.verify import DirectoryReport, FileVerdict, Outcome
from referee.tournaments.config import TournamentConfig
from referee.tournaments.config_models import TournamentFormat
from referee.tournaments.knockout import Tie, round_name
from referee.tournaments.played import Played
from referee.tournaments.runner import Observer
from referee.tournaments.schedule import ScheduledMatch
from referee.tournaments.sprt import SprtStatus, Verdict
from referee.tournaments.standings import Tally, pairings
from referee.tournaments.standings_tables import pair_text_line, progress_text, table
from referee.tournaments.swiss import Round
from referee.validate import Report
from referee.validate.text import report_text


def table_text(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows under their headers, fit to the terminal (`plaintext.table`)."""
    return plaintext.table(headers, rows, terminal_width())


def fitted(line: str) -> str:
    """A long line of prose wrapped to the terminal (`plaintext.fit`)."""
    return plaintext.fit(line, terminal_width())


def step_line(step: int, moves: dict[str, str], times_ms: dict[str, float] | None = None) -> str:
    """`step 3: xcplayer (mark 2 2) 812 ms, obplayer noop`: a joint move and response times."""
    times_ms = times_ms or {}
    return f"step {step}: " + ", ".join(
        f"{role} {move}" + (f" {times_ms[role]:.1f} ms" if role in times_ms else "")
        for role, move in moves.items()
    )


def fault_line(fault: Fault) -> str:
    replaced = f"; played {fault.replacement} instead" if fault.replacement else ""
    return f"fault: {fault}{replaced}"


def unready_line(fault: Fault, player: Player, log_path: str | None) -> str:
    """Why a program never got ready, from what it wrote to standard output and error, and
    where its log is (`log_path`, as its match recorded it: the player's own is closed)."""
    said: list[str] = []
    if isinstance(player, ConnectedPlayer):
        said = [*player.connection.stdout_tail, *player.connection.stderr_lines()]
    return startup.unready_line(fault.role, player.spec, (fault.kind, fault.detail), said, log_path)


def result_line(transcript: Transcript) -> str:
    """`result: xcplayer 0, obplayer 100 (forfeit after 2 steps; xcplayer: timeout at step 3,
    no answer within 1000 ms)`: the goals, the end, and the fault or the rules' failure that
    decided it. A match a person gave up names them: `(xcplayer resigned after 2 steps)`,
    not a forfeit that reads like a fault."""
    after = f"after {counted(len(transcript.steps), 'step')}"
    why = transcript.why_ended()
    if transcript.goals is None:
        decided = f"; {why}" if why else ""
        return f"result: none ({transcript.end_reason} {after}{decided})"
    goals = ", ".join(f"{role} {goal}" for role, goal in transcript.goals.items())
    resigned = [f.role for f in transcript.faults if f.kind is FaultKind.RESIGNED]
    if resigned:
        return f"result: {goals} ({' and '.join(resigned)} resigned {after})"
    decided = f"; {why}" if why else ""
    return f"result: {goals} ({transcript.end_reason} {after}{decided})"


def finished_line(transcript: Transcript) -> str:
    """A finished match: each player's goal, or, in a match without goals, the players and
    why it has none: `exploding-r1-a-vs-b: a, b (aborted at state 4 by the rules)`."""
    faults = f", {counted(len(transcript.faults), 'fault')}" if transcript.faults else ""
    goals = transcript.goals
    if goals is None:
        players = ", ".join(seat.player for seat in transcript.seats)
        fault = transcript.rules_fault
        why = f" at state {fault.step} by the rules" if fault is not None else ""
        return f"{transcript.match_id}: {players} ({transcript.end_reason}{why}{faults})"
    scored = ", ".join(f"{seat.player} {goals[seat.role]}" for seat in transcript.seats)
    return f"{transcript.match_id}: {scored} ({transcript.end_reason}{faults})"


def rules_fault_line(fault: RulesFault) -> str:
    """Why the rules ended a match: the state they could not compute, and what failed."""
    return f"{fault}; the match is aborted"


def step_printer(game: Game, show: bool) -> StepCallback:
    """Print the start position (with --show), then a callback that prints each step."""
    if show:
        typer.echo(game.render(game.initial_state()) + "\n")

    def print_step(step: int, joint: JointMove, state: Hashable) -> None:
        typer.echo(step_line(step, dict(zip(game.roles, joint, strict=True))))
        if show:
            typer.echo(game.render(state) + "\n")

    return print_step


def progress_bar(
    *columns: ProgressColumn, transient: bool = False, bar_width: int = 40
) -> Progress:
    """A bar on standard error: name, bar, done/total, the given columns, time left. A
    transient one is not drawn where standard error is no terminal: it would leave only an
    empty line before whatever is said next."""
    console = Console(stderr=True)
    return Progress(
        TextColumn("[bold]{task.description}"),
        # Colours of the 16 every terminal has: rich's own, downgraded there, draw a finished
        # bar in the grey of an empty one.
        BarColumn(
            bar_width=bar_width,
            style="bright_black",
            complete_style="magenta",
            finished_style="green",
            pulse_style="magenta",
        ),
        MofNCompleteColumn(),
        *columns,
        TimeRemainingColumn(),
        console=console,
        transient=transient,
        disable=transient and not console.is_terminal,
    )


class TournamentProgress(Observer):
    """A progress bar on standard error with the leader (or the SPRT's LLR), a line for every
    finished match above it, and the standings every `rating_interval` matches."""

    def __init__(self, config: TournamentConfig) -> None:
        self.config = config
        self.name = config.name
        # Past its width, the console cuts every column of the line, the counts and the time
        # left with them: the bar narrows first, then the lead is cut to the room left.
        self.width = Console(stderr=True).width
        self.bar_width = max(5, min(40, self.width - 75))
        self.progress = progress_bar(
            TextColumn("running {task.fields[running]}, faults {task.fields[faults]},"),
            TextColumn("{task.fields[lead]}; ETA"),
            bar_width=self.bar_width,
        )
        self.task = self.progress.add_task(self.name, total=None, running=0, faults=0, lead="")
        self.done = self.total = self.running = self.faults = 0
        self.shown = False
        # What the standings every `rating_interval` matches are counted from: counts, not
        # the matches, however long the run.
        self.tally = Tally() if config.rating_interval else None
        self.points: dict[str, float] = defaultdict(float)
        self.pairings: Counter[str] = Counter()
        self.test: SprtStatus | None = None
        # A Swiss's or a knockout's round being played: in these, points alone lead no one
        # (until a round is paired, or when a finished run is run again, its format).
        self.stage: str | None = (
            str(config.format)
            if config.format in (TournamentFormat.SWISS, TournamentFormat.KNOCKOUT)
            else None
        )

    def close(self) -> None:
        """Leave the bar as it last was, on its own line."""
        if self.shown:
            self.progress.stop()
            self.shown = False

    def planned(self, total: int, done: Sequence[Played]) -> None:
        self.total, self.done = total, len(done)
        for transcript in done:
            self.faults += len(transcript.faults)
            self._count(transcript)
        self.progress.update(self.task, total=total, completed=self.done, lead=self._lead())
        # Shown from here on: problems found before the first match are errors, not progress.
        self.progress.start()
        self.shown = True
        if done:
            self._print(f"{self.name}: {self.done} of {total} matches already played")

    def changed(self, line: str) -> None:
        self._print(line)

    def noted(self, line: str) -> None:
        self._print(line)

    def started(self, match: ScheduledMatch) -> None:
        self.running += 1
        self.progress.update(self.task, running=self.running)

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        self.running -= 1
        self.done += 1
        self.faults += len(transcript.faults)
        self._count(transcript)
        self._print(f"[{self.done}/{self.total}] {finished_line(transcript)}")
        if transcript.rules_fault is not None:
            self._print(f"{match.match_id}: {rules_fault_line(transcript.rules_fault)}")
        self.progress.update(
            self.task, advance=1, running=self.running, faults=self.faults, lead=self._lead()
        )
        interval = self.config.rating_interval
        if self.tally is not None and self.done % interval == 0 and self.done < self.total:
            standings = self.tally.standings(self.config.anchor, self.total)
            self._print(f"standings after {progress_text(standings)}:")
            self._print(table(standings.overall, width=terminal_width()))
            if standings.pair is not None:
                self._print(pair_text_line(standings.pair))

    def replaced(self, problem: str) -> None:
        self._print(f"will play again: {problem}")

    def tested(self, status: SprtStatus) -> None:
        self.test = status
        self._show_lead()

    def stopped(self, verdict: Verdict) -> None:
        self._print(f"SPRT: {verdict} ({self._lead()}); no further match starts")

    def paired(self, round_: Round, rounds: int, seconds: float) -> None:
        self._print(round_line(round_, rounds, seconds))
        # A Swiss ranks by its own score, byes and tie-breaks; points alone would lead
        # someone else than its table does.
        self.stage = f"round {round_.number} of {rounds}"
        self._show_lead()

    def bracketed(self, ties: Sequence[Tie], rounds: int) -> None:
        self._print(bracket_line(ties, rounds))
        self.stage = stage_text(ties, rounds)
        self._show_lead()

    def won(self, winner: str) -> None:
        self.stage = f"winner {winner}"
        self._show_lead()

    def resized(self, total: int) -> None:
        self.total = total
        self.progress.update(self.task, total=total)

    def _count(self, transcript: Played) -> None:
        if self.tally is not None:
            self.tally.add(transcript)
        if not transcript.complete:
            return
        for player, _, scored in pairings(transcript):
            self.points[player] += scored
            self.pairings[player] += 1

    def _show_lead(self) -> None:
        """The bar's lead anew, once the bar is shown."""
        if self.shown:
            self.progress.update(self.task, lead=self._lead())

    def _lead(self) -> str:
        """The first of `_said_leads` that fits the room the line leaves it, else the last
        cut to it."""
        counts = f"{self.done}/{self.total} running {self.running}, faults {self.faults},"
        # The columns' single spaces, the bar, "; ETA" and the time left (0:00:00).
        room = self.width - len(self.name) - self.bar_width - len(counts) - 19
        leads = self._said_leads()
        lead = next((lead for lead in leads if len(lead) <= room), leads[-1])
        return lead if len(lead) <= room else lead[: max(0, room - 1)] + "…"

    def _said_leads(self) -> list[str]:
        """The SPRT's LLR, its bounds and pairs (and shorter, for a narrow terminal), a Swiss's
        or a knockout's round, or who leads on points."""
        if self.test is not None:
            test = self.test
            bounds = f"{test.settings.lower:.2f}, {test.settings.upper:.2f}"
            return [
                f"LLR {test.llr:.2f} ({bounds}) after {test.pairs} pairs",
                f"LLR {test.llr:.2f} ({bounds}), {test.pairs} pairs",
                f"LLR {test.llr:.2f}, {test.pairs} pairs",
            ]
        return [self._said_lead()]

    def _said_lead(self) -> str:
        if self.stage is not None:
            return self.stage
        if not self.pairings:
            return "no results yet"
        leader = min(self.pairings, key=lambda name: (-self.points[name], name))
        return f"leader {leader} {self.points[leader]:g}/{self.pairings[leader]}"

    def _print(self, text: str) -> None:
        # One line per event, however narrow the terminal: logs are read by grep.
        self.progress.console.print(text, markup=False, highlight=False, soft_wrap=True)


def round_line(round_: Round, rounds: int, seconds: float) -> str:
    """A Swiss round as it is paired: how long its pairing took, its pairs in their first
    game's seats (`ann vs bob, cat vs dan`), and its bye."""
    pairs = ", ".join(versus(first, second) for first, second in round_.pairs)
    bye = f"; bye: {round_.bye}" if round_.bye else ""
    took = f"{seconds:.1f} s" if seconds >= 0.1 else f"{seconds * 1000:.0f} ms"
    return f"round {round_.number} of {rounds} paired in {took}: {pairs}{bye}"


def bracket_line(ties: Sequence[Tie], rounds: int) -> str:
    """A knockout's round as its players become known: each tie's seeds and players."""
    shown = ", ".join(
        f"({tie.high_seed}) {tie.high} bye"
        if tie.low is None
        else versus(f"({tie.high_seed}) {tie.high}", f"({tie.low_seed}) {tie.low}")
        for tie in ties
    )
    number = ties[0].round
    return f"{round_name(number, rounds).removeprefix('the ')} ({number} of {rounds}): {shown}"


def stage_text(ties: Sequence[Tie], rounds: int) -> str:
    """A knockout's round for its progress bar: its name and who is in it, by name when they
    are few enough to read at a glance."""
    players = [name for tie in ties for name in (tie.high, tie.low) if name is not None]
    name = round_name(ties[0].round, rounds).removeprefix("the ")
    shown = " vs ".join(players) if len(players) == 2 else ", ".join(players)
    return f"{name}: {shown}" if len(players) <= 4 else f"{name}: {len(players)} players"


def new_bot_lines(bot: NewBot) -> str:
    """What new-bot wrote, and the commands to run next, each on a line of its own to copy."""
    commands = [bot.validate] if bot.build is None else [bot.build, bot.validate]
    return "\n".join(
        [
            f"{bot.directory}: {', '.join(bot.files)}",
            "validate it:" if bot.build is None else "build it and validate it:",
            *(f"  {line}" for line in commands),
        ]
    )


def lacking_line(programs: Sequence[str]) -> str:
    """The warning of a bot whose programs the jail of this machine does not find: an
    arena's build, or its run, in the jail would fail on such a machine."""
    named = " and ".join(programs)
    return (
        f"note: the jail finds no {named} on this machine (it looks on PATH, in the system"
        " directories it shows): an arena on such a machine could not build or run this bot"
    )


def validation_report(report: Report, keep: Path | None) -> str:
    """Validate's report as its text (`validate.text.report_text`), fit to the terminal."""
    return report_text(report, terminal_width(), f"transcripts and logs in {keep}" if keep else "")


def frame_text(game: Game, frame: Frame) -> str:
    """A replayed step as text: its joint move with response times, its faults, the board (a
    step forfeited: the board it was asked in)."""
    if not frame.played:
        head = f"step {frame.step}: no joint move, the match ended while it was asked"
    else:
        head = step_line(frame.step, frame.moves, frame.times_ms) if frame.step else "start"
    lines = [head]
    lines += [fault_line(fault) for fault in frame.faults]
    return "\n".join([*lines, game.render(frame.state), ""])


def seat_text(transcript: Transcript, view: SeatView, whole: bool = True) -> str:
    """What a seat was told (`records.seats`): the match's header, what is shown, then the
    protocol's lines to and from the seat, each step's only with `whole` False."""
    lines = view.lines() if whole else [line for step in view.steps for line in step.lines()]
    return "\n".join([match_header(transcript), fitted(view.summary), *lines])


def match_header(transcript: Transcript) -> str:
    """The match, its seats, its clocks (a seat's own after its name, its margin if any) and
    its policy."""
    seats = ", ".join(
        f"{seat.role} {seat.player}" + ("" if seat.clocks is None else f" ({_clocks(seat.clocks)})")
        for seat in transcript.seats
    )
    margin = transcript.time_margin_ms
    return (
        f"{transcript.match_id}: {transcript.game}, {seats}; {_clocks(transcript.clocks)},"
        + (f" time margin {margin} ms," if margin else "")
        + f" policy {transcript.policy}"
    )


def _clocks(clocks: dict[str, int]) -> str:
    return (
        f"start clock {clocks['start_ms']} ms, play clock {clocks['play_ms']} ms,"
        f" time bank {clocks['time_bank_ms']} ms"
    )


def verdict_line(verdict: FileVerdict) -> str:
    note = verdict.replayed.note if verdict.replayed else None
    after = f"\n{verdict.path}: note: {note}" if note else ""
    if verdict.outcome is Outcome.VERIFIED:
        assert verdict.replayed is not None
        transcript = verdict.replayed.transcript
        return f"{verdict.path}: verified; {transcript.game}, {result_line(transcript)}{after}"
    return f"{verdict.outcome.upper()} {verdict.problem}{after}"


def verdict_lines(verdict: FileVerdict) -> str:
    """What verifying one file found: its signature, then the verdict."""
    if verdict.signature is None or verdict.signature.fails:
        return verdict_line(verdict)
    return f"{verdict.signature}\n{verdict_line(verdict)}"


def directory_report(report: DirectoryReport) -> str:
    """The files that did not verify, one line each, a table by game, then the signatures."""
    lines = [verdict_line(v) for v in report.verdicts if v.outcome is not Outcome.VERIFIED]
    total = ("total", len(report.verdicts) - report.failed, report.failed)
    table = table_text(["game", "verified", "failed"], [*report.by_game(), total])
    checks = [v.signature for v in report.verdicts if v.signature is not None]
    counts = Counter(str(check.status) for check in checks)
    keys = sorted({check.public_key for check in checks if check.public_key is not None})
    signatures = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none read"
    keyed = f" (key {', '.join(keys)})" if keys else ""
    return "\n".join([*lines, table, f"signatures: {signatures}{keyed}"])


def show_replay(replayed: Replay, frames: list[Frame], watch: bool, delay: float) -> None:
    """Print frames of a replay: all at once, or one at a time with --watch."""
    game, transcript = replayed.game, replayed.transcript
    assert game is not None
    clear = watch and sys.stdout.isatty()
    typer.echo(match_header(transcript))
    for number, frame in enumerate(frames):
        if watch and number:
            time.sleep(delay)
            if clear:
                typer.echo("\x1b[2J\x1b[H" + match_header(transcript))
        typer.echo(frame_text(game, frame))
    if replayed.verified:
        typer.echo(result_line(transcript))
