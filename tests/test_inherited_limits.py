"""A referee started under hard limits (a batch system's, a shared host's `ulimit`): its
players' limits are lowered to its own with one note, or the command ends with one line that
names the limit; and a player's setup that fails between fork and exec says what failed."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from referee.sandbox.isolation import Protections, SetupError, child_setup
from referee.sandbox.limits import MIB, Limits

# Players that answer at once: a match of ticblock is over in a second or two.
_SEATS = ("-p", "xcplayer=random", "-p", "obplayer=random")


def _referee_under(
    limits: dict[int, int], tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """`referee play ticblock` between two random players, started under these hard (and
    soft) limits, as a shell's `ulimit` sets them."""
    play = ["play", "ticblock", *_SEATS, "--out", str(tmp_path / "match.json"), *args]
    return _run_under(limits, play)


def _run_under(limits: dict[int, int], args: list[str]) -> subprocess.CompletedProcess[str]:
    def lowered() -> None:
        for which, value in limits.items():
            resource.setrlimit(which, (value, value))

    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lowered,
    )


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "preexec_fn" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("which", "value", "note"),
    [
        # Above the memory limit, below the address space a player is given with or without
        # a memory cgroup (twice memory_mb, or a backstop far above).
        (
            resource.RLIMIT_AS,
            1536 * MIB,
            "the address space is limited to 1536 MiB by the shell (ulimit -v)",
        ),
        (
            resource.RLIMIT_NOFILE,
            64,
            "the number of open files is limited to 64 by the shell (ulimit -n)",
        ),
        (
            resource.RLIMIT_FSIZE,
            4 * MIB,
            "the file size is limited to 4 MiB by the shell (ulimit -f)",
        ),
    ],
    ids=["address space", "open files", "file size"],
)
@pytest.mark.slow
def test_a_referee_under_a_lower_limit_plays_and_notes_it_once(
    which: int, value: int, note: str, tmp_path: Path
) -> None:
    result = _referee_under({which: value}, tmp_path, "--memory-mb", "1024")
    _no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert "result: " in result.stdout
    assert _notes(result) == [f"note: {note}; each player's is lowered to it"]


@pytest.mark.slow
def test_a_tournament_notes_a_lowered_limit_once_for_all_its_matches(tmp_path: Path) -> None:
    result = _run_under({resource.RLIMIT_NOFILE: 64}, ["tournament", str(_cup(tmp_path))])
    _no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert "all games (2 matches" in result.stdout
    assert _notes(result) == [
        "note: the number of open files is limited to 64 by the shell (ulimit -n); each"
        " player's is lowered to it"
    ]


def _notes(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note: ")]


def _cup(tmp_path: Path) -> Path:
    """A tournament of two matches between random players."""
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\ngames: [ticblock]\nplay_clock: 300\n"
        f"output: {tmp_path / 'results'}\n"
        "players:\n  - {name: one, command: random}\n  - {name: two, command: random}\n"
    )
    return config


@pytest.mark.slow
def test_a_referee_under_a_process_limit_plays(tmp_path: Path) -> None:
    """RLIMIT_NPROC does not hold root back, but each seat user of a root referee's jail has
    it; a referee that is not root notes it where it is below its backstop (its user's
    processes and twice the player's limit)."""
    result = _referee_under({resource.RLIMIT_NPROC: 512}, tmp_path)
    _no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert "result: " in result.stdout
    assert _notes(result) in (
        [],
        [
            "note: the number of processes is limited to 512 by the shell"
            " (ulimit -u); each player's is lowered to it"
        ],
    )


@pytest.mark.parametrize(
    ("limits", "line"),
    [
        (
            {resource.RLIMIT_AS: 512 * MIB},
            "the address space is limited to 512 MiB by the shell (ulimit -v), less than a"
            " player's memory limit of 1024 MiB: start the referee under `ulimit -v 1048576`"
            " or more, or give players less memory (memory_mb)",
        ),
        (
            {resource.RLIMIT_NOFILE: 12},
            "the number of open files is limited to 12 by the shell (ulimit -n), fewer than"
            " the 16 a player needs to start: start the referee under `ulimit -n 16` or more",
        ),
        (
            # Enough for a player, not for the referee and its two players: the referee
            # runs out as it starts them, always at the same point.
            {resource.RLIMIT_NOFILE: 16},
            "the referee itself cannot run within the number of open files, limited to 16 by"
            " the shell (ulimit -n): start it under a higher `ulimit -n`",
        ),
        (
            # Too small for the transcript the referee writes.
            {resource.RLIMIT_FSIZE: 1024},
            "the referee itself cannot run within the file size, limited to 1 KiB by the"
            " shell (ulimit -f): start it under a higher `ulimit -f`",
        ),
    ],
    ids=[
        "address space below memory",
        "open files below a player's",
        "referee's open files",
        "referee's file size",
    ],
)
@pytest.mark.slow
def test_a_limit_too_low_to_play_ends_with_one_line(
    limits: dict[int, int], line: str, tmp_path: Path
) -> None:
    result = _referee_under(limits, tmp_path, "--memory-mb", "1024")
    _no_traceback(result)
    assert result.returncode != 0
    errors = [said for said in result.stderr.splitlines() if said.startswith("referee: ")]
    assert errors == [f"referee: error: {line}"]


@pytest.mark.slow
def test_a_tournament_whose_referee_runs_out_of_open_files_ends_with_one_line(
    tmp_path: Path,
) -> None:
    """Its matches run in a task group: what the referee ran out of is inside a group."""
    result = _run_under({resource.RLIMIT_NOFILE: 18}, ["tournament", str(_cup(tmp_path))])
    _no_traceback(result)
    assert result.returncode == 1
    errors = [said for said in result.stderr.splitlines() if said.startswith("referee: ")]
    assert errors == [
        "referee: error: the referee itself cannot run within the number of open files, limited"
        " to 18 by the shell (ulimit -n): start it under a higher `ulimit -n`"
    ]


def test_a_failed_setup_says_which_call_failed_and_why() -> None:
    """subprocess says only "Exception occurred in preexec_fn"; the child says what failed."""
    protections = Protections(network=False, network_how="", why_not=())
    nowhere = frozenset({4095})  # a core no machine here has
    setup = child_setup(Limits(), protections, (), cores=nowhere)
    with pytest.raises(SetupError) as raised, setup as preexec:
        subprocess.Popen(["true"], preexec_fn=preexec)
    assert str(raised.value) == (
        "its process could not be set up before exec, pinning it:"
        f" sched_setaffinity(0, {min(nowhere)}) failed: EINVAL (Invalid argument)"
    )
