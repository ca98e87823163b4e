"""Results directories for the report's tests: a copy with a transcript tampered with, and
a large field made of copies of one real match."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from itertools import combinations
from pathlib import Path

from referee.records.transcript import read_transcript, write_transcript


def tampered_copy(results: Path, copy: Path) -> Path:
    """A copy of a results directory in which a transcript's result was changed and a file
    is not a transcript at all; the tampered transcript's path."""
    shutil.copytree(results, copy)
    tampered = sorted(copy.glob("ticblock-*.json"))[0]
    data = json.loads(tampered.read_text())
    first = next(iter(data["goals"]))
    data["goals"][first] = 1 if data["goals"][first] != 1 else 2
    tampered.write_text(json.dumps(data, indent=2))
    (copy / "garbage.json").write_text("{ not json")
    return tampered


def large_field(results: Path, directory: Path, players: int) -> Path:
    """A results directory of a round robin of `players` players (`p00`, `p01`, ...): each
    pair once, each match a copy of a real ticblock match of `results` with its seats given
    to the pair (unsigned, as renaming the seats voids the signature), so that it verifies."""
    played = read_transcript(sorted(results.glob("ticblock-*.json"))[0])
    names = [f"p{number:02d}" for number in range(players)]
    directory.mkdir()
    for first, second in combinations(names, 2):
        seats = [
            replace(seat, player=name)
            for seat, name in zip(played.seats, (first, second), strict=True)
        ]
        match_id = f"ticblock-r1-{first}-vs-{second}"
        copy = replace(played, match_id=match_id, seats=seats, signature=None)
        write_transcript(directory / f"{match_id}.json", copy, None, sync=False)
    return directory
