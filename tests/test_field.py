"""Tournaments as organisers run them: a field that changes between runs, gauntlets, SPRT
runs that stop on their own, openings shared within a pair, live standings."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.records.transcript import Transcript
from referee.tournaments.config import load_config
from referee.tournaments.schedule import schedule
from tests.support.matches import RANDOM
from tests.support.tournaments import run, transcripts, write_config

pytestmark = pytest.mark.usefixtures("every_transcript_verifies")
runner = CliRunner()


# A seeded random player that needs nothing but Python: its copy is all its jail shows it.
BOT = """import random, re, sys
random.seed(int(sys.argv[1]))
MOVE = re.compile(r"\\((?:[^()]|\\([^()]*\\))*\\)|[^\\s()]+")
for line in sys.stdin:
    words = line.split(maxsplit=3)
    if words[:1] == ["start"]:
        print("ready", flush=True)
    elif words[:1] == ["go"]:
        print(random.choice(MOVE.findall(words[3])), flush=True)
    elif words[:1] == ["quit"]:
        break
"""


def bot(directory: Path, name: str, seed: int) -> str:
    """A seeded random player run from its own file, which a test may change."""
    program = directory / "bots" / f"{name}.py"
    if not program.exists():
        program.parent.mkdir(exist_ok=True)
        program.write_text(BOT)
    return f"{sys.executable} {program} {seed}"


def test_a_new_entrant_plays_only_its_own_matches(tmp_path: Path) -> None:
    two = {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)}
    first = run(load_config(write_config(tmp_path, two)))
    before = transcripts(load_config(write_config(tmp_path, two)).output)
    assert len(first.played) == 4 and first.changes == []
    assert all(t.end_reason == "terminal" for t in before.values())
    three = {**two, "c": bot(tmp_path, "c", 3)}
    recorder = run(load_config(write_config(tmp_path, three)))
    assert recorder.changes == ["player c: new in the field; 8 matches to play"]
    assert recorder.plan == (12, 4)
    assert sorted(recorder.played) == sorted(
        m
        for m in transcripts(tmp_path / "results" / "cup")
        if "c" in m.split("-r1-")[1].split("-vs-")
    )
    after = transcripts(tmp_path / "results" / "cup")
    assert all(after[name] == transcript for name, transcript in before.items())


def test_more_rounds_play_only_the_new_rounds(tmp_path: Path) -> None:
    two = {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)}
    run(load_config(write_config(tmp_path, two)))
    recorder = run(load_config(write_config(tmp_path, two, extra="rounds: 3\n")))
    assert recorder.changes == ["rounds: 8 matches of the added rounds are to play"]
    assert recorder.plan == (12, 4)
    assert sorted(recorder.played) == sorted(
        name for name in transcripts(tmp_path / "results" / "cup") if "-r1-" not in name
    )


def test_a_stopped_run_played_on_says_nothing_of_added_rounds(tmp_path: Path) -> None:
    # As if the first run had been stopped after its first round: the rounds it left are
    # the same schedule's, not added ones.
    two = {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)}
    config = load_config(write_config(tmp_path, two, extra="rounds: 3\n"))
    run(config)
    for path in config.output.glob("*.json"):
        if "-r1-" not in path.name:
            path.unlink()
    recorder = run(config)
    assert recorder.changes == []
    assert recorder.plan == (12, 4)


@pytest.mark.parametrize("change", ["argument", "program file"])
def test_a_changed_command_sets_its_matches_aside_and_plays_them_again(
    tmp_path: Path, change: str
) -> None:
    players = {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2), "c": bot(tmp_path, "c", 3)}
    config = load_config(write_config(tmp_path, players, games="[ticblock]"))
    run(config)
    before = transcripts(config.output)
    if change == "argument":
        players["b"] = bot(tmp_path, "b", 22)
    else:
        with (tmp_path / "bots" / "b.py").open("a") as program:
            program.write("# resubmitted\n")
    recorder = run(load_config(write_config(tmp_path, players, games="[ticblock]")))
    aside = next((config.output / "set-aside").iterdir())
    assert recorder.changes == [
        f"player b: its command or program has changed since 4 of its matches; they are set"
        f" aside in {aside} and will be played again"
    ]
    with_b = sorted(name for name in before if "b" in name.split("-r1-")[1].split("-vs-"))
    assert sorted(recorder.played) == with_b
    assert sorted(path.stem for path in aside.glob("*.json")) == with_b
    after = transcripts(config.output)
    assert after["ticblock-r1-a-vs-c"] == before["ticblock-r1-a-vs-c"]
    assert all(after[name].seats != before[name].seats for name in with_b)
    assert run(load_config(write_config(tmp_path, players, games="[ticblock]"))).played == []


def test_restart_asks_nothing_when_its_input_is_not_a_terminal(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)})
    assert runner.invoke(app, ["tournament", str(path)]).exit_code == 0
    result = runner.invoke(app, ["tournament", str(path), "--restart", "--json"])
    assert result.exit_code == 0 and "already played" not in result.stderr
    assert json.loads(result.stdout)["matches"] == 4


def pairs(found: dict[str, Transcript]) -> dict[tuple[str, int], list[Transcript]]:
    grouped: dict[tuple[str, int], list[Transcript]] = defaultdict(list)
    for transcript in found.values():
        grouped[(transcript.game, transcript.seed)].append(transcript)
    return grouped


def test_openings_are_equal_within_a_pair_and_differ_between_pairs(tmp_path: Path) -> None:
    players = {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)}
    config = load_config(write_config(tmp_path, players, extra="openings: 4\nrounds: 3\n"))
    run(config)
    grouped = pairs(transcripts(config.output))
    assert len(grouped) == 2 * 3 and all(len(pair) == 2 for pair in grouped.values())
    openings = defaultdict(list)
    for (game, _), (one, two) in grouped.items():
        assert one.opening == two.opening == 4
        assert one.seats[0].player == two.seats[1].player
        first = [step.moves for step in one.steps[:4]]
        assert first == [step.moves for step in two.steps[:4]]
        # Nobody was asked during the opening; the players chose from step 5.
        assert all(step.times_ms == {} for step in one.steps[:4] + two.steps[:4])
        assert any(step.times_ms for step in one.steps[4:])
        openings[game].append(first)
    for game, seen in openings.items():
        assert len({json.dumps(opening) for opening in seen}) == len(seen), game


def test_a_gauntlet_plays_exactly_its_pairings(tmp_path: Path) -> None:
    names = ["new1", "new2", "ref1", "ref2", "ref3"]
    players = {name: bot(tmp_path, name, seed) for seed, name in enumerate(names)}
    config = load_config(
        write_config(
            tmp_path, players, games="[ticblock]", extra="format: gauntlet\nchallengers: 2\n"
        )
    )
    run(config)
    met = {frozenset(seat.player for seat in t.seats) for t in transcripts(config.output).values()}
    assert met == {frozenset((new, ref)) for new in names[:2] for ref in names[2:]}
    assert len(transcripts(config.output)) == 2 * 3 * 2


def sprt_config(
    tmp_path: Path, first: str, second: str, elo1: int, limit: int, play_clock: int = 300
) -> Path:
    return write_config(
        tmp_path,
        {"first": first, "second": second},
        games="[ticblock]",
        extra=f"format: sprt\nsprt: {{elo0: 0, elo1: {elo1}}}\nrounds: {limit}\nconcurrency: 2\n",
        play_clock=play_clock,
    )


# A player that loses every match at its first move, whatever the machine's load: a
# player's strength that came of its thinking time (mcts on a short clock) did not hold on
# a loaded machine, where the SPRT accepted H0.
FORFEITER = """import sys
for line in sys.stdin:
    words = line.split()
    if words[:1] == ["start"]:
        print("ready", flush=True)
    elif words[:1] == ["go"]:
        print("(no such move)", flush=True)
    elif words[:1] == ["quit"]:
        break
"""


@pytest.mark.slow
def test_an_sprt_of_a_player_against_one_that_forfeits_stops_at_its_upper_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    loser = tmp_path / "forfeiter.py"
    loser.write_text(FORFEITER)
    path = sprt_config(tmp_path, "random", f"{sys.executable} {loser}", elo1=100, limit=100)
    path.write_text(path.read_text() + "policy: forfeit\n")
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    sprt = json.loads(result.stdout)["sprt"]
    assert sprt["verdict"] == "H1 accepted" and sprt["llr"] >= sprt["upper_bound"] > 2.94
    assert "SPRT: H1 accepted (LLR" in result.stderr
    played = len(list((tmp_path / "results" / "cup").glob("*.json")))
    assert played < 200 and sprt["pairs"] * 2 <= played <= sprt["pairs"] * 2 + 2
    # The bar's last state fits 80 columns with its counts and time left whole: the lead
    # gives way to a shorter one, which keeps the LLR and the pairs.
    (bar,) = [line for line in result.stderr.splitlines() if re.search(r", faults \d+, LLR", line)]
    assert len(bar) <= 80 and f" {played}/200 " in bar, bar
    assert re.search(r", LLR -?\d+\.\d\d, \d+ pairs; ETA \d+:\d\d:\d\d$", bar), bar
    # Run again: the test has decided, so nothing more is played.
    again = runner.invoke(app, ["tournament", str(path), "--json"])
    assert len(list((tmp_path / "results" / "cup").glob("*.json"))) == played
    assert json.loads(again.stdout)["sprt"] == sprt


def test_an_sprt_of_equal_players_stops_at_its_lower_bound_or_its_limit(tmp_path: Path) -> None:
    path = sprt_config(
        tmp_path,
        f"{sys.executable} {RANDOM} --seed 1",
        f"{sys.executable} {RANDOM} --seed 2",
        elo1=50,
        limit=60,
    )
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    sprt = data["sprt"]
    assert sprt["verdict"] in ("H0 accepted", "running")
    if sprt["verdict"] == "running":
        assert data["matches"] == 120 and sprt["lower_bound"] < sprt["llr"] < sprt["upper_bound"]
    else:
        assert sprt["llr"] <= sprt["lower_bound"] and data["matches"] <= 2 * sprt["pairs"] + 2
    assert schedule(load_config(path))[-1].round == 60


def test_rating_interval_prints_the_table_while_it_runs(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)},
        extra="rating_interval: 2\n",
    )
    result = runner.invoke(app, ["tournament", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("standings after 2 of 4 matches played:") == 1
    assert "leader " in result.stderr


@pytest.mark.parametrize(
    "info",
    [
        '{"name": "cup", "format": "sprt", "scheduled": 9, "sprt": {"elo0": 0, "elo1": 1e999,'
        ' "alpha": 0.05, "beta": 0.05}, "tested": "a"}',
        '{"name": "cup", "format": "x", "scheduled": "9"}',
        '{"name": "cup", "format": "x", "scheduled": 9, "anchor": ["a"]}',
        '{"name": "cup", "format": "x", "scheduled": 9, "sprt": "elo"}',
        "[" * 100_000,
        "fifo",
    ],
)
def test_standings_ignore_a_tournament_info_they_cannot_use(tmp_path: Path, info: str) -> None:
    path = write_config(tmp_path, {"a": bot(tmp_path, "a", 1), "b": bot(tmp_path, "b", 2)})
    assert runner.invoke(app, ["tournament", str(path)]).exit_code == 0
    target = tmp_path / "results" / "cup" / "tournament.info"
    target.unlink()
    if info == "fifo":
        os.mkfifo(target)
    else:
        target.write_text(info)
    result = runner.invoke(app, ["standings", str(tmp_path / "results" / "cup"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["matches"], data["scheduled"], data["sprt"]) == (4, None, None)
