"""Standings from hand-made transcripts: results, score, Elo, faults, head to head, formats."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import FaultKind
from referee.records.transcript import Fault, Seat, Transcript, write_transcript
from referee.tournaments.formats import Format
from referee.tournaments.played import MatchResult
from referee.tournaments.ratings import elo_of_score, pairwise
from referee.tournaments.standings import PairRecord, compute, pair_line
from referee.tournaments.standings_tables import as_json, pair_text_line, render
from referee.tournaments.withdrawal import withdrawal
from tests.support.tournaments import result, seeded, write_config

runner = CliRunner()


def by_player(records) -> dict:
    return {record.player: record for record in records}


RESULTS = [
    result("quad", "ann", "bob", (100, 0)),
    result("quad", "bob", "ann", (50, 50)),
    result("ticblock", "ann", "bob", (25, 75)),
    result("ticblock", "bob", "ann", (100, 0), faults=((1, (3, FaultKind.TIMEOUT)),)),
    result("quad", "ann", "cat", (0, 100), faults=((0, (2, FaultKind.ILLEGAL)),), reason="forfeit"),
    result("quad", "cat", "ann", None, reason="aborted"),
]


def test_wins_draws_losses_goals_and_faults_per_player() -> None:
    standings = compute(RESULTS)
    assert standings.matches == 5  # the aborted match does not count
    ann, bob, cat = (by_player(standings.overall)[name] for name in ("ann", "bob", "cat"))
    assert (ann.matches, ann.wins, ann.draws, ann.losses) == (5, 1, 1, 3)
    assert ann.average_goal == (100 + 50 + 25 + 0 + 0) / 5
    assert ann.score == pytest.approx(1.5 / 5)
    assert dict(ann.faults) == {FaultKind.TIMEOUT: 1, FaultKind.ILLEGAL: 1}
    assert (bob.wins, bob.draws, bob.losses) == (2, 1, 1)
    assert (cat.wins, cat.losses, cat.score) == (1, 0, 1.0)
    # Ranked by rating: cat won its only pairing, from ann, who lost to bob more than she won.
    assert [r.player for r in standings.overall] == ["cat", "bob", "ann"]


def test_a_table_per_game_and_head_to_head() -> None:
    standings = compute(RESULTS)
    assert list(standings.by_game) == ["quad", "ticblock"]
    quad = by_player(standings.by_game["quad"])
    assert (quad["ann"].wins, quad["ann"].draws, quad["ann"].losses) == (1, 1, 1)
    ticblock = by_player(standings.by_game["ticblock"])
    assert (ticblock["bob"].wins, ticblock["bob"].matches) == (2, 2)
    ann_bob = standings.head_to_head["ann"]["bob"]
    assert (ann_bob.wins, ann_bob.draws, ann_bob.losses) == (1, 1, 2)
    bob_ann = standings.head_to_head["bob"]["ann"]
    assert (bob_ann.wins, bob_ann.draws, bob_ann.losses) == (2, 1, 1)
    assert "cat" not in standings.head_to_head["bob"]


def test_pairwise_elo_from_the_score_with_a_95_percent_margin() -> None:
    # Worked by hand: a score of 3/4 is 400 * log10(3) = 190.8 Elo.
    assert elo_of_score(0.75) == pytest.approx(190.85, abs=0.01)
    assert elo_of_score(0.5) == 0
    # 6 wins, 2 draws, 2 losses: score 0.7, per-match deviation 0.4, standard error 0.1265,
    # score interval 0.4521..0.9479, Elo interval -33.4..+504.0.
    estimate = pairwise(6, 2, 2)
    assert estimate.elo == pytest.approx(147.2, abs=0.1)
    assert estimate.margin == pytest.approx(268.7, abs=0.2)


def test_a_perfect_score_has_a_finite_pairwise_elo() -> None:
    # 3 wins and half a loss: score 3/3.5 = 0.857 (+311 Elo); deviation
    # sqrt((3 * (1/7)^2 + 0.5 * (6/7)^2) / 3.5) = 0.350, standard error 0.187, so the upper
    # bound 1.224 is taken at 1 - 0.25/3.5 = 0.929 (+446) and the lower is 0.490 (-6.6).
    estimate = pairwise(3, 0, 0)
    assert estimate.elo == pytest.approx(400 * math.log10(6), abs=0.1)
    low = 0.857143 - 1.959964 * 0.349927 / math.sqrt(3.5)
    expected = (400 * math.log10(13) + 400 * math.log10((1 - low) / low)) / 2
    assert estimate.margin == pytest.approx(expected, abs=0.1)
    assert pairwise(0, 0, 3).elo == pytest.approx(-estimate.elo)


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def played_pair(seed: int, first: float, second: float) -> list:
    """A pair of ticblock matches of v-2 and v-1 (one seed, the seats swapped) in which v-2
    scored `first` in its first seat and `second` in its second."""
    goals = {1.0: (100, 0), 0.5: (50, 50), 0.0: (0, 100)}
    one = result("ticblock", "v-2", "v-1", goals[first])
    two = result("ticblock", "v-1", "v-2", goals[1 - second])
    return [
        replace(one, seed=seed, match_id=f"ticblock-r{seed}-v-2-vs-v-1"),
        replace(two, seed=seed, match_id=f"ticblock-r{seed}-v-1-vs-v-2"),
    ]


# Five pairs for v-2: WW, WD, WL, DD, LD. Games: 4 won, 4 drawn, 2 lost, a score of 0.6.
PAIRS = [(1, 1), (1, 0.5), (1, 0), (0.5, 0.5), (0, 0.5)]


def test_a_two_player_field_has_the_pair_line_of_fastchess() -> None:
    matches = [m for seed, (a, b) in enumerate(PAIRS, start=1) for m in played_pair(seed, a, b)]
    standings = compute(matches)
    pair = standings.pair
    assert pair is not None and (pair.first, pair.second) == ("v-2", "v-1")
    assert (pair.wins, pair.losses, pair.draws, pair.draw_ratio) == (4, 2, 4, 0.4)
    # LL 0, LD 1, WL+DD 2, WD 1, WW 1.
    assert pair.pentanomial == (0, 1, 2, 1, 1)
    # By hand, from the pairs' scores per game 1/4, 1/2, 1/2, 3/4, 1: mean 0.6, so
    # Elo = -400 log10(1/0.6 - 1) = 400 log10(3/2) = +70.4; variance
    # (0.35^2 + 2 * 0.1^2 + 0.15^2 + 0.4^2) / 5 = 0.065, standard error sqrt(0.065 / 5)
    # = 0.11402; LOS = Phi(0.1 / 0.11402) = Phi(0.8771) = 81.0%; the score's interval
    # 0.6 -+ 1.96 * 0.11402 = 0.3765..0.8235 is Elo -87.6..+267.5, a margin of 177.6.
    assert pair.elo.elo == pytest.approx(70.44, abs=0.01)
    assert pair.los == pytest.approx(0.8098, abs=0.0005)
    assert pair.elo.margin == pytest.approx(177.6, abs=0.1)
    assert pair_text_line(pair) == (
        "v-2 vs v-1: 10 games, W-L-D 4-2-4 (60.0%), Elo +70.4 +- 177.6 (95%), LOS 81.0%,"
        " draw ratio 40.0%, Ptnml(0-2) [0, 1, 2, 1, 1]"
    )
    assert "Ptnml(0-2) [0, 1, 2, 1, 1]" in render(standings, Format.TABLE)
    data = as_json(standings)["pair"]
    assert data["players"] == ["v-2", "v-1"] and data["pentanomial"] == [0, 1, 2, 1, 1]
    assert (data["elo"], data["elo_margin"], data["los"]) == (70.4, 177.6, 0.8098)
    # A field of three has no pair line.
    assert compute(RESULTS).pair is None and as_json(compute(RESULTS))["pair"] is None


def test_without_a_whole_pair_the_line_is_of_the_games() -> None:
    # 6 wins, 2 draws, 2 losses and no pair: the trinomial, as cutechess has it.
    line = pair_line("a", "b", PairRecord(6, 2, 2), (0, 0, 0, 0, 0))
    assert line.pentanomial is None
    # LOS = Phi((W - L) / sqrt(W + L)) = Phi(4 / sqrt(8)) = Phi(1.4142) = 92.1%.
    assert line.los == pytest.approx(0.9214, abs=0.0001)
    assert line.elo.elo == pytest.approx(400 * math.log10(0.7 / 0.3), abs=0.01)
    assert "Ptnml" not in pair_text_line(line)


def test_pairs_of_one_score_leave_the_elo_and_los_to_the_games() -> None:
    # One pair, a win and a draw: a pair score of 3/2 and no spread among the pairs. From the
    # games (1, 1/2): score 0.75, Elo 400 log10(3) = +190.8, with a margin from the games'
    # spread, not +- 0; LOS Phi((1 - 0) / sqrt(1)) = Phi(1) = 84.1%, not 100%.
    line = pair_line("a", "b", PairRecord(1, 1, 0), (0, 0, 0, 1, 0))
    assert line.pentanomial == (0, 0, 0, 1, 0)
    assert line.elo.elo == pytest.approx(400 * math.log10(3), abs=0.01)
    assert line.elo.margin > 100
    assert line.los == pytest.approx(0.8413, abs=0.0001)


def test_a_pair_counts_the_matches_in_any_order_and_waits_for_its_other_half() -> None:
    matches = [m for seed, (a, b) in enumerate(PAIRS, start=1) for m in played_pair(seed, a, b)]
    standings = compute(list(reversed(matches[:-1])))
    pair = standings.pair
    assert pair is not None and pair.games == 9
    # The last pair is not whole: four pairs, WW, WD, WL, DD.
    assert pair.pentanomial == (0, 0, 2, 1, 1)


def test_a_run_of_two_players_ends_with_its_pair_line(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, {"new-v2": seeded(1), "old-v1": seeded(2)}, "[ticblock]", "rounds: 3\n"
    )
    run = runner.invoke(app, ["tournament", str(path)])
    assert run.exit_code == 0, run.output
    assert "Pair: the first player's results" in run.stdout
    directory = tmp_path / "results" / "cup"
    data = json.loads(runner.invoke(app, ["standings", str(directory), "--json"]).stdout)
    pair = data["pair"]
    assert pair["games"] == 6 and sum(pair["pentanomial"]) == 3
    line = next(line for line in run.stdout.splitlines() if line.startswith(pair["players"][0]))
    wins, losses, draws = pair["wins"], pair["losses"], pair["draws"]
    assert f": 6 games, W-L-D {wins}-{losses}-{draws} (" in line
    assert f"Ptnml(0-2) {pair['pentanomial']}" in line


def test_formats() -> None:
    standings = compute(RESULTS)
    table = render(standings, Format.TABLE)
    assert "Standings: all games (5 matches; Elo with the mean at 0)" in table
    # The first of each kind of fault: its match, and the seat (ann played obplayer there).
    assert "ann       timeout  1        ticblock-bob-ann, obplayer: timeout at step 3" in table
    assert "1 timeout, 1 illegal" in table or "1 illegal, 1 timeout" in table
    markdown = render(standings, Format.MARKDOWN)
    assert "## quad" in markdown and "| cat " in markdown
    rows = list(csv.DictReader(io.StringIO(render(standings, Format.CSV))))
    assert {(row["game"], row["player"]) for row in rows} == {
        ("all", "ann"), ("all", "bob"), ("all", "cat"),
        ("quad", "ann"), ("quad", "bob"), ("quad", "cat"),
        ("ticblock", "ann"), ("ticblock", "bob"),
    }  # fmt: skip
    ann = next(row for row in rows if (row["game"], row["player"]) == ("all", "ann"))
    assert (ann["wins"], ann["losses"], ann["faults_timeout"], ann["faults_crash"]) == (
        "1", "3", "1", "0"
    )  # fmt: skip
    data = json.loads(render(standings, Format.JSON))
    assert data["matches"] == 5
    cat = data["overall"][0]
    assert (cat["player"], cat["score"]) == ("cat", 1.0)
    # A perfect score: a finite rating above the others' with a finite interval, sign kept.
    assert cat["elo_low"] < cat["elo"] < cat["elo_high"] and cat["elo"] > 0
    assert all(r["elo"] < 0 for r in data["overall"][1:]) or data["overall"][1]["elo"] < cat["elo"]
    assert data["head_to_head"]["ann"]["bob"]["losses"] == 2
    assert data["head_to_head"]["cat"]["ann"]["elo"] > 0 > data["head_to_head"]["ann"]["cat"]["elo"]
    assert data["faults"] == [
        {"player": "ann", "fault": "illegal", "count": 1, "first_match": "quad-ann-cat",
         "first_step": 2, "first_role": "x", "first_detail": "", "log": None},
        {"player": "ann", "fault": "timeout", "count": 1, "first_match": "ticblock-bob-ann",
         "first_step": 3, "first_role": "obplayer", "first_detail": "", "log": None},
    ]  # fmt: skip


def test_a_table_says_it_ranks_by_rating_with_each_los_on_a_row_of_its_own() -> None:
    standings = compute(RESULTS)
    cat, bob, _ = standings.overall
    assert cat.rating and bob.rating and cat.rating.los_next and bob.rating.los_next
    lines = render(standings, Format.TABLE).splitlines()
    start = lines.index("ranked by rating (Elo):")
    assert lines[start + 1].split()[:4] == ["#", "player", "Elo", "95%"]
    rows = [line.split() for line in lines[start + 3 : start + 8]]
    assert [row[:2] for row in rows[::2]] == [["1", "cat"], ["2", "bob"], ["3", "ann"]]
    assert rows[1] == ["LOS", f"{100 * cat.rating.los_next:.1f}%:", "#1", "stronger", "than", "#2"]
    assert rows[3] == ["LOS", f"{100 * bob.rating.los_next:.1f}%:", "#2", "stronger", "than", "#3"]
    # No LOS column: the header has none, and no player's row carries one.
    assert "LOS" not in lines[start + 1] and not any("%" in row[-1] for row in rows[::2])


def test_a_game_of_three_roles_ranks_by_average_goal_and_says_so() -> None:
    def trio(number: int, goals: tuple[int, int, int]) -> Transcript:
        done = result("quad", "ann", "bob", (0, 0))
        roles = ("x", "y", "z")
        seats = [Seat(role, player, ["x"], None) for role, player in zip(roles, "abc", strict=True)]
        scored = dict(zip(roles, goals, strict=True))
        return replace(done, match_id=f"trio-{number}", game="trio", seats=seats, goals=scored)

    # a wins three pairings from b by a little; b wins one by a lot: a is rated above b, but
    # b has the higher average goal.
    transcripts = [trio(n, (10, 5, 0)) for n in range(3)] + [trio(3, (0, 100, 0))]
    standings = compute(transcripts)
    ratings = {r.player: r.rating.elo for r in standings.overall if r.rating}
    assert ratings["a"] > ratings["b"]
    assert [r.player for r in standings.overall] == ["b", "a", "c"]
    text = render(standings, Format.TABLE)
    lines = text.splitlines()
    start = lines.index(
        "ranked by average goal (avg goal), then rating: a game of more than two roles counts:"
    )
    header = lines[start + 1].split()
    assert "avg" in header and "goal" in header
    assert [line.split()[:2] for line in lines[start + 3 : start + 6]] == [
        ["1", "b"], ["2", "a"], ["3", "c"],
    ]  # fmt: skip
    # b is not rated above a, nor is c rated next below a: no LOS claims either.
    assert "LOS" not in text


def test_standings_command_reads_a_results_directory(tmp_path: Path) -> None:
    for transcript in RESULTS:
        write_transcript(tmp_path / f"{transcript.match_id}.json", transcript, None)
    result_ = runner.invoke(app, ["standings", str(tmp_path), "--json"])
    assert result_.exit_code == 0
    assert json.loads(result_.stdout)["matches"] == 5
    (tmp_path / "broken.json").write_text('{"schema": "referee-transcript", "schema_version": 1')
    result_ = runner.invoke(app, ["standings", str(tmp_path), "--format", "csv"])
    assert result_.exit_code == 1
    assert "broken.json: line 1 column" in result_.stderr
    assert result_.stdout.startswith("game,player,")


def test_standings_of_a_directory_that_is_not_there(tmp_path: Path) -> None:
    result_ = runner.invoke(app, ["standings", str(tmp_path / "nothing")])
    assert result_.exit_code == 2
    assert result_.stderr == f"referee: error: {tmp_path / 'nothing'}: no such results directory\n"


@pytest.mark.parametrize("command", ["standings", "report"])
def test_a_directory_with_no_transcripts_is_one_line_not_an_empty_table(
    tmp_path: Path, command: str
) -> None:
    # A mistyped directory would otherwise read as a tournament of no matches.
    result_ = runner.invoke(app, [command, str(tmp_path)])
    assert result_.exit_code == 2
    said = f"referee: error: {tmp_path}: no transcripts in it (a *.json file for each match)\n"
    assert (result_.stdout, result_.stderr) == ("", said)


def test_a_withdrawn_player_is_marked_withdrawn_in_the_table_and_json() -> None:
    # dan crashed at the start of its first match (tried), then was withdrawn: its
    # remaining forfeits carry the runner's reason. eve crashed at a start, never withdrawn.
    def forfeit(game: str, first: str, second: str, loser: int, detail: str) -> Transcript:
        done = result(game, first, second, (0, 100) if loser == 0 else (100, 0), reason="forfeit")
        role = done.seats[loser].role
        return replace(done, faults=[Fault(0, role, FaultKind.CRASH, detail)])

    transcripts = [
        forfeit("quad", "dan", "ann", 0, "exited with status 2 before its first line"),
        forfeit("ticblock", "ann", "dan", 1, withdrawal(1)),
        forfeit("quad", "eve", "ann", 0, "exited with status 1 before its first line"),
        result("ticblock", "ann", "eve", (100, 0)),
    ]
    standings = compute(transcripts)
    withdrawn = {record.player: record.withdrawn for record in standings.overall}
    assert withdrawn == {"ann": False, "dan": True, "eve": False}
    # Withdrawn from the tournament: in the table of every game, not only where it happened.
    assert all(by_player(standings.by_game[game])["dan"].withdrawn for game in ("quad", "ticblock"))
    assert not any(
        record.withdrawn for record in standings.by_game["quad"] if record.player != "dan"
    )
    table = render(standings, Format.TABLE)
    (row,) = [line for line in table.splitlines()[:8] if " dan" in line]
    assert row.split()[1:3] == ["dan", "(withdrawn)"]
    assert "eve (withdrawn)" not in table and "ann (withdrawn)" not in table
    data = json.loads(render(standings, Format.JSON))
    assert {r["player"]: r["withdrawn"] for r in data["overall"]} == withdrawn
    rows = list(csv.DictReader(io.StringIO(render(standings, Format.CSV))))
    assert {row["player"] for row in rows if row["withdrawn"] == "True"} == {"dan"}


def test_standings_are_counted_match_by_match_in_any_order_and_from_what_is_kept() -> None:
    # Each match begins a second after the one before; the faults' first occurrences, the
    # fits' order and every count are those of that order, whatever order they come in.
    played = [
        replace(t, match_id=f"{t.match_id}-{n}", started_at=f"2026-11-21T00:00:{n:02d}.000Z")
        for n, t in enumerate([*RESULTS, *RESULTS[:4]])
    ]
    expected = as_json(compute(played))
    # ann's timeout, twice: the one that began first is named.
    timeout = next(fault for fault in expected["faults"] if fault["fault"] == "timeout")
    assert (timeout["count"], timeout["first_match"]) == (2, "ticblock-bob-ann-3")
    assert as_json(compute(reversed(played))) == expected
    # What a run keeps of a match, without its steps, gives the same standings.
    kept = [MatchResult.of(t) for t in played]
    assert as_json(compute(iter(kept))) == expected


def round_robin(size: int, seatings: int = 2) -> list[Transcript]:
    """A round robin of `size` players at quad, each pair in one or both seatings: the first
    seat wins where the two players' numbers add up to a multiple of 3, else they draw."""
    names = [f"player{n:02d}" for n in range(size)]
    matches = []
    for a, b in combinations(range(size), 2):
        for first, second in [(a, b), (b, a)][:seatings]:
            goals = (100, 0) if (first + second) % 3 == 0 else (50, 50)
            matches.append(result("quad", names[first], names[second], goals))
    return matches


def test_a_large_fields_text_fits_the_terminal_and_says_where_the_rest_is() -> None:
    standings = compute(round_robin(60))
    ranked = [record.player for record in standings.overall]
    assert len(ranked) == 60
    whole = render(standings, Format.TABLE)
    assert max(len(line) for line in whole.splitlines()) > 60 * 10  # no width: all of it
    lines = render(standings, Format.TABLE, width=100).splitlines()
    assert max(len(line) for line in lines) <= 100
    # Every player has its row, in rank order, in the narrower table.
    rows = [line.split() for line in lines if line.split()[:1] and line.split()[0].isdigit()]
    assert [row[1] for row in rows][:60] == ranked
    # The head to head of the first players by rank, and where the rest is.
    (note,) = [n for n, line in enumerate(lines) if line.startswith("(the first ")]
    shown = int(lines[note].split()[2])
    assert 2 <= shown < 60 and lines[note].startswith(f"(the first {shown} of 60 players by rank")
    assert "--json" in lines[note] + lines[note + 1]
    header = lines[note - shown - 2].split()
    assert header == ranked[:shown]


def test_at_80_columns_a_field_of_short_names_is_still_a_table() -> None:
    # The round robin's names are short (p00..p59): its compact table fits 80 columns whole.
    lines = render(compute(round_robin(8)), Format.TABLE, width=80).splitlines()
    assert max(len(line) for line in lines) <= 80
    headers = next(line for line in lines if line.startswith("#  "))
    shown = ["#", "player", "Elo", "95%", "CI", "W-D-L", "score%", "goal", "faults", "LOS"]
    assert headers.split() == shown
    rows = [line.split() for line in lines if line.split()[:1] and line.split()[0].isdigit()]
    assert len(rows) >= 8 and not any(line.startswith("player: ") for line in lines)


@pytest.fixture(scope="module")
def large_field(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results directory of a round robin of 60 players, each pair once."""
    directory = tmp_path_factory.mktemp("large-field")
    for transcript in round_robin(60, seatings=1):
        write_transcript(directory / f"{transcript.match_id}.json", transcript, None, sync=False)
    return directory


def test_a_large_fields_standings_fit_columns(large_field: Path) -> None:
    result_ = runner.invoke(app, ["standings", str(large_field)], env={"COLUMNS": "100"})
    assert result_.exit_code == 0, result_.output
    lines = result_.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert any(line.startswith("(the first ") for line in lines)


def test_the_json_of_a_large_field_holds_every_pair_however_narrow_the_terminal(
    large_field: Path,
) -> None:
    result_ = runner.invoke(app, ["standings", str(large_field), "--json"], env={"COLUMNS": "40"})
    assert result_.exit_code == 0, result_.output
    pairs = json.loads(result_.stdout)["head_to_head"]
    names = [f"player{n:02d}" for n in range(60)]
    assert sorted(pairs) == names
    for row in names:
        assert sorted(pairs[row]) == [name for name in names if name != row]
        # One match each: a win, a draw or a loss.
        assert all(
            sum(map(pairs[row][o].get, ("wins", "draws", "losses"))) == 1 for o in pairs[row]
        )
