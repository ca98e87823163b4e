"""What a replay computes (`replays`), in a worker process of its own, never the arena's: a
match's transcript, its signature checked and replayed by the rules, and what the arena
shows of it. The answer is plain data (`Replayed`), which crosses back to the arena's
process and is kept as a file (`replay_cache`): the rules' objects that the replay made
stay in the worker."""

from __future__ import annotations

import hashlib
import json
import os
import select
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from referee.records.ggp import to_ggp
from referee.records.verify import Outcome, verify_file
from referee.report.site import match_viewer

# How much less than the arena's a worker's priority is (nice(1)).
NICENESS = 10


class Kind(StrEnum):
    """What a replay is for, which is what it computes besides the verdict."""

    # A match page: the report's viewer of the match and the seats whose logs it offers.
    PAGE = "page"
    # The organiser's replay: the verdict alone.
    VERDICT = "verdict"
    # A download of the match in the GGP managers' match JSON (`referee export`'s).
    EXPORT = "export"


@dataclass(frozen=True)
class Replayed:
    """A transcript replayed: why it does not verify (`problem`), or, if it does, what its
    `kind` asked for. `transcript` is the sha256 of the bytes replayed, and `made_by` the
    process that replayed them."""

    kind: Kind
    transcript: str
    made_by: int
    problem: str | None
    # A page's: the viewer's HTML, escaped where made, and each seat's (role, player).
    html: str = ""
    seats: tuple[tuple[str, str], ...] = ()
    # An export's: the name it is offered under and its JSON.
    export_name: str = ""
    export: str = ""

    @property
    def verified(self) -> bool:
        return self.problem is None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Replayed:
        """The record `to_json` gave; ValueError if `data` is not one, field by field."""
        if not isinstance(data, dict) or set(data) != set(cls.__dataclass_fields__):
            raise ValueError("not a replay's record")
        seats = data["seats"]
        if not isinstance(seats, list) or not all(_pair_of_text(seat) for seat in seats):
            raise ValueError("its seats are not pairs of names")
        texts = ("transcript", "html", "export_name", "export")
        if not all(isinstance(data[name], str) for name in texts):
            raise ValueError("a field that is text is not")
        if not isinstance(data["made_by"], int) or not isinstance(data["problem"], str | None):
            raise ValueError("its process or its problem is amiss")
        shown = {**data, "kind": Kind(data["kind"]), "seats": tuple(map(tuple, seats))}
        return cls(**shown)


def _pair_of_text(seat: Any) -> bool:
    return isinstance(seat, list) and len(seat) == 2 and all(isinstance(s, str) for s in seat)


def digest(path: Path) -> str:
    """The sha256 of a transcript file's bytes: what a replay of it is kept by. OSError if
    it cannot be read."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lowered(arena: int) -> None:
    """A worker's start: it yields a core to the ladder's matches when they want it, and it
    ends when the arena's process `arena` does, however that ends. Killed, the arena closes
    no pool: its workers would wait for work for ever, and keep the fork server and the
    resource tracker they hold pipes of running too."""
    os.nice(NICENESS)
    threading.Thread(target=_exit_with, args=(arena,), name="exit-with-arena", daemon=True).start()


def _exit_with(pid: int) -> None:
    """Exit this process as soon as process `pid` has ended (at once if it has)."""
    try:
        ended = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)
    except OSError:
        return  # no pidfd here (Linux before 5.3): the arena closes its pool, when it can
    select.select([ended], [], [])
    os._exit(1)


def replayed(kind: Kind, path: str, public_key: str, bot_pages: Mapping[str, str]) -> Replayed:
    """The transcript at `path`, checked against the arena's `public_key` and replayed, and
    what `kind` asks of it; a player's name on a page links to its bot's page
    (`bot_pages`)."""
    where = Path(path)
    try:
        sha256 = digest(where)
    except OSError:
        sha256 = ""  # the verdict says why it cannot be read
    verdict = verify_file(where, public_key)
    shown = verdict.replayed
    if verdict.outcome is not Outcome.VERIFIED or shown is None or shown.game is None:
        return Replayed(kind, sha256, os.getpid(), verdict.problem or "no problem given")
    transcript, game = shown.transcript, shown.game
    if kind is Kind.PAGE:
        html = match_viewer(transcript, game, shown.frames, bot_pages.get)
        seats = tuple(
            (role, seat.player)
            for role in game.roles
            for seat in transcript.seats
            if seat.role == role
        )
        return Replayed(kind, sha256, os.getpid(), None, html=html, seats=seats)
    if kind is Kind.EXPORT:
        signed = json.loads(where.read_text(encoding="utf-8"))
        text = json.dumps(to_ggp(transcript, game, signed), indent=2) + "\n"
        name = transcript.match_id
        return Replayed(kind, sha256, os.getpid(), None, export_name=name, export=text)
    return Replayed(kind, sha256, os.getpid(), None)
