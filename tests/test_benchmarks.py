"""The benchmark scripts run and print their figures (speed itself is not tested here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from referee.sandbox.isolation import machine_protections
from tests.support.facilities import missing
from tests.support.paths import ROOT


def benchmark_json(script: str, *args: str, exit_codes: tuple[int, ...] = (0,)) -> dict:
    """Run a benchmark script with --json; its report."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    # What it printed on standard output too: a report names what failed there.
    assert result.returncode in exit_codes, result.stderr + result.stdout[-4000:]
    return json.loads(result.stdout)


# Every script; a module whose name starts with _ is shared by them, not run.
SCRIPTS = sorted(path.name for path in (ROOT / "benchmarks").glob("[!_]*.py"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_explains_its_options(script: str) -> None:
    # argparse formats help with %: a bare one in a help string is a traceback.
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: "), result.stdout


def test_engine_benchmark_reports_every_game() -> None:
    # Exit 1 says a floor was missed; speed is not what this test is about.
    report = benchmark_json("engines.py", "--seconds", "0.05", exit_codes=(0, 1))
    rows = {row["game"]: row for row in report["results"]}
    assert set(rows) == {"blocker-parallel", "ticblock", "hex-pie", "double-tictactoe", "quad"}
    for row in rows.values():
        assert row["playouts"] >= 1
        assert row["steps_per_s"] >= row["playouts_per_s"] > 0
        assert isinstance(row["meets_floor"], bool)


def test_cli_start_benchmark_times_each_start_beside_typers_import() -> None:
    # Exit 1 says the target was missed: speed is not what this test is about.
    report = benchmark_json("cli_start.py", "--runs", "1", exit_codes=(0, 1))
    assert (report["runs"], report["bytecode"]) == (1, "cached")
    rows = {row["command"]: row for row in report["results"]}
    assert list(rows) == [
        "referee --version",
        "referee --help",
        "referee play --help",
        "completion: referee <Tab>",
        "completion: referee play --<Tab>",
        "python -c 'import typer'",
    ]
    for row in rows.values():
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["max_ms"]
        assert row["cpu_median_ms"] >= 0
    assert rows["python -c 'import typer'"]["vs_typer"] == 1
    assert [name for name, row in rows.items() if "meets_target" in row] == [
        "referee --version", "referee --help"
    ]  # fmt: skip


@pytest.mark.slow
def test_tournament_benchmark_reports_every_game_and_setting() -> None:
    report = benchmark_json(
        "tournament.py", "--rounds", "1", "--worker-rounds", "4", "--think-rounds", "1",
        "--repeat", "1",
    )  # fmt: skip
    rows = report["results"]
    assert len(rows) == 5 * 4
    assert {(row["concurrency"], row["reuse"]) for row in rows} == {
        (1, True), (1, False), (2, True), (2, False)
    }  # fmt: skip
    assert all(row["matches_per_s"] > 0 for row in rows)
    # In one process, then on 1 and 2 workers: the same matches, the same standings. Then
    # two processes at once, each with half the rounds (at least one).
    workers = report["workers"]
    places = ("one process", "1 worker", "2 workers", "2 processes")
    assert [(row["players"], row["where"]) for row in workers] == [
        (players, place) for players in ("instant", "think 100 ms") for place in places
    ]
    assert [row["matches"] for row in workers] == [8, 8, 8, 8, 2, 2, 2, 4]
    assert all(row["matches_per_s"] > 0 for row in workers)
    assert [row["same_standings"] for row in workers] == [True, True, True, None] * 2


def test_pinning_benchmark_reports_a_run_with_and_without_pinning() -> None:
    report = benchmark_json("pinning.py", "--rounds", "1", "--clock", "300", "--think", "10")
    pinned, loose = report["results"]
    assert (pinned["pinned"], loose["pinned"]) == (True, False)
    assert pinned["matches"] == loose["matches"] == 2
    for row in (pinned, loose):
        assert row["moves"] > 0 and 30 <= row["median_ms"] <= row["p99_ms"] <= row["worst_ms"]


@pytest.mark.slow
def test_sandbox_benchmark_reports_each_way_of_watching_a_player() -> None:
    report = benchmark_json("sandbox.py", "--samples", "5", "--background", "20")
    assert report["processes_on_machine"] >= 20 + report["player_processes"]
    rows = {row["method"]: row for row in report["results"]}
    per_player = rows["process group, a scan of /proc per player"]
    shared = rows["process group, one shared scan (tournaments)"]
    assert per_player["ms_per_sample"] > 0
    # A scan per player costs more as matches are added; a shared one does not.
    assert per_player["core_share_c16"] == pytest.approx(16 * per_player["core_share_c1"])
    assert shared["core_share_c16"] == pytest.approx(shared["core_share_c1"])
    assert ("pids cgroup" in rows) is (machine_protections().cgroups is not None)


@pytest.mark.jail
def test_jail_benchmark_reports_a_start_in_and_out_of_the_jail() -> None:
    if machine_protections().jail is None:
        reason = f"no jail on this machine: {machine_protections().why_not}"
        missing(reason)
    rows = benchmark_json("jail.py", "--runs", "2")
    assert [row["program"] for row in rows] == ["true", "python -c pass"]
    for row in rows:
        assert row["bare_ms"] > 0 and row["jailed_ms"] > 0
        assert row["jail_costs_ms"] == pytest.approx(row["jailed_ms"] - row["bare_ms"])


@pytest.mark.slow
def test_mcts_clocks_benchmark_reports_each_match() -> None:
    report = benchmark_json("mcts_clocks.py", "ticblock")
    (row,) = report["results"]
    assert (row["game"], row["mcts"], row["end"], row["faults"]) == (
        "ticblock",
        "xcplayer",
        "terminal",
        [],
    )
    assert row["mcts_moves"] >= 1 and row["steps"] >= row["mcts_moves"]
    assert report["failed"] == 0


@pytest.mark.slow
def test_fairness_benchmark_reports_each_opponent_and_every_sleeper_cell() -> None:
    # The worker's work is a tenth of its clock: it must answer in time on a machine loaded
    # by the rest of the suite, where each busy process weighs as much as its seat.
    report = benchmark_json(
        "fairness.py", "--parts", "contention,timeouts", "--work-clock", "200",
        "--work-share", "10", "--work-answers", "4", "--clocks", "30", "--answers", "8",
    )  # fmt: skip
    assert (report["work_clock_ms"], report["work_ms"]) == (200, 20)
    quiet, spinning, pondering = report["contention"]
    assert quiet["opponent"] == "quiet" and "ponder: true" in pondering["opponent"]
    for row in (quiet, spinning, pondering):
        assert row["answers"] >= 4 and row["timeouts"] < row["answers"]
        assert 0 < row["median_ms"] < 200
        # The worker computes for most of its answer: its CPU time is counted, and is no
        # more than the time it took.
        assert 0 < row["cpu_ms"] <= row["median_ms"] + 1
    assert quiet["vs_quiet"] == 1.0
    assert spinning["vs_quiet"] == pytest.approx(spinning["median_ms"] / quiet["median_ms"], 0.01)
    cells = report["timeouts"]
    concurrencies = sorted({1, report["cores"]})
    assert [(row["percent"], row["concurrency"]) for row in cells] == [
        (percent, concurrency) for concurrency in concurrencies for percent in (80, 90, 95, 98)
    ]
    for row in cells:
        assert (row["runner"], row["clock_ms"]) == ("referee", 30) and row["answers"] >= 8
        # The referee's clock runs from before its request is written to after the answer is
        # read: it encloses the time the sleeper measured itself.
        assert 0 < row["error_median_ms"] <= row["error_p99_ms"] <= row["error_max_ms"]
    assert report["fastchess"] is None


def test_fairness_benchmark_refuses_a_bad_option_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fairness.py"), "--clocks", "100,soon"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "--clocks" in result.stderr


def test_fairness_benchmark_plays_only_the_cells_asked_for() -> None:
    report = benchmark_json(
        "fairness.py", "--parts", "timeouts", "--clocks", "30", "--answers", "4",
        "--fractions", "50", "--concurrency", "2",
    )  # fmt: skip
    assert report["contention"] == []
    assert [(row["percent"], row["concurrency"]) for row in report["timeouts"]] == [(50, 2)]


@pytest.mark.jail
def test_arena_benchmark_measures_the_ladder_and_the_leaderboard() -> None:
    if machine_protections().jail is None:
        reason = f"no jail on this machine: {machine_protections().why_not}"
        missing(reason)
    # Exit 1 says the target was missed: speed is not what this test is about.
    report = benchmark_json(
        "arena.py", "--seconds", "1", "--bots", "2", "--clients", "2", exit_codes=(0, 1)
    )
    alone, playing, paused = report["phases"]
    assert [alone["name"], playing["name"], paused["name"]] == [
        "ladder alone", "ladder + clients", "paused + clients"
    ]  # fmt: skip
    assert alone["matches"] > 0 and playing["matches"] > 0 and alone["latency"] is None
    # Paused once its matches in flight had ended: none is recorded while the clients ask.
    assert paused["matches"] == 0
    for latency in (playing["latency"], paused["latency"]):
        assert latency["requests"] >= 2 and latency["errors"] == 0
        assert 0 < latency["median_ms"] <= latency["p95_ms"] <= latency["p99_ms"]
        assert latency["p99_ms"] <= latency["max_ms"]
    # Instant bots fault in no match; every match counted was recorded.
    assert report["matches_faulted"] == 0
    assert report["matches_done"] >= alone["matches"] + playing["matches"]
    assert report["meets_target"] is (
        playing["matches_per_s"] >= 50 and playing["latency"]["p95_ms"] < 100
    )


def test_arena_benchmark_refuses_a_bad_option_in_one_line() -> None:
    script = str(ROOT / "benchmarks" / "arena.py")
    result = subprocess.run(
        [sys.executable, script, "--game", "chess", "--seconds", "1"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "unknown game 'chess'" in result.stderr


def arena_soak_leftovers() -> tuple[set[str], set[str]]:
    """The arena soak's temporary directories, and its tmpfs mounts, on this machine now."""
    directories = {path.name for path in Path(tempfile.gettempdir()).glob("arena-soak-*")}
    mounts = {
        line for line in Path("/proc/mounts").read_text().splitlines() if "arena-soak-" in line
    }
    return directories, mounts


@pytest.mark.jail
@pytest.mark.slow
def test_arena_soak_benchmark_reports_each_criterion_and_leaves_nothing_behind() -> None:
    if os.geteuid() != 0:
        missing("the arena soak on SQLite mounts a tmpfs of its own, which needs root")
    if machine_protections().jail is None:
        missing(f"no jail on this machine: {machine_protections().why_not}")
    before = arena_soak_leftovers()
    # Exit 1 says a criterion was missed: what is tested here is the soak and its report.
    report = benchmark_json(
        "arena_soak.py", "--seconds", "3", "--baseline", "2", "--authors", "1", "--holders",
        "2", "--trickles", "1", "--readers", "1", "--grace", "5", exit_codes=(0, 1),
    )  # fmt: skip
    assert [criterion["name"] for criterion in report["criteria"]] == [
        "serve rode out the soak",
        "honest submissions placed",
        "API p95 of the honest client",
        "ladder rate, soak vs quiet",
        "every finished match: one verifying transcript",
        "arena's disk (max seen)",
    ]
    assert report["passed"] is all(criterion["passed"] for criterion in report["criteria"])
    baseline, soak = report["baseline"], report["soak"]
    assert baseline["matches"] > 0 and baseline["matches_per_s"] > 0
    for phase in (baseline, soak):
        latency = phase["latency"]
        assert latency["requests"] >= 2 and 0 <= latency["failed"] <= latency["requests"]
        assert 0 < latency["median_ms"] <= latency["p95_ms"] <= latency["max_ms"]
    # Every attack was made: the held connections, the trickled upload, the submissions.
    assert report["holders"]["opened"] >= 2 and report["trickles"]["begun"] >= 1
    assert report["submissions"]["authors"] == 1
    assert report["faults"][0]["what"] == "disk filled"
    record = report["record"]
    assert record["done"] >= baseline["matches"] and record["transcripts"] > 0
    assert record["verified"] + record["failed"] == record["transcripts"]
    assert report["disk"]["max_mib"] > 0 and report["disk"]["bound_mib"] == 512
    # Stopped, unmounted and removed: nothing of the soak is left on the machine.
    assert arena_soak_leftovers() == before


@pytest.mark.jail
@pytest.mark.slow
def test_arena_kills_benchmark_kills_serve_and_audits_the_record() -> None:
    if machine_protections().jail is None:
        missing(f"no jail on this machine: {machine_protections().why_not}")
    # Exit 1 says the record was not whole: what is tested here is the run and its report.
    report = benchmark_json(
        "arena_kills.py", "--kills", "2", "--most", "3", "--seed", "7", exit_codes=(0, 1)
    )
    kills = report["kills"]
    assert report["seed"] == 7 and [kill["number"] for kill in kills] == [1, 2]
    assert all(0 <= kill["after_s"] <= 3 for kill in kills)
    # What is done stays done; the last start plays on before it is stopped.
    assert kills[0]["done"] <= kills[1]["done"] < report["record"]["done"]
    record = report["record"]
    assert record["verified"] + record["failed"] == record["transcripts"]
    assert report["last_start"]["stopped_cleanly"] is True


@pytest.mark.jail
@pytest.mark.slow
def test_arena_rush_benchmark_places_every_version_with_authors_in_turn() -> None:
    if machine_protections().jail is None:
        missing(f"no jail on this machine: {machine_protections().why_not}")
    # Bots that think 200 ms of a 2 s clock: a loaded machine leaves them time to answer.
    options = ["--authors", "2", "--submissions", "4", "--window", "1", "--play-clock", "2000"]
    report = benchmark_json("arena_rush.py", *options, "--think", "0.1", "--concurrency", "2")
    assert (report["authors"], report["submissions"], report["think"]) == (2, 4, 0.1)
    (rush,) = report["rushes"]
    assert (rush["concurrency"], rush["placed"], rush["failed"]) == (2, 4, [])
    assert rush["passed_over"] == 0
    assert 0 < rush["median_s"] <= rush["p95_s"] <= rush["max_s"] <= rush["seconds"] + 1


@pytest.mark.parametrize(
    ("script", "options", "said"),
    [
        ("arena_rush.py", ["--concurrency", "two"], "--concurrency 'two': whole numbers"),
        ("arena_soak.py", ["--authors", "0"], "--authors: '0': a whole number from 1 to 1000"),
        ("arena_soak.py", ["--database", "mysql"], "--database: invalid choice: 'mysql'"),
        ("arena_kills.py", ["--most", "soon"], "--most: 'soon': not a number"),
    ],
)
def test_arena_fault_benchmarks_refuse_a_bad_option_in_one_line(
    script: str, options: list[str], said: str
) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *options],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and said in result.stderr


def test_strength_benchmark_counts_mcts_wins_in_each_seat_a_chance_seat_excepted() -> None:
    game = ROOT / "referee" / "games" / "rulesheets" / "blind-goofspiel.kif"
    args = ("--games", str(game), "--matches", "2", "--play-clock", "200", "--concurrency", "2")
    # Two matches a seat may fall short of the target: exit 1, the figures printed all the same.
    report = benchmark_json("strength.py", *args, exit_codes=(0, 1))
    assert report["play_clock_ms"] == 200
    assert [(row["game"], row["role"]) for row in report["results"]] == [
        ("blind-goofspiel", "north"),
        ("blind-goofspiel", "south"),
    ]
    for row in report["results"]:
        assert row["matches"] == 2 and 0 <= row["wins"] <= 2 and row["target"] == 0.7


def test_swiss_pairing_benchmark_times_each_way_on_each_field() -> None:
    report = benchmark_json(
        "swiss_pairing.py",
        *("--players", "10,21", "--seeds", "2", "--repeat", "1", "--networkx-up-to", "10"),
    )
    assert (report["round"], report["games_per_pairing"], report["seeds"]) == (3, 2, 2)
    ways = [
        "networkx, complete graph (before)",
        "rustworkx, complete graph",
        "rustworkx, sparse graph and proof",
    ]
    ten, twenty_one = report["fields"]
    assert ten["players"] == 10 and all(len(ten[way]["seeds"]) == 2 for way in ways)
    assert all(ten[way]["seconds"] >= 0 for way in ways)
    # networkx only up to --networkx-up-to; no 400 and 100 to compare.
    assert twenty_one["players"] == 21 and sorted(twenty_one) == sorted(["players", *ways[1:]])
    assert report["ratio_400_to_100"] == {}


def test_swiss_benchmark_compares_both_pairings_on_every_seed() -> None:
    report = benchmark_json(
        "swiss.py", "--players", "6", "--rounds", "3", "--seeds", "2", "--workers", "1"
    )
    assert (report["players"], report["rounds"], report["workers"]) == (6, 3, 1)
    assert [row["seed"] for row in report["seeds"]] == [0, 1]
    for row in report["seeds"]:
        for label in ("swiss", "random"):
            assert -1 <= row[label]["spearman"] <= 1
            # Three rounds of three pairs, two games each.
            assert row[label]["matches"] == 3 * 3 * 2
        assert row["swiss"]["repeated_pairs"] == 0 and row["swiss"]["most_seats_apart"] == 0
    assert report["swiss_repeated_pairs"] == 0


def test_ratings_benchmark_times_each_field_and_the_growth_from_200_to_800() -> None:
    report = benchmark_json(
        "ratings.py", "--sizes", "10", "200", "800", "--runs", "1", "--no-target", exit_codes=(0, 1)
    )
    rows = report["results"]
    # A player of 10 meets all 9 others; of more, 20 others on average.
    assert [(row["players"], row["pairings"]) for row in rows] == [
        (10, 45),
        (200, 2000),
        (800, 8000),
    ]
    assert all(row["games"] >= 5 * row["pairings"] and row["median_s"] > 0 for row in rows)
    growth = report["growth_800_over_200"]
    assert growth == round(rows[2]["median_s"] / rows[1]["median_s"], 1)
    assert report["meets_targets"] == (growth <= 16) and report["fit"] == "today"


def test_ratings_benchmark_times_the_fit_before_issue_70() -> None:
    report = benchmark_json("ratings.py", "--sizes", "10", "30", "--runs", "1", "--before")
    assert [row["players"] for row in report["results"]] == [10, 30]
    assert "issue 70" in report["fit"] and report["meets_targets"] is None
