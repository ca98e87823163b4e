"""Why a program could not get ready, from the last words it wrote as it died, and the advice
that fixes it.

The one table of the known reasons a program dies at its start: `referee validate` gives it
under its start check, `referee play` in its error line, and a tournament when it names a
player that cannot start. Runtimes say why in their own words, on either stream (the JVM
writes "Error occurred during initialization of VM" on standard output), and often end with
a line that says nothing ("A fatal exception has occurred"): the line that names the reason
is quoted, not merely the last one.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.errors import FaultKind
from referee.players.base import PlayerSpec, quoted

# What gives a program more time to get ready, wherever its start clock is set.
MORE_START_TIME = "--start-clock MS for validate and play, start_clock in a tournament config"
# Lines that close a runtime's report without saying why.
_SAYS_NOTHING = re.compile(
    r"Error: A fatal exception has occurred\. Program will exit\."
    r"|Error: Could not create the Java Virtual Machine\."
)


@dataclass(frozen=True)
class StartDiagnosis:
    """The program's own words that say why it could not start, and how to fix it."""

    reason: str
    advice: str

    def __str__(self) -> str:
        return f"{self.reason!r}: {self.advice}"


@dataclass(frozen=True)
class _Known:
    """A known reason: the line that shows it, how many lines after it say more, and the
    advice (given what the line matched)."""

    shows: re.Pattern[str]
    more: int
    advice: Callable[[re.Match[str]], str]


_KNOWN = [
    _Known(
        re.compile(r"Initial heap size set to a larger value than the maximum heap size"),
        0,
        lambda _: (
            "the JVM's heap options contradict each other: -Xms must not be larger"
            " than -Xmx (look at the command and at JAVA_TOOL_OPTIONS)"
        ),
    ),
    _Known(
        re.compile(r"Could not (allocate|reserve)|Unable to allocate|pthread_create failed"),
        0,
        lambda _: (
            "the JVM could not reserve its memory under the seat's limits: give it a"
            " smaller heap (-Xmx) and class space (-XX:CompressedClassSpaceSize=64m), or the seat"
            " more memory (--memory-mb, or memory_mb under limits in a tournament config)"
        ),
    ),
    _Known(
        re.compile(r"Error occurred during initialization of VM"),
        1,
        lambda _: "the JVM did not start: fix the option or limit its next line names",
    ),
    _Known(
        re.compile(r"Could not find or load main class (\S+)"),
        1,
        lambda found: (
            f"the JVM found no class {found[1]}: compile it first, give the"
            " directory or jar that holds it with -cp, and the class's name without .class"
        ),
    ),
    _Known(
        re.compile(r"Unrecognized (VM )?option|Invalid (initial|maximum) heap size"),
        0,
        lambda _: "the JVM does not take this option: correct it or leave it out",
    ),
    _Known(
        re.compile(r"can't open file '([^']*)': \[Errno 13\]"),
        0,
        lambda found: (
            f"the jail's user may not read {found[1]}: make it, and the directories"
            " above it, readable by every user (chmod a+r, and a+x for directories)"
        ),
    ),
    _Known(
        re.compile(r"can't open file '([^']*)'"),
        0,
        lambda found: (
            f"there is no file {found[1]}: give the script's path from the"
            " player's working directory, or an absolute path"
        ),
    ),
    _Known(
        re.compile(r"^(ModuleNotFoundError|ImportError): .*"),
        0,
        lambda _: (
            "the interpreter the jail runs lacks that module: install it for that"
            " interpreter, or start the program with the interpreter of the environment that has"
            " it (its absolute path, e.g. .venv/bin/python)"
        ),
    ),
    _Known(
        re.compile(r"[Ee]xec format error"),
        0,
        lambda _: (
            "the file is not a program this machine can run: build it here, give a script"
            " a #! line, or start it with its interpreter"
        ),
    ),
    _Known(
        re.compile(r"(not found|No such file or directory)$"),
        0,
        lambda _: (
            "a program it runs is not in the jail: give the program's absolute path (the"
            " jail sees the system's directories and the player's own, not your shell's setup)"
        ),
    ),
    _Known(
        re.compile(r"^[A-Za-z_.]*(Error|Exception)\b.*"),
        0,
        lambda _: (
            "it failed before it was ready: run it by hand with a `start` line on its"
            " input and fix what it says"
        ),
    ),
]


def diagnose_start(
    argv: Sequence[str],
    detail: str,
    words: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> StartDiagnosis | None:
    """Why the program `argv` could not start, from its fault's `detail` and its last `words`
    (standard error and output, last lines last), and the advice that fixes it; None when
    they say nothing known.

    A command whose program is a version manager's shim (pyenv, asdf) that could not run is
    told the real interpreter's path instead: the jail does not have the manager's setup, so
    a shim never runs there. Whatever `detail` says: on a loaded machine its exit (127) may
    not be seen before its closed output is.
    """
    lines = [line.strip() for line in words if line.strip() and not _SAYS_NOTHING.search(line)]
    if argv:
        shim = _shim_advice(argv[0], env or {}, cwd)
        if shim is not None:
            return StartDiagnosis(lines[-1] if lines else detail, shim)
    for known in _KNOWN:
        for index in range(len(lines) - 1, -1, -1):
            found = known.shows.search(lines[index])
            if found:
                reason = " / ".join(lines[index : index + 1 + known.more])
                return StartDiagnosis(reason, known.advice(found))
    return None


@dataclass(frozen=True)
class _Shim:
    """A version manager's shim: where it is, whose it is, and the program it runs, if found."""

    path: str
    manager: str
    real: str | None


def _shim(program: str, env: Mapping[str, str], cwd: Path | None) -> _Shim | None:
    """The shim `program` is, or finds on PATH; None when it is no shim."""
    path = {**os.environ, **env}.get("PATH")
    found = shutil.which(program, path=path) if "/" not in program else program
    if found is None:
        return None
    try:
        with open(found, "rb") as file:
            text = file.read(4096).decode(errors="replace")
    except OSError:
        return None
    if not text.startswith("#!"):
        return None
    manager, real = _real_program(text, Path(found).name, env, cwd or Path.cwd())
    return _Shim(found, manager, real) if manager is not None else None


def _shim_advice(program: str, env: Mapping[str, str], cwd: Path | None) -> str | None:
    """The advice for a command whose program is a version manager's shim, or None."""
    shim = _shim(program, env, cwd)
    if shim is None:
        return None
    name = Path(shim.path).name
    instead = (
        f"use {shim.real}" if shim.real else f"use the path `{shim.manager} which {name}` prints"
    )
    return (
        f"{shim.path} is a {shim.manager} shim, which cannot run in the jail: {instead} in the"
        " command instead"
    )


def jail_program(program: str) -> str:
    """What a command run from here should name for `program` to run in the jail: the program
    a version manager's shim on PATH stands for, found as the shim finds it (the jail has no
    manager, so a shim cannot run there), else `program` itself."""
    shim = _shim(program, {}, None)
    return shim.real if shim is not None and shim.real is not None else program


def _real_program(
    shim: str, name: str, env: Mapping[str, str], cwd: Path
) -> tuple[str | None, str | None]:
    """The version manager a shim script belongs to, and the program it would run, if found."""
    root = re.search(r'export PYENV_ROOT="([^"]+)"', shim)
    if root is not None:
        return "pyenv", _pyenv_program(Path(root[1]), name, env, cwd)
    asdf = re.search(r"exec (\S+)/bin/asdf exec", shim)
    if asdf is not None:
        for plugin, version in re.findall(r"^# asdf-plugin: (\S+) (\S+)$", shim, re.MULTILINE):
            candidate = Path(asdf[1]) / "installs" / plugin / version / "bin" / name
            if candidate.is_file():
                return "asdf", str(candidate)
        return "asdf", None
    return None, None


def _pyenv_program(root: Path, name: str, env: Mapping[str, str], cwd: Path) -> str | None:
    """The program pyenv's shim `name` runs: the version named by PYENV_VERSION, the nearest
    .python-version, or pyenv's global version file, as pyenv itself looks them up."""
    versions = {**os.environ, **env}.get("PYENV_VERSION", "").split(":")
    if not any(versions):
        for directory in (cwd, *cwd.parents):
            local = directory / ".python-version"
            if local.is_file():
                versions = local.read_text(errors="replace").split()
                break
        else:
            global_file = root / "version"
            versions = (
                global_file.read_text(errors="replace").split() if global_file.is_file() else []
            )
    for version in versions:
        candidate = root / "versions" / version / "bin" / name
        if candidate.is_file():
            return str(candidate)
    return None


def unready_line(
    who: str,
    spec: PlayerSpec,
    fault: tuple[FaultKind, str],
    words: Sequence[str],
    log: str | None,
    match_id: str | None = None,
) -> str:
    """One line naming a program that never got ready (`fault`: its kind and detail), why,
    in its own last `words` where they say, the advice that fits, and where its log is:
    `xcplayer (python3 bot.py) could not start: exited with code 2 (...): ...; its log: ...`.
    `referee play` says it as its error, a tournament at a player's first failure."""
    kind, detail = fault
    known = diagnose_start(spec.argv, detail, words, spec.env, spec.cwd)
    if known is not None:
        said = f" ({quoted(known.reason, 200)}): {known.advice}"
    elif kind is FaultKind.TIMEOUT:
        said = f": answer ready sooner, or give it a longer start clock ({MORE_START_TIME})"
    elif words:
        said = f" ({quoted(words[-1], 200)})"
    else:
        said = ""
    where = f" in {match_id}" if match_id else ""
    its_log = f"; its log: {log}" if log else ""
    return f"{who} ({' '.join(spec.command)}) could not start{where}: {detail}{said}{its_log}"
