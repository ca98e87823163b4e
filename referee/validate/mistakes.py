"""The mistakes bot authors make, how to tell each from the evidence, and the advice for it.

This is the one table of known causes: `referee validate` names one of them under a failing
check, and docs/protocol.md ("Common mistakes") explains the same ones at length. The advice
is tailored to the language the program is written in, as far as its command tells.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from referee.clock import verdict
from referee.errors import FaultKind
from referee.match import NOT_A_MOVE, NOT_READY
from referee.plaintext import counted
from referee.players.startup import MORE_START_TIME
from referee.validate.evidence import Evidence, Late, Process

# The share of the play clock a move should be answered within: the advice for a late bot
# names it, and response times whose 95th percentile is above it are a warning.
SAFE_SHARE = 0.8
# The steps of late moves a diagnosis names, at most; more are counted.
SHOWN_STEPS = 6


class Mistake(StrEnum):
    """A known cause of a failing check."""

    UNFLUSHED_OUTPUT = "unflushed output"
    BUFFERED_INPUT = "buffered input"
    DEBUG_ON_STDOUT = "debug text on standard output"
    SETUP_AFTER_READY = "set-up after ready"
    SLOW_MOVES = "moves slower than the play clock"
    LATE_AT_SOME_MOVES = "late at some moves"
    EXIT_ON_END = "exiting on end"
    ANSWERS_NO_ANSWER = "answering lines that need no answer"
    DIES_AT_START = "dying at its start"
    SLOW_START = "a slow start"
    NOT_READY = "answering start with something else"


class Language(StrEnum):
    """What a program is written in, as far as its command says."""

    PYTHON = "Python"
    AWK = "awk"
    JAVASCRIPT = "JavaScript"
    JAVA = "Java"
    SHELL = "shell"
    GO = "Go"
    OTHER = "other"  # a compiled program, or a language not told apart here


_INTERPRETERS = [
    (re.compile(r"python[\d.]*|pypy[\d.]*|.*\.py"), Language.PYTHON),
    (re.compile(r"[gmn]?awk|.*\.awk"), Language.AWK),
    (re.compile(r"node(js)?|deno|bun|.*\.m?js"), Language.JAVASCRIPT),
    (re.compile(r"java|.*\.jar|.*\.java"), Language.JAVA),
    (re.compile(r"(ba|da|k|z)?sh|.*\.sh"), Language.SHELL),
    (re.compile(r"go|.*\.go"), Language.GO),
]
# What every program the Go toolchain builds holds: the header of its build information.
_GO_BUILD_INFO = b"\xff Go buildinf:"
_GO_READ_LIMIT = 256 * 1024 * 1024  # a program is searched for it this far, at most


def language(argv: tuple[str, ...]) -> Language:
    """The language of a program: from its interpreter, its script's suffix or its `#!` line;
    a program built by Go, from what Go writes into every program it builds."""
    words = [Path(word).name for word in argv[:2]]
    words += _shebang(Path(argv[0])) if argv else []
    for word in words:
        for pattern, found in _INTERPRETERS:
            if pattern.fullmatch(word):
                return found
    return Language.GO if argv and _built_by_go(Path(argv[0])) else Language.OTHER


def _built_by_go(path: Path) -> bool:
    """Whether `path` is a program the Go toolchain built (one a shell finds by name is not
    looked for)."""
    try:
        with path.open("rb") as file:
            tail = b""
            read = 0
            while read < _GO_READ_LIMIT and (chunk := file.read(1024 * 1024)):
                if _GO_BUILD_INFO in tail + chunk:
                    return True
                tail = chunk[-len(_GO_BUILD_INFO) :]
                read += len(chunk)
    except OSError:
        pass
    return False


def _shebang(path: Path) -> list[str]:
    """The interpreter a script names in its `#!` line (`env` looked through), if any."""
    try:
        with path.open("rb") as file:
            head = file.read(128)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    words = [Path(word).name for word in head[2:].split(b"\n")[0].decode(errors="replace").split()]
    return [word for word in words if word != "env" and not word.startswith("-")]


_FLUSH = {
    Language.PYTHON: "print(..., flush=True), or run it with python3 -u",
    Language.AWK: "fflush() after each print, and for mawk use -W interactive",
    Language.JAVASCRIPT: "process.stdout.write(line + '\\n') at once, not a buffer of your own",
    Language.SHELL: "echo is unbuffered, but a filter is not: sed -u, grep --line-buffered",
    Language.JAVA: "System.out.flush() after each println, or a PrintStream made with autoflush",
    Language.GO: "Flush() after each line written through a bufio.Writer, or fmt.Println to"
    " os.Stdout, which keeps nothing back",
    Language.OTHER: "in C fflush(stdout) after each line, or setvbuf(stdout, NULL, _IOLBF, 0)"
    " once; in C++ std::endl; in Rust io::stdout().flush(); in Go Flush() on a bufio.Writer",
}
_READ_LINES = {
    Language.PYTHON: "read with sys.stdin.readline() or `for line in sys.stdin`, never"
    " sys.stdin.read()",
    Language.AWK: "mawk reads its input in blocks and never sees `start`: run it as"
    " mawk -W interactive -f bot.awk",
    Language.JAVASCRIPT: "read with readline's 'line' event, not by waiting for the input's end",
    Language.SHELL: "read a line at a time with `while read -r line`",
    Language.JAVA: "read with BufferedReader.readLine() on System.in, a line at a time",
    Language.GO: "read a line at a time with a bufio.Reader's ReadString('\\n') (a"
    " bufio.Scanner gives up on a line over 64 KiB, as a GDL game's start line may be), never"
    " io.ReadAll(os.Stdin)",
    Language.OTHER: "read a line at a time (fgets, std::getline, BufRead::read_line, Go's"
    " bufio.Reader.ReadString), never up to the input's end",
}
_TO_STDERR = {
    Language.PYTHON: "print(..., file=sys.stderr)",
    Language.AWK: 'print ... > "/dev/stderr"',
    Language.JAVASCRIPT: "console.error(...)",
    Language.SHELL: "echo ... >&2",
    Language.JAVA: "System.err.println(...)",
    Language.GO: "fmt.Fprintln(os.Stderr, ...), or the log package",
    Language.OTHER: "in C fprintf(stderr, ...); in C++ std::cerr; in Rust eprintln!; in Go"
    " fmt.Fprintln(os.Stderr, ...)",
}


def advice(mistake: Mistake, program: Language, start_ms: int, play_ms: int) -> str:
    """One line saying how to fix `mistake` in a program written in `program`."""
    match mistake:
        case Mistake.UNFLUSHED_OUTPUT:
            return f"flush standard output after each line you write ({_FLUSH[program]})"
        case Mistake.BUFFERED_INPUT:
            return (
                f"{_READ_LINES[program]}; and flush standard output after each line"
                f" ({_FLUSH[program]})"
            )
        case Mistake.DEBUG_ON_STDOUT:
            return (
                "standard output is for protocol lines only: write debug text to standard"
                f" error ({_TO_STDERR[program]}), or begin the line with #"
            )
        case Mistake.SETUP_AFTER_READY:
            return (
                "do your set-up (loading, tables, warming up) before you answer ready: the"
                f" start clock gives {start_ms} ms, a move only {play_ms} ms"
            )
        case Mistake.SLOW_MOVES:
            return (
                "think less for each move, or stop by the clock: aim to answer within"
                f" {SAFE_SHARE:.0%} of the play clock ({_safe_ms(play_ms)} ms of {play_ms}), timed"
                " from when you read `go` (its <ms> is the time you have), not by a fixed depth"
                " or number of playouts"
            )
        case Mistake.LATE_AT_SOME_MOVES:
            return (
                "some moves take far longer than the rest: check the time as you think, and"
                f" answer with the best move found so far by {SAFE_SHARE:.0%} of the play clock"
                f" ({_safe_ms(play_ms)} ms of {play_ms}, the <ms> of `go`), however hard the"
                " position"
            )
        case Mistake.EXIT_ON_END:
            return (
                "one process may play several matches: after `end`, wait for the next `start`"
                " or `quit`, and exit only on `quit`"
            )
        case Mistake.ANSWERS_NO_ANSWER:
            return (
                "write nothing in reply to `moves` and `end`: only `start` and `go` are"
                " answered, and any other line is taken for the next answer or ignored"
            )
        case Mistake.DIES_AT_START:
            return (
                "it exited before it was ready: run its command by hand, give it a `start`"
                " line (docs/protocol.md), and fix what its last words below say"
            )
        case Mistake.SLOW_START:
            return (
                f"answer ready sooner, or give it a longer start clock than {start_ms} ms:"
                f" {MORE_START_TIME}"
            )
        case Mistake.NOT_READY:
            return (
                "answer `start` with the line `ready`, that word alone (debug text goes to"
                f" standard error, {_TO_STDERR[program]}), and flush it ({_FLUSH[program]})"
            )


def _safe_ms(play_ms: int) -> int:
    """The time a move should be answered within, of a play clock of `play_ms`."""
    return int(SAFE_SHARE * play_ms)


@dataclass(frozen=True)
class Diagnosis:
    """The known cause of a failing check, and what in the evidence shows it."""

    mistake: Mistake
    sign: str  # "" when the check's pattern says it already
    advice: str = ""  # the advice for this case, when the mistake's own is too general


def diagnose(evidence: Evidence, program: Language, play_ms: int) -> dict[str, Diagnosis]:
    """The known cause of each failing check that has one, by check name, for a program
    whose play clock was `play_ms`."""
    found: dict[str, Diagnosis] = {}
    died, late = evidence.died, evidence.late_ready_s
    if died is not None:
        known = died.diagnosis
        said = f", saying {known.reason!r}" if known else ""
        found["start"] = Diagnosis(
            Mistake.DIES_AT_START, f"it died at its start{said}", known.advice if known else ""
        )
    elif late is not None:
        found["start"] = Diagnosis(Mistake.SLOW_START, f"its ready came {late:.1f} s after start")
    elif any(NOT_READY in offence.text for offence in evidence.start):
        # What it said is in the check's detail already: the sign would repeat it.
        found["start"] = Diagnosis(Mistake.NOT_READY, "")
    elif evidence.start and evidence.silent_starts == evidence.starts:
        at_exit = next((reply for reply in evidence.replies if reply.after == "quit"), None)
        if at_exit:
            found["start"] = Diagnosis(
                Mistake.UNFLUSHED_OUTPUT,
                "it wrote nothing until it was told to quit, and then what it had held back"
                f" ({at_exit.last!r}): its lines waited in an output buffer",
            )
        elif evidence.quit:
            found["start"] = Diagnosis(
                Mistake.BUFFERED_INPUT,
                "it wrote nothing at all, and did not exit on quit either: it has not read"
                " its input, which waits in a buffer",
            )
        else:
            found["start"] = Diagnosis(Mistake.UNFLUSHED_OUTPUT, "it wrote nothing at all")
    moves = _late(evidence, play_ms)
    if moves is not None:
        found["play clock"] = moves
    if evidence.after_end:
        sign = "it exited after the end of a match, before the next began"
        found["stays up"] = found["reuse"] = Diagnosis(Mistake.EXIT_ON_END, sign)
    acknowledged = [
        reply
        for reply in evidence.replies
        if reply.after in ("moves", "end") and not reply.is_move and len(reply.last.split()) == 1
    ]
    not_moves = [
        offence
        for offence in evidence.faults.get(FaultKind.PROTOCOL, [])
        if NOT_A_MOVE in offence.text
    ]
    if acknowledged:
        after = " and ".join(f"`{kind}`" for kind in sorted({r.after for r in acknowledged}))
        found["clean output"] = Diagnosis(
            Mistake.ANSWERS_NO_ANSWER,
            f"it wrote {acknowledged[-1].last!r} after {after} lines, which need no answer",
        )
    elif not_moves or any(not r.is_move and r.after != "quit" for r in evidence.replies):
        found["clean output"] = Diagnosis(
            Mistake.DEBUG_ON_STDOUT, "it wrote lines that are not moves where a move was due"
        )
    return found


def _late(evidence: Evidence, play_ms: int) -> Diagnosis | None:
    """Why its moves were late, told by its own time for each (`Late.own_ms`): a move is
    late of itself when that time is over the clock, or no answer came; one that came
    within it was late only as the program was still busy with the one before, and so is
    every move after one whose answer never came (they come in order)."""
    if not evidence.late:
        return None
    own, then = [], []
    stuck: set[tuple[str, Process]] = set()
    for late in evidence.late:
        process = (late.where, late.process)
        if late.own_ms is None and process in stuck:
            then.append(late)
        elif late.own_ms is None or verdict(late.own_ms, play_ms) is not None:
            own.append(late)
        else:
            then.append(late)
        if late.own_ms is None:
            stuck.add(process)
    if not own:
        return None
    times = [
        *evidence.times_ms,
        *(math.inf if late.own_ms is None else late.own_ms for late in evidence.late),
    ]
    measured = sorted(late.own_ms for late in own if late.own_ms is not None)
    if measured and verdict(statistics.median(times), play_ms) is not None:
        # Its typical move takes longer than the clock: set-up has nothing to do with it.
        about = f"about {_rounded(statistics.median(measured))} ms of {play_ms}"
        if len(evidence.late) == evidence.asked:
            sign = f"every answer took {about}"
        else:
            sign = f"{len(evidence.late)} of {evidence.asked} answers were late, taking {about}"
        return Diagnosis(Mistake.SLOW_MOVES, sign + _never(evidence.late))
    if all(late.first_move for late in own):
        # A late first move may make the next one late too: its answer comes while that
        # clock runs.
        return Diagnosis(
            Mistake.SETUP_AFTER_READY, "in each match, the first late answer was its first move"
        )
    steps = Counter(late.step for late in own)
    named = [
        f"{step}" + (f" ({count} times)" if count > 1 else "")
        for step, count in sorted(steps.items())[:SHOWN_STEPS]
    ]
    more = f" and {len(steps) - SHOWN_STEPS} more" if len(steps) > SHOWN_STEPS else ""
    # A step is a step of its own match: the matches say that the same step is not one move.
    matches = counted(
        len({(late.where, late.process, late.match) for late in own}), "match", "matches"
    )
    sign = (
        f"late of itself at {len(own)} of {evidence.asked} moves, in {matches}: at step"
        f"{'s' if len(steps) > 1 else ''} {', '.join(named)}{more}"
    )
    if measured:
        sign += f"; the slowest answer took {measured[-1]:.0f} ms of {play_ms}"
    knock_on = [late for late in then if late.own_ms is not None]
    if knock_on:
        sign += f"; {len(knock_on)} more late only as it was still busy with one before"
    sign += _never(evidence.late)
    return Diagnosis(Mistake.LATE_AT_SOME_MOVES, sign)


def _never(late: list[Late]) -> str:
    """What to add of the late moves whose answer never came: for a program, the last of its
    process, which ended while it was still busy with them."""
    never = sum(move.own_ms is None for move in late)
    return f"; the answer to {counted(never, 'move')} never came" if never else ""


def _rounded(ms: float) -> int:
    """A time in ms to two significant figures, as `about` says it."""
    return int(float(f"{ms:.2g}")) if ms >= 100 else round(ms)
