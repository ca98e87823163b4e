"""GGP match records both ways, checked as ggp-base's Match reads them: names spelled as the
rulesheet spells them, only a match at the game's end completed with goals, and a match
still under way imported as unfinished."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.clock import Clocks
from referee.games import GAMES, get_game
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import make_player, player_spec
from referee.policy import Policy
from referee.records.signing import results_key
from referee.records.verify import Outcome, verify_file
from tests.support.paths import RULES

TICTACTOE2 = RULES / "tictactoe2.kif"
runner = CliRunner()
# What ggp-base writes in lower case whatever a rulesheet says, and KIF's punctuation.
_KEYWORDS = {"init", "true", "next", "role", "does", "goal", "legal", "terminal", "base", "input"}


def _names(kif: str) -> list[str]:
    """The names of KIF text, as written (its comments dropped)."""
    return re.findall(r"[^\s();]+", re.sub(r";[^\n]*", "", kif))


def ggp_base_reads(match: dict[str, Any], rules: Path) -> None:
    """What ggp-base's Match checks of a record it loads, and its GameServer of each move:
    roles, states and moves written with the rulesheet's own names, case and all; state 0
    the rulesheet's initial state; each move legal where it was played; goals only at the
    end of a completed match."""
    rulesheet = match["gameRulesheet"]
    spelled = {name for name in _names(rulesheet) if not name.startswith("?")}
    assert match["gameRoleNames"] == re.findall(r"\(\s*role\s+([^\s()?][^\s()]*)\s*\)", rulesheet)
    for text in [*match["states"], *(move for row in match["moves"] for move in row)]:
        strange = [n for n in _names(text) if n not in spelled and n.lower() not in _KEYWORDS]
        assert not strange, f"{strange} in {text!r}: not spelled as the rulesheet spells them"
    # The rulesheet's own game, read case-insensitively as GDL is: with every name spelled
    # as in the rulesheet, facts equal but for case are the same sentences to ggp-base.
    game = get_game(str(rules))
    state = game.initial_state()
    assert len(match["states"]) == len(match["moves"]) + 1
    for number, row in enumerate(match["moves"]):
        written = re.findall(r"\([^()]*\)|[^\s()]+", match["states"][number][1:-1])
        facts = {fact.lower() for fact in written}
        assert facts == set(game.facts(state)), f"state {number} is not the rules' state"
        joint = tuple(game.parse_move(move) for move in row)
        for role, move in enumerate(joint):
            assert move in game.legal_moves(state, role), f"step {number + 1}: {row[role]}"
        state = game.next_state(state, joint)
    if match["isCompleted"]:
        assert game.is_terminal(state)
        assert match["goalValues"] == list(game.goals(state))
    else:
        assert "goalValues" not in match


def _play(tmp_path: Path, game_path: str, name: str) -> Path:
    game = get_game(game_path)
    players = [
        make_player(player_spec("random", f"p{index}"), tmp_path / f"{name}.{index}.log")
        for index in range(len(game.roles))
    ]
    out = tmp_path / f"{name}.json"
    setup = MatchSetup(name, game, players, Clocks(10_000, 2_000), Policy.FORFEIT, seed=3)
    asyncio.run(play_fresh(setup, out, results_key(tmp_path, None)[0]))
    return out


def _export(path: Path) -> dict[str, Any]:
    out = path.with_suffix(".ggp.json")
    result = runner.invoke(app, ["export", str(path), "--format", "ggp", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def _import(tmp_path: Path, match: dict[str, Any], *options: str) -> Path:
    path = tmp_path / "in.ggp.json"
    path.write_text(json.dumps(match))
    out = tmp_path / "imported.json"
    result = runner.invoke(app, ["import", str(path), "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize(
    "game_id", [*GAMES, pytest.param(str(TICTACTOE2), marks=pytest.mark.corpus)]
)
def test_an_export_is_read_by_ggp_base_as_its_rulesheet_spells_it(
    tmp_path: Path, game_id: str
) -> None:
    match = _export(_play(tmp_path, game_id, "m"))
    # The rules as the manager has them: the record's own rulesheet.
    rules = tmp_path / "rules" / Path(game_id).with_suffix(".kif").name
    rules.parent.mkdir()
    rules.write_text(match["gameRulesheet"])
    ggp_base_reads(match, rules)
    assert match["isCompleted"] and not match["isAborted"]


@pytest.mark.corpus
def test_a_mixed_case_export_imports_in_any_case_and_names_its_game(tmp_path: Path) -> None:
    match = _export(_play(tmp_path, str(TICTACTOE2), "m"))
    assert match["gameRoleNames"] == ["xPlayer", "oPlayer"]
    assert "(control xPlayer)" in match["states"][0]
    del match["x-referee-transcript"], match["gameName"]
    # As ggp-base writes it: the game by URL, its moves in any case the manager keeps.
    rulesheet = match.pop("gameRulesheet")
    match["gameMetaURL"] = "http://games.ggp.org/base/games/ticTacToe2/v0/"
    match["moves"] = [[move.upper() for move in row] for row in match["moves"]]
    imported = json.loads(_import(tmp_path, match, "--rules", str(TICTACTOE2)).read_text())
    assert imported["game"] == "tictactoe2"
    assert imported["rulesheet"]["path"] == str(TICTACTOE2)
    assert verify_file(tmp_path / "imported.json").outcome is Outcome.VERIFIED
    # Without --rules, its own rulesheet is named after the game in its URL.
    match["gameRulesheet"] = rulesheet
    imported = json.loads(_import(tmp_path, match).read_text())
    assert imported["game"] == "ticTacToe2"


def test_a_match_still_under_way_imports_unfinished_and_verifies_its_steps(
    tmp_path: Path,
) -> None:
    match = _export(_play(tmp_path, "ticblock", "m"))
    del match["x-referee-transcript"]
    # What ggp-base writes of a match it is still playing: neither completed nor aborted.
    del match["moves"][3:], match["states"][4:], match["stateTimes"][4:], match["goalValues"]
    match.update(isCompleted=False, isAborted=False)
    out = _import(tmp_path, match)
    imported = json.loads(out.read_text())
    assert (imported["end_reason"], imported["goals"]) == ("unfinished", None)
    assert verify_file(out).outcome is Outcome.VERIFIED
    result = runner.invoke(app, ["replay", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "result: none (unfinished after 3 steps)"


def test_an_unfinished_record_of_a_match_at_its_end_fails_verification(tmp_path: Path) -> None:
    match = _export(_play(tmp_path, "ticblock", "m"))
    del match["x-referee-transcript"], match["goalValues"]
    match.update(isCompleted=False, isAborted=False)
    out = _import(tmp_path, match)
    verdict = verify_file(out)
    assert verdict.outcome is Outcome.FAILED
    assert str(verdict.problem).startswith(f"{out}: end: recorded as unfinished, but the game is")


def test_only_an_imported_match_can_be_unfinished(tmp_path: Path) -> None:
    path = _play(tmp_path, "ticblock", "m")
    data = json.loads(path.read_text())
    del data["steps"][3:]
    data.update(end_reason="unfinished", goals=None)
    data.pop("signature", None)
    path.write_text(json.dumps(data))
    assert str(verify_file(path).problem) == (
        f"{path}: end_reason: unfinished, but only a match another manager played can be"
    )


def test_a_match_ended_before_the_games_end_exports_uncompleted_without_goals(
    tmp_path: Path,
) -> None:
    path = _play(tmp_path, "ticblock", "m")
    data = json.loads(path.read_text())
    del data["steps"][3:]
    data.update(end_reason="aborted", goals=None, signature=None)
    data["signature"] = results_key(tmp_path, None)[0].sign(data)
    path.write_text(json.dumps(data))
    match = _export(path)
    assert (match["isCompleted"], match["isAborted"]) == (False, True)
    assert "goalValues" not in match
    assert len(match["moves"]) == 3


@pytest.mark.corpus
def test_a_crlf_rulesheet_given_with_rules_is_not_taken_for_changed(tmp_path: Path) -> None:
    match = _export(_play(tmp_path, str(TICTACTOE2), "m"))
    del match["x-referee-transcript"]
    rules = tmp_path / "crlf.kif"
    rules.write_bytes(match.pop("gameRulesheet").replace("\n", "\r\n").encode())
    verdict = verify_file(_import(tmp_path, match, "--rules", str(rules)))
    assert verdict.outcome is Outcome.VERIFIED
    assert verdict.replayed is not None and verdict.replayed.note is None
