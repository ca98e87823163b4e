"""The GDL reasoner: speed on a fixed set of games, and a run over a whole corpus of rulesheets.

Usage:
  python benchmarks/gdl.py [--rules DIR] [--seconds S] [--json]
  python benchmarks/gdl.py --corpus DIR [--limit S] [--jobs N] [--json]

The first form measures, per game, the time to load (parse, check, ground, compile), states
per second (next state plus the legal moves of every role, over random playouts), playouts
per second and the referee's worst time for one step, beside ggp-base's Java reasoner
(ProverStateMachine) measured the same way, and beside the native engine for the five
built-in games. It exits 1 when a game is below ggp-base's rate or a step takes 20 ms.

The second plays one random game of every `.kif` file in DIR, each in its own process with
a time limit, and says which loaded and played to the end with a goal for every role,
which were refused and why, and which ran out of time; and for the games played one state at
a time, their states per second (steps over the time after loading).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tabulate import tabulate

from referee.errors import GameFault, RefereeError
from referee.games import GAMES, Game, load_rulesheet

from _corpus import corpus_rules, missing  # isort: skip
from _help import described

RULES = corpus_rules()
# ggp-base's ProverStateMachine, random playouts on one core, states per second.
GGP_BASE = {
    "ticTacToe": 7_921,
    "connectFour": 2_113,
    "breakthrough": 1_117,
    "blockerParallel": 1_375,
    "ticblock": 854,
    "double_tictactoe_dengji": 1_633,
    "hexPie": 59,
    "quad_7x7": 9.4,
}
NATIVE = {
    "blockerParallel": "blocker-parallel",
    "ticblock": "ticblock",
    "hexPie": "hex-pie",
    "double_tictactoe_dengji": "double-tictactoe",
    "quad_7x7": "quad",
}
STEP_BUDGET_MS = 20.0
# A random game that has not ended after this many steps is reported as not ending.
MAX_STEPS = 10_000


def speed(game: Game, seconds: float, seed: int = 1) -> dict[str, Any]:
    """Random playouts for about `seconds`: states/s, playouts/s and the slowest step."""
    rng = random.Random(seed)
    roles = range(len(game.roles))
    states = playouts = 0
    worst = 0.0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        state = game.initial_state()
        while True:
            began = time.perf_counter()
            if game.is_terminal(state):
                break
            legal = [game.legal_moves(state, role) for role in roles]
            joint = tuple(rng.choice(moves) for moves in legal)
            state = game.next_state(state, joint)
            worst = max(worst, time.perf_counter() - began)
            states += 1
        game.goals(state)
        playouts += 1
        now = time.perf_counter()
        if now >= deadline:
            break
    elapsed = now - start
    return {
        "states_per_s": round(states / elapsed, 1),
        "playouts_per_s": round(playouts / elapsed, 2),
        "worst_step_ms": round(worst * 1000, 2),
    }


def fixed(rules: Path, seconds: float) -> list[dict[str, Any]]:
    rows = []
    for name, anchor in GGP_BASE.items():
        print(f"{name}...", file=sys.stderr, flush=True)
        began = time.perf_counter()
        game = load_rulesheet(rules / f"{name}.kif")
        load_s = time.perf_counter() - began
        row: dict[str, Any] = {"game": name, "load_s": round(load_s, 2), **speed(game, seconds)}
        row["ggp_base_states_per_s"] = anchor
        row["times_ggp_base"] = round(row["states_per_s"] / anchor, 1)
        if name in NATIVE:
            native = speed(GAMES[NATIVE[name]], seconds)
            row["native_states_per_s"] = native["states_per_s"]
        row["ok"] = row["states_per_s"] >= anchor and row["worst_step_ms"] < STEP_BUDGET_MS
        rows.append(row)
    return rows


def one(path: Path) -> dict[str, Any]:
    """Load a rulesheet and play one random game: the corpus run's work for one file."""
    began = time.perf_counter()
    try:
        game = load_rulesheet(path)
    except RefereeError as error:
        return {"status": "refused", "reason": str(error)}
    load_s = time.perf_counter() - began
    reasoner = "compiled" if game.reasoner.complete else "per state"
    rng = random.Random(1)
    steps = 0
    state = game.initial_state()
    try:
        while not game.is_terminal(state):
            if steps >= MAX_STEPS:
                return {"status": "no end", "reason": f"not over after {MAX_STEPS} steps"}
            joint = tuple(game.random_move(state, r, rng) for r in range(len(game.roles)))
            state = game.next_state(state, joint)
            steps += 1
        goals = game.goals(state)
    except GameFault as error:
        return {"status": "faulty", "reason": str(error)[:300], "load_s": round(load_s, 2)}
    seconds = time.perf_counter() - began
    return {
        "status": "played",
        "reasoner": reasoner,
        "roles": len(game.roles),
        "steps": steps,
        "goals": list(goals),
        "load_s": round(load_s, 2),
        "seconds": round(seconds, 2),
        "states_per_s": round(steps / max(seconds - load_s, 1e-9), 1),
    }


def corpus(folder: Path, limit: float, jobs: int) -> list[dict[str, Any]]:
    files = sorted(folder.glob("*.kif"))
    done = 0

    def run(path: Path) -> dict[str, Any]:
        nonlocal done
        command = [sys.executable, __file__, "--one", str(path)]
        # Its own process group, so that a timeout also ends the grounder it started.
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = child.communicate(timeout=limit)
            row = (
                json.loads(out)
                if child.returncode == 0
                else {"status": "crashed", "reason": err.strip()[-300:]}
            )
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            row = {"status": "timed out", "reason": f"over {limit:g} s"}
        done += 1
        print(f"[{done}/{len(files)}] {path.stem}: {row['status']}", file=sys.stderr, flush=True)
        return {"game": path.stem, **row}

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(run, files))


def main() -> int:
    parser = argparse.ArgumentParser(**described(__doc__))
    parser.add_argument("--rules", type=Path, default=RULES, help="folder of the fixed games")
    parser.add_argument("--seconds", type=float, default=5.0, help="time per game (default 5)")
    parser.add_argument("--corpus", type=Path, help="play one game of every .kif in this folder")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds per corpus game")
    parser.add_argument("--jobs", type=int, default=1, help="corpus games at once (default 1)")
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    if args.corpus:
        rows = corpus(args.corpus, args.limit, args.jobs)
        report_corpus(rows, args.json)
        return 0
    if not args.rules.is_dir():
        parser.error(missing(args.rules))
    rows = fixed(args.rules, args.seconds)
    report_fixed(rows, args.json, args.seconds)
    return 0 if all(row["ok"] for row in rows) else 1


def report_fixed(rows: list[dict[str, Any]], as_json: bool, seconds: float) -> None:
    if as_json:
        print(json.dumps({"python": platform.python_version(), "results": rows}, indent=2))
        return
    print(f"Python {platform.python_version()}, one core, {seconds:g} s per game")
    headers = [
        "game",
        "load s",
        "states/s",
        "ggp-base",
        "x ggp-base",
        "native states/s",
        "playouts/s",
        "worst step ms",
        "ok",
    ]
    table = [
        [
            r["game"],
            r["load_s"],
            f"{r['states_per_s']:,.0f}",
            f"{r['ggp_base_states_per_s']:,}",
            r["times_ggp_base"],
            f"{r['native_states_per_s']:,.0f}" if "native_states_per_s" in r else "",
            r["playouts_per_s"],
            r["worst_step_ms"],
            "yes" if r["ok"] else "NO",
        ]
        for r in rows
    ]
    print(tabulate(table, headers=headers, disable_numparse=True))


def report_corpus(rows: list[dict[str, Any]], as_json: bool) -> None:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    if as_json:
        print(json.dumps({"counts": counts, "games": rows}, indent=2))
        return
    print(tabulate(sorted(counts.items()), headers=["outcome", "rulesheets"]))
    slow = [row for row in rows if row.get("reasoner") == "per state"]
    if slow:
        print(f"\nplayed one state at a time ({len(slow)}):")
        print(
            tabulate(
                [[r["game"], r["load_s"], r["steps"], f"{r['states_per_s']:,.1f}"] for r in slow],
                headers=["rulesheet", "load s", "steps", "states/s"],
                disable_numparse=True,
            )
        )
    others = [row for row in rows if row["status"] != "played"]
    if others:
        print()
        print(
            tabulate(
                [[r["game"], r["status"], r["reason"]] for r in others],
                headers=["rulesheet", "outcome", "why"],
                maxcolwidths=[None, None, 90],
            )
        )


if __name__ == "__main__":
    sys.exit(main())
