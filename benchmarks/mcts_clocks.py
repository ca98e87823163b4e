"""Whether the built-in mcts answers in time at the default clocks, on the heaviest games.

Usage: python benchmarks/mcts_clocks.py [GAME ...] [--json]

One `referee play` per game, as a user runs it, at the default clocks and limits: mcts in
the first role, random in the others. A GAME is a built-in game or a rulesheet path; by
default the five built-in games and the ten heavy rulesheets below. Exit 1 when any match
has a fault of mcts (a match the referee aborts at its own limit on computing a state,
state_seconds, is reported but is no fault of a player).

The heavy rulesheets, measured by `benchmarks/gdl.py --corpus` (docs/benchmarks.md): the
slowest to load (kalaha_2009 17.8 s, crossers3 17.6 s, chess_200 17.5 s, sudokuGrade3
15.5 s, quarto 12.9 s), the compiled game with the slowest states (pancakes88, 100 states/s)
and the games played one state at a time whose states are slowest (gt_attrition 0.8
states/s, alexChess 5.2, amazonsTorus 7.8, slaughter 10.2 over 200 steps).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from referee.games import GAMES
from referee.games.gdl.syntax import format_term, name_of, parse_terms
from referee.players.chance import is_chance
from referee.records.transcript import read_transcript

from _corpus import corpus_rules, missing  # isort: skip
from _help import described

CORPUS = corpus_rules()
HEAVY = (
    "kalaha_2009",
    "crossers3",
    "chess_200",
    "sudokuGrade3",
    "quarto",
    "pancakes88",
    "gt_attrition",
    "alexChess",
    "amazonsTorus",
    "slaughter",
)


def _roles(game: str) -> list[str]:
    if game in GAMES:
        return list(GAMES[game].roles)
    terms = parse_terms(Path(game).read_text(encoding="utf-8"), game)
    return [format_term(term[1]) for term, _line in terms if name_of(term) == "role"]


def play(game: str, folder: Path) -> dict[str, object]:
    """One match of mcts against random; what happened."""
    roles = [role for role in _roles(game) if not is_chance(role)]
    seats = [f"{role}={'mcts' if i == 0 else 'random'}" for i, role in enumerate(roles)]
    out = folder / f"{Path(game).stem}.json"
    command = [sys.executable, "-m", "referee", "play", game, "--out", str(out)]
    for seat in seats:
        command += ["-p", seat]
    began = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = round(time.monotonic() - began, 1)
    if not out.exists():
        return {"game": Path(game).stem, "error": done.stderr.strip(), "seconds": seconds}
    transcript = read_transcript(out)
    mcts_steps = sum(1 for step in transcript.steps if step.moves.get(roles[0]) != "noop")
    return {
        "game": Path(game).stem,
        "mcts": roles[0],
        "steps": len(transcript.steps),
        "mcts_moves": mcts_steps,
        "end": str(transcript.end_reason),
        "goals": transcript.goals,
        "faults": [f"{fault.role} {fault.kind}: {fault.detail}" for fault in transcript.faults],
        # The referee's own limit on computing a state, which no player's answer decides.
        "rules_fault": transcript.rules_fault.detail if transcript.rules_fault else None,
        "seconds": seconds,
    }


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("games", nargs="*")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if not options.games and not CORPUS.is_dir():
        parser.error(missing(CORPUS) + "; or name the games to play")
    games = options.games or [*GAMES, *(str(CORPUS / f"{name}.kif") for name in HEAVY)]
    with tempfile.TemporaryDirectory() as folder:
        results = []
        for game in games:
            results.append(play(game, Path(folder)))
            if not options.json:
                print(json.dumps(results[-1]), flush=True)
    failed = [row for row in results if row.get("error") or row.get("faults")]
    if options.json:
        print(json.dumps({"results": results, "failed": len(failed)}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
