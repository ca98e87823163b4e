"""A referee in a process of its own, to be killed with SIGKILL as a test needs; and the
processes of a player, found from outside its jail by their command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

MISBEHAVING = Path(__file__).resolve().parents[1] / "players" / "misbehaving.py"


def bot_copy(directory: Path, name: str = "zoo_bot.py", script: Path = MISBEHAVING) -> Path:
    """A copy of a test player under a name no other process has, in a directory of its own
    (what a player may read in its jail): what it leaves shows."""
    bots = directory / "bots"
    bots.mkdir(parents=True, exist_ok=True)
    copy = bots / name
    shutil.copy(script, copy)
    return copy


def running(script: Path) -> list[int]:
    """Living processes whose command line has `script` as an argument (its forks bear it too).

    As a whole argument: a referee's own command line names it inside `ROLE=COMMAND`, and so
    does every child the referee forks until that child runs its program.
    """
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as file:
                cmdline = file.read()
        except OSError:
            continue
        if str(script).encode() in cmdline.split(b"\0") and process_state(int(entry.name)) not in (
            None,
            "Z",
        ):
            found.append(int(entry.name))
    return found


def referee_with_one_player(
    command: Sequence[str], log: Path, request: str | None = None, jailed: bool = True
) -> tuple[subprocess.Popen[str], int]:
    """Start a referee process with one player (and send it `request`), in the jail or as
    on a machine without one; the referee, and the player's pid once it runs."""
    script = (
        "import asyncio, sys\n"
        "import referee.sandbox.isolation as isolation\n"
        f"if not {jailed}:\n"
        "    isolation._jail = lambda: (None, 'not in this test')\n"
        "from pathlib import Path\n"
        "from referee.players.base import PlayerSpec\n"
        "from referee.players.process import ProgramPlayer\n"
        "async def main():\n"
        f"    player = ProgramPlayer(PlayerSpec('s', {tuple(command)!r}), Path(sys.argv[1]))\n"
        "    await player.start()\n"
        f"    if {request!r}:\n"
        f"        await player.request({request!r}, 5.0)\n"
        "    print(player.pid, flush=True)\n"
        "    await asyncio.sleep(300)\n"
        "asyncio.run(main())\n"
    )
    referee = subprocess.Popen(
        [sys.executable, "-c", script, str(log)], stdout=subprocess.PIPE, text=True
    )
    assert referee.stdout is not None
    return referee, int(referee.stdout.readline())


def process_state(pid: int) -> str | None:
    """The state letter of a process (Z for a zombie), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return None
