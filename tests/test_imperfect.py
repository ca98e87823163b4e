"""Games of imperfect information (GDL-II): what each role sees, by the rules and by the
project's native engines, which must agree."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.arena.store.config import parse_arena_config
from referee.cli import app
from referee.errors import RulesheetError
from referee.games import RULESHEETS, Game, GdlGame, Move, get_game, load_text
from referee.games.beliefs import narrowed
from referee.games.blind_goofspiel import BlindGoofspiel
from referee.games.blind_tictactoe import BlindTictactoe
from referee.games.gdl.check import checked_rules
from referee.games.gdl.limits import DEFAULT_LIMITS
from referee.games.gdl.per_state import PerState
from referee.games.gdl.remote import RemotePerState
from referee.games.gdl.syntax import parse_rulesheet
from referee.games.monty_hall import MontyHall
from referee.ggp import messages as ggp
from referee.protocol import MessageError, Sees, parse, split_moves
from referee.records.conformance import check_file, random_reference
from referee.records.replayed import Frame
from referee.records.signing import load_key
from referee.records.transcript import read_transcript
from referee.records.verify import Outcome, verify_file
from referee.report import site
from referee.tournaments.config import load_config
from tests.support.gateway import served
from tests.support.tournaments import run, write_config

MONTY_HALL = RULESHEETS / "monty-hall.kif"
# The project's GDL-II games: each engine, written apart from its rulesheet.
ENGINES: dict[str, Game] = {
    "monty-hall": MontyHall(),
    "blind-tictactoe": BlindTictactoe(),
    "blind-goofspiel": BlindGoofspiel(),
}


def _references(tmp_path: Path, count: int, name: str = "monty-hall") -> Path:
    path = tmp_path / f"{name}.jsonl"
    lines = [json.dumps(random_reference(ENGINES[name], seed)) for seed in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _rulesheet(name: str = "monty-hall") -> GdlGame:
    path = RULESHEETS / f"{name}.kif"
    return load_text(path.read_text(), str(path))


@pytest.mark.parametrize("name", ENGINES)
def test_the_rulesheet_and_the_native_engine_agree_on_a_thousand_random_matches(
    tmp_path: Path, name: str
) -> None:
    references = _references(tmp_path, 1000, name)
    rules = _rulesheet(name)
    assert rules.imperfect and rules.roles == ENGINES[name].roles
    report = check_file(references, rules)
    assert report.games == 1000
    assert [str(m) for m in report.mismatches] == []


def test_the_random_matches_reach_every_end_of_each_game(tmp_path: Path) -> None:
    halls = [json.loads(line) for line in _references(tmp_path, 1000).read_text().splitlines()]
    # The candidate keeps or switches, and wins or loses.
    assert {line["final"]["goals"]["candidate"] for line in halls} == {0, 100}
    assert {line["steps"][2]["moves"]["candidate"] for line in halls} == {"noop", "switch"}
    blind = _references(tmp_path, 1000, "blind-tictactoe").read_text().splitlines()
    games = [json.loads(line) for line in blind]
    assert {tuple(line["final"]["goals"].values()) for line in games} == {
        (100, 0),
        (0, 100),
        (50, 50),
    }
    # A mark onto the opponent's cell is refused: its player sees the cell, the other only
    # that it was refused.
    refusals = [
        step["percepts"]
        for line in games
        for step in line["steps"]
        if any(step["percepts"].values())
    ]
    assert refusals
    for seen in refusals:
        (told, other) = sorted(seen.values(), key=lambda p: p == ["refused"])
        assert other == ["refused"] and len(told) == 1 and told[0].startswith("(taken ")
    assert {role for seen in refusals for role, p in seen.items() if p != ["refused"]} == {
        "xplayer",
        "oplayer",
    }
    auctions = _references(tmp_path, 1000, "blind-goofspiel").read_text().splitlines()
    bids = [json.loads(line) for line in auctions]
    assert {tuple(line["final"]["goals"].values()) for line in bids} == {
        (100, 0, 0),
        (0, 100, 0),
        (50, 50, 0),
    }
    # Both see each prize dealt; of the bids, each only how its own fared.
    fared = {("won", "lost"), ("lost", "won"), ("tied", "tied")}
    for line in bids:
        for number, step in enumerate(line["steps"]):
            seen = step["percepts"]
            assert seen["random"] == []
            if number % 2 == 0:
                prize = step["moves"]["random"].replace("reveal", "prize")
                assert seen["north"] == seen["south"] == [prize]
            else:
                assert (*seen["north"], *seen["south"]) in fared


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("where", ["per-state", "per-state in a child"])
def test_a_rulesheet_reasoned_one_state_at_a_time_says_the_same_percepts(
    tmp_path: Path, where: str, name: str
) -> None:
    path = RULESHEETS / f"{name}.kif"
    text = path.read_text()
    if where == "per-state":
        rules = checked_rules(parse_rulesheet(text, str(path)), str(path))
        reasoner: PerState | RemotePerState = PerState(rules, str(path))
    else:
        reasoner = RemotePerState(text, str(path), DEFAULT_LIMITS)
    game = GdlGame(reasoner, str(path), text)
    try:
        assert game.imperfect
        report = check_file(_references(tmp_path, 40, name), game)
        assert report.games == 40
        assert [str(m) for m in report.mismatches] == []
    finally:
        game.close()


def test_a_percept_the_rules_do_not_give_is_a_mismatch_at_its_step_and_role(
    tmp_path: Path,
) -> None:
    record = random_reference(MontyHall(), 7)
    opened = record["steps"][1]["percepts"]["candidate"]
    record["steps"][1]["percepts"]["candidate"] = [*opened, "(car 1)"]
    path = tmp_path / "told.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (mismatch,) = check_file(path, _rulesheet()).mismatches
    assert (mismatch.step, mismatch.role) == (2, "candidate")
    assert "percepts differ: missing (car 1); extra none" in str(mismatch)


def test_each_role_sees_what_the_rules_say_and_chance_nothing() -> None:
    game = _rulesheet()
    state = game.initial_state()
    hidden = ("(choose 1)", "(hide_car 2)")
    # Neither is told the other's move at the first step.
    assert game.percepts(state, hidden) == ((), ())
    state = game.next_state(state, hidden)
    assert game.legal_moves(state, 1) == ("(open_door 3)",)
    assert game.percepts(state, ("noop", "(open_door 3)")) == (("(opened 3)",), ())
    state = game.next_state(state, ("noop", "(open_door 3)"))
    assert game.percepts(state, ("switch", "noop")) == (("(car 2)",), ())
    state = game.next_state(state, ("switch", "noop"))
    assert game.is_terminal(state) and game.goals(state) == (100, 0)


def test_a_game_of_perfect_information_tells_no_percepts() -> None:
    game = get_game("ticblock")
    assert not game.imperfect
    state = game.initial_state()
    assert game.percepts(state, ("(mark 2 2)", "noop")) == ((), ())
    gdl = load_text(
        "(role a) (init p) (legal a go) (<= (next q) (does a go)) (<= terminal (true q))"
        " (goal a 100)",
        "one.kif",
    )
    assert not gdl.imperfect
    assert gdl.percepts(gdl.initial_state(), ("go",)) == ((),)


def test_a_percept_rule_of_the_wrong_arity_is_refused_with_its_line() -> None:
    with pytest.raises(RulesheetError) as error:
        load_text("(role a)\n(init p)\n(<= (sees a) (true p))\n", "bad.kif")
    assert error.value.line == 3
    assert "'sees' takes 2 argument(s)" in str(error.value)


LISTENER = Path(__file__).resolve().parent / "players" / "listener.py"


def _played(tmp_path: Path, seed: int) -> Path:
    out = tmp_path / f"m{seed}.json"
    result = CliRunner().invoke(
        app,
        [
            "play", str(MONTY_HALL), "-p", f"candidate={sys.executable} {LISTENER}",
            "--seed", str(seed), "--out", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def told_lines(log: str | None) -> list[str]:
    """The lines a listening player was sent, as its log keeps them (`told: LINE`)."""
    assert log is not None
    return [
        line.split("told: ", 1)[1]
        for line in Path(log).read_text().splitlines()
        if line.startswith("told: ")
    ]


def test_a_seat_is_told_its_own_move_and_percepts_never_chance_s_moves(tmp_path: Path) -> None:
    for seed in range(3):
        out = _played(tmp_path, seed)
        transcript = read_transcript(out)
        (seat,) = [seat for seat in transcript.seats if seat.role == "candidate"]
        told = told_lines(seat.log)
        sees = [line for line in told if line.startswith("sees ")]
        steps = transcript.steps
        car = steps[0].moves["random"].split()[-1].rstrip(")")
        opened = steps[1].moves["random"].split()[-1].rstrip(")")
        assert sees == [
            f"sees 1 {steps[0].moves['candidate']}",
            f"sees 2 noop (opened {opened})",
            f"sees 3 {steps[2].moves['candidate']} (car {car})",
        ]
        # Chance's moves are in no line it was told after the rules on `start`.
        after_start = [line for line in told if not line.startswith("start ")]
        assert not [line for line in after_start if "hide_car" in line or "open_door" in line]
        assert not [line for line in told if line.startswith("moves ")]
        assert [step.percepts for step in steps] == [
            {"candidate": [], "random": []},
            {"candidate": [f"(opened {opened})"], "random": []},
            {"candidate": [f"(car {car})"], "random": []},
        ]


def test_replay_verifies_what_each_seat_was_told_and_fails_a_percept_too_many(
    tmp_path: Path,
) -> None:
    out = _played(tmp_path, 5)
    verified = CliRunner().invoke(app, ["replay", str(out), "--verify"])
    assert verified.exit_code == 0, verified.output
    data = json.loads(out.read_text())
    data["steps"][1]["percepts"]["candidate"].append("(car 9)")
    # Signed again with the results' own key: the rules, not the signature, find it.
    key = load_key(tmp_path / "signing.key")
    data["signature"] = key.sign(data)
    out.write_text(json.dumps(data))
    failed = CliRunner().invoke(app, ["replay", str(out), "--verify"])
    assert failed.exit_code == 1
    assert "step 2: candidate: told (opened" in failed.output
    assert "(car 9), but the rules give (opened" in failed.output


def test_percepts_recorded_in_a_game_of_perfect_information_fail_replay(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    played = CliRunner().invoke(
        app,
        ["play", "ticblock", "-p", "xcplayer=random", "-p", "obplayer=random", "--out", str(out)],
    )
    assert played.exit_code == 0, played.output
    data = json.loads(out.read_text())
    data["steps"][0]["percepts"] = {"xcplayer": [], "obplayer": []}
    data["signature"] = load_key(tmp_path / "signing.key").sign(data)
    out.write_text(json.dumps(data))
    failed = CliRunner().invoke(app, ["replay", str(out), "--verify"])
    assert failed.exit_code == 1
    assert "step 1: percepts recorded in a game of perfect information" in failed.output


def test_a_sees_line_is_built_and_parsed_by_the_protocol() -> None:
    line = Sees(2, "noop", ("(opened 3)", "(at (cell 1 2))"))
    assert str(line) == "sees 2 noop (opened 3) (at (cell 1 2))"
    assert parse(str(line)) == line
    assert parse("sees 1 (choose 2)") == Sees(1, "(choose 2)", ())
    with pytest.raises(MessageError):
        parse("sees 1")


def test_mcts_weighs_the_states_it_may_be_in_by_their_chance() -> None:
    # The candidate chose door 1 and saw door 3 opened: the car is behind door 2 twice as
    # often as behind its own, since chance had two doors to open when the car was behind 1.
    game = _rulesheet()
    beliefs = narrowed(game, {game.initial_state(): 1.0}, 0, "(choose 1)", ())
    assert len(beliefs) == 3 and sorted(beliefs.values()) == pytest.approx([1 / 3] * 3)
    beliefs = narrowed(game, beliefs, 0, "noop", ["(opened 3)"])
    by_car = {
        next(fact for fact in game.facts(state) if fact.startswith("(car")): chance
        for state, chance in beliefs.items()
    }
    assert by_car == pytest.approx({"(car 1)": 1 / 3, "(car 2)": 2 / 3})


def test_mcts_plays_a_game_of_imperfect_information_to_its_end(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = CliRunner().invoke(
        app, ["play", str(MONTY_HALL), "-p", "candidate=mcts", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert transcript.end_reason == "terminal" and transcript.faults == []
    assert CliRunner().invoke(app, ["replay", str(out), "--verify"]).exit_code == 0


def test_an_arena_plays_a_game_of_imperfect_information(tmp_path: Path) -> None:
    config = tmp_path / "arena.yaml"
    config.write_text(f"name: r\ngames:\n  - ticblock\n  - {MONTY_HALL}\n")
    games = parse_arena_config(config, config.read_text()).tournament.games
    assert [(settings.game.id, settings.game.imperfect) for settings in games] == [
        ("ticblock", False),
        ("monty-hall", True),
    ]


def test_a_seat_of_blind_tictactoe_is_never_told_its_opponent_s_marks(tmp_path: Path) -> None:
    blind = RULESHEETS / "blind-tictactoe.kif"
    for seat, other in (("xplayer", "oplayer"), ("oplayer", "xplayer")):
        out = tmp_path / f"{seat}.json"
        result = CliRunner().invoke(
            app,
            [
                "play", str(blind), "-p", f"{seat}={sys.executable} {LISTENER}",
                "-p", f"{other}=random", "--seed", "3", "--out", str(out),
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        transcript = read_transcript(out)
        (listener,) = [s for s in transcript.seats if s.role == seat]
        told = [line for line in told_lines(listener.log) if not line.startswith("start ")]
        # Each step: its own move and its refusals; never a `moves` line or the other's mark.
        expected = [
            " ".join(["sees", str(step.step), step.moves[seat], *(step.percepts or {})[seat]])
            for step in transcript.steps
        ]
        assert [line for line in told if line.startswith("sees ")] == expected
        assert {line.split()[0] for line in told} <= {"go", "sees", "end", "quit"}
        # Its `go` lines offer every cell but its own and those it found taken: what it knows,
        # the other's marks among them until it tries one.
        cells = {f"(mark {m} {n})" for m in (1, 2, 3) for n in (1, 2, 3)}
        mine: set[str] = set()
        found: set[str] = set()
        for line in told:
            if line.startswith("go "):
                assert set(split_moves(line.split(maxsplit=3)[3])) == cells - mine - found
            elif line.startswith("sees "):
                _, _, move, *percepts = split_moves(line)
                if move != "noop":
                    (found if percepts else mine).add(move)


def test_a_served_bot_seated_over_ggp_http_is_told_only_what_it_sees(tmp_path: Path) -> None:
    # The referee as the GGP manager sends GDL-II PLAYs (turn, own last move, percepts);
    # `serve` turns them into `sees` lines for the listener; neither carries the other's marks.
    blind = RULESHEETS / "blind-tictactoe.kif"
    trace = tmp_path / "trace.log"
    with served(tmp_path, f"{sys.executable} {LISTENER}") as port:
        out = tmp_path / "m.json"
        result = CliRunner().invoke(
            app,
            [
                "play", str(blind), "-p", f"xplayer=http://127.0.0.1:{port}",
                "-p", "oplayer=random", "--seed", "4", "--out", str(out), "--trace", str(trace),
            ],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert transcript.end_reason == "terminal" and transcript.faults == [], transcript.faults
    steps = transcript.steps
    percepts = [(step.percepts or {})["xplayer"] for step in steps]
    # What the manager sent: PLAY at every step (forced ones too), then STOP; each with the
    # turn, its own move at the step before and that step's percepts.
    sent = [
        line.split(" > ", 1)[1]
        for line in trace.read_text().splitlines()
        if " > (PLAY " in line or " > (STOP " in line
    ]
    match_id = sent[0].split()[1]
    expected = [f"(PLAY {match_id} 0 NIL NIL)"] + [
        f"({'STOP' if n == len(steps) else 'PLAY'} {match_id} {n} {step.moves['xplayer']}"
        f" {'(' + ' '.join(seen) + ')' if seen else 'NIL'})"
        for n, (step, seen) in enumerate(zip(steps, percepts, strict=True), start=1)
    ]
    assert sent == expected
    # What the program behind `serve` was told: its own moves and refusals, nothing else.
    (log,) = (tmp_path / "logs").glob("*.log")
    lines = [
        line.split("told: ", 1)[1]
        for line in log.read_text().splitlines()
        if line.startswith("told: ") and not line.startswith("told: start ")
    ]
    assert [line for line in lines if line.startswith("sees ")] == [
        " ".join(["sees", str(step.step), step.moves["xplayer"], *seen])
        for step, seen in zip(steps, percepts, strict=True)
    ]
    assert {line.split()[0] for line in lines} <= {"go", "sees", "end", "quit"}
    # Its seat's view says so, and has it asked at every step, as each PLAY asked it.
    shown = CliRunner().invoke(app, ["replay", str(out), "--seat", "xplayer"])
    assert shown.exit_code == 0, shown.output
    assert "a GGP player, it was told the same in the GGP's START, PLAY and STOP" in shown.output
    asked = [line.split()[2] for line in shown.output.splitlines() if line.startswith("> go ")]
    assert asked == [str(step.step) for step in steps]


def test_the_gdl_ii_play_and_stop_are_read_and_written_as_the_dresden_server_sent_them() -> None:
    first = ggp.parse_request("(PLAY m 0 NIL NIL)")
    assert first == ggp.Play("m", None, ggp.Seen(0, None, ()))
    later = ggp.parse_request("(play M 2 NOOP (Refused (taken 1 2)))")
    assert later == ggp.Play("m", None, ggp.Seen(2, "noop", ("refused", "(taken 1 2)")))
    assert ggp.format_request(later) == "(PLAY m 2 noop (refused (taken 1 2)))"
    assert ggp.format_request(ggp.Stop("m", None, ggp.Seen(5, "(mark 1 1)", ()))) == (
        "(STOP m 5 (mark 1 1) NIL)"
    )
    with pytest.raises(ggp.MessageError, match="the turn must be a whole number, not x"):
        ggp.parse_request("(PLAY m x NIL NIL)")


def test_the_ggp_export_carries_each_turn_s_percepts_and_an_import_checks_them(
    tmp_path: Path,
) -> None:
    out = _played(tmp_path, 6)
    exported = tmp_path / "m.ggp.json"
    assert CliRunner().invoke(app, ["export", str(out), "--out", str(exported)]).exit_code == 0
    match = json.loads(exported.read_text())
    transcript = read_transcript(out)
    assert match["percepts"] == [
        [(step.percepts or {})[role] for role in ("candidate", "random")]
        for step in transcript.steps
    ]
    # As another manager's match (no record of ours), its percepts are read, and checked;
    # a match without them is told what the rules give.
    del match["x-referee-transcript"]
    given = match.pop("percepts")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for number, (told, verdict) in enumerate(((given, 0), (None, 0), ([[["(car 1)"], []]] * 3, 1))):
        extra = {} if told is None else {"percepts": told}
        (foreign / "g.json").write_text(json.dumps({**match, **extra}))
        imported = foreign / f"i{number}.json"
        result = CliRunner().invoke(
            app, ["import", str(foreign / "g.json"), "--out", str(imported)]
        )
        assert result.exit_code == 0, result.output
        checked = CliRunner().invoke(app, ["replay", str(imported), "--verify"])
        assert checked.exit_code == verdict, checked.output
    assert "step 1: candidate: told (car 1), but the rules give no percept" in checked.output


def test_rules_says_a_game_is_of_imperfect_information_and_others_are_not() -> None:
    told = CliRunner().invoke(app, ["rules", str(MONTY_HALL)])
    assert told.exit_code == 0
    assert "Imperfect information: after each step a player is told only its own move" in (
        told.stdout
    )
    plain = CliRunner().invoke(app, ["rules", "ticblock"])
    assert plain.exit_code == 0 and "Imperfect information" not in plain.stdout


def test_a_tournament_of_two_players_and_chance_verifies_every_match(tmp_path: Path) -> None:
    # Its matches are named by their two players; chance's seat is in each as well.
    goofspiel = RULESHEETS / "blind-goofspiel.kif"
    config = write_config(
        tmp_path, {"a": "random", "b": "random"}, games=f"[{goofspiel}]", play_clock=1000
    )
    run(load_config(config))
    results = tmp_path / "results" / "cup"
    verdicts = [verify_file(path) for path in sorted(results.glob("*.json"))]
    assert len(verdicts) == 2
    assert [verdict.problem for verdict in verdicts] == [None, None]
    assert all(verdict.outcome is Outcome.VERIFIED for verdict in verdicts)


def test_replay_seat_shows_the_very_lines_a_seat_of_blind_tictactoe_was_told(
    tmp_path: Path,
) -> None:
    # The listener writes down every line it is sent; `replay --seat` works them out from the
    # transcript and the rules alone, its time bank's share of each `go` too.
    blind = RULESHEETS / "blind-tictactoe.kif"
    out = tmp_path / "m.json"
    played = CliRunner().invoke(
        app,
        [
            "play", str(blind), "-p", f"xplayer={sys.executable} {LISTENER}",
            "-p", "oplayer=random", "--seed", "3", "--time-bank", "700", "--out", str(out),
        ],
    )  # fmt: skip
    assert played.exit_code == 0, played.output
    transcript = read_transcript(out)
    (listener,) = [s for s in transcript.seats if s.role == "xplayer"]
    heard = [line for line in told_lines(listener.log) if line != "quit"]
    start, rules = heard[0].split(" ", 6)[:6], heard[0].split(" ", 6)[6]
    assert rules.startswith("(") and len(rules) > 1000
    shown = CliRunner().invoke(app, ["replay", str(out), "--seat", "xplayer"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "only its own move and its percepts (sees), never another role's move" in lines[1]
    told = [line.removeprefix("> ") for line in lines if line.startswith("> ")]
    assert told == [" ".join([*start, "<rulesheet>"]), *heard[1:]]
    # Some `go` had more than the play clock: the bank's 700 ms on top.
    assert any(line.startswith("go ") and line.split()[2] == "1700" for line in told)
    # It never sees a move of oplayer's: each `sees` carries its own, and its refusals.
    for step in transcript.steps:
        seen = (step.percepts or {})["xplayer"]
        assert f"sees {step.step} {' '.join([step.moves['xplayer'], *seen])}" in told
    # Its answers: the listener's first legal move, each after its `go`.
    for before, after in itertools.pairwise(lines):
        if before.startswith("> go "):
            assert after.startswith(f"< {split_moves(before.split(maxsplit=4)[4])[0]}  (")
    # As JSON: the same, step by step.
    data = json.loads(
        CliRunner().invoke(app, ["replay", str(out), "--seat", "xplayer", "--json"]).output
    )
    steps = data["seat"]["steps"]
    assert [s["percepts"] for s in steps] == [
        (step.percepts or {})["xplayer"] for step in transcript.steps
    ]
    assert [s["move"] for s in steps] == [step.moves["xplayer"] for step in transcript.steps]
    assert all(s["moves"] is None for s in steps)
    asked = [line.split()[1] for line in heard if line.startswith("go ")]
    assert [str(s["step"]) for s in steps if s["asked"] is not None] == asked


def test_replay_seat_names_the_seats_for_a_role_that_is_none_or_chance(tmp_path: Path) -> None:
    out = _played(tmp_path, 2)
    for role, why in (("random", "chance, played by the referee, is told nothing"),
                      ("host", "monty-hall has no role 'host'")):  # fmt: skip
        result = CliRunner().invoke(app, ["replay", str(out), "--seat", role])
        assert result.exit_code == 2
        assert result.stderr == f"referee: error: --seat {role}: {why}; its seats are candidate\n"
    # A role's name in any case, as GDL reads names.
    assert CliRunner().invoke(app, ["replay", str(out), "--seat", "CANDIDATE"]).exit_code == 0


def test_what_each_role_knows_of_blind_tictactoe_is_listed_and_none_of_it_drawn_over() -> None:
    # oplayer holds (1 2) and (1 3); xplayer tries both and learns both: two known cells in
    # one row m = 1, which a grid of role by m, n the value, drew one over the other.
    game = load_text((RULESHEETS / "blind-tictactoe.kif").read_text(), "blind-tictactoe.kif")
    steps = [
        ("(mark 3 3)", "noop"), ("noop", "(mark 1 2)"), ("(mark 3 1)", "noop"),
        ("noop", "(mark 1 3)"), ("(mark 1 2)", "noop"), ("(mark 1 3)", "noop"),
    ]  # fmt: skip
    state = game.initial_state()
    for joint in steps:
        state = game.next_state(state, [Move(move) for move in joint])
    known = ["(known xplayer 1 2)", "(known xplayer 1 3)"]
    assert [f for f in game.facts(state) if f.startswith("(known ")] == known
    # No board of it: the cells' board only, and both facts listed as they are.
    assert [board.title for board in game.boards(state)] == ["cell"]
    assert [f for f in game.other_facts(state) if f.startswith("(known ")] == known
    text = game.render(state).splitlines()
    assert [line for line in text if "known" in line] == known
    # The report's facts of it: a row of its arguments each.
    facts = site.facts(game, Frame(6, state))
    assert {"relation": "known", "rows": ["xplayer 1 2", "xplayer 1 3"]} in facts
    # Where nobody knows anything yet, nothing of it is drawn.
    assert "known" not in game.render(game.initial_state())
