"""A referee in a process of its own, to be killed with SIGKILL as a test needs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def referee_with_one_player(
    command: Sequence[str], log: Path, request: str | None = None
) -> tuple[subprocess.Popen[str], int]:
    """Start a referee process with one player (and send it `request`); the referee, and the
    player's pid once it runs."""
    script = (
        "import asyncio, sys\n"
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
