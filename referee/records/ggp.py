"""Match records as the GGP game managers write them (ggp-base, Tiltyard): out and back in.

The match JSON has the roles' moves per turn as GDL terms, every state as its list of true
facts, the times the states were reached (ms since the epoch), one list of errors per
state with "" for a role without one (the START's first: `TO` a timeout, `CE` a connection
error, `IL <move>` an illegal move), the goals, and the clocks in seconds. The states of a
built-in game are those of its GDL rules (`referee.games.as_gdl`), which the engines agree
with. Roles, moves and states are spelled as the exported rulesheet spells its names
(`xPlayer`, not `xplayer`): ggp-base reads them case and all. Only a match that reached
the game's end is completed, with goals; one that ended otherwise (aborted, forfeited, cut
short by the rules) is aborted, without goals, its faults in the errors. Our own record
rides along under `x-referee-transcript`, signature and all, so that an export imported
again is the very transcript it came from. A match of a game of imperfect information
(GDL-II) also has, under `percepts`, what each role was told it sees after each turn.

A match another manager played is imported with origin `ggp`: its moves, end and goals
are checked by replay as any other; its answer times and the manager's random moves for
faulty players were not recorded, so they are not checked. One that ended aborted where the
rules could not compute the state after its last move records that as the referee would:
as its `rules_fault`. One neither completed nor aborted, which its manager was still
playing, is `unfinished`. A game given by `--rules` is named after its file.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from referee.errors import FaultKind, GameFault, MoveError, RefereeError, TranscriptError
from referee.games import (
    Game,
    Move,
    StateLimits,
    as_gdl,
    builtin_with_rules,
    gdl_rules,
    load_text,
)
from referee.games.gdl.limits import DEFAULT_LIMITS
from referee.games.gdl.syntax import folded, format_term, one_line, parse_terms, respell, spellings
from referee.ggp.messages import plain_name
from referee.policy import Policy
from referee.protocol import EndReason
from referee.records.files import read_text
from referee.records.transcript import (
    GGP_ORIGIN,
    UNFINISHED,
    Fault,
    RulesFault,
    Seat,
    Step,
    Transcript,
    rules_fault,
    rulesheet_of,
    transcript_of,
)

EXTRA = "x-referee-transcript"
RULES = "gameRulesheet"
# ggp-base's codes are TO, CE and IL only. A resignation exports as CE, the nearest: like a
# player gone from the connection, the person sent no move and takes no further part; TO
# would say a clock ran out (people are not timed) and IL that a move was made. It imports
# back as a crash, GGP having no word that tells the two apart.
_CODES = {
    FaultKind.TIMEOUT: "TO",
    FaultKind.CRASH: "CE",
    FaultKind.RESOURCE: "CE",
    FaultKind.RESIGNED: "CE",
}
_KINDS = {"TO": FaultKind.TIMEOUT, "CE": FaultKind.CRASH, "IL": FaultKind.ILLEGAL}
# How an illegal move's fault names the move (the match's wording).
_ILLEGAL = re.compile(r"played (.+), which is not legal")


def to_ggp(transcript: Transcript, game: Game, signed: dict[str, Any]) -> dict[str, Any]:
    """The GGP match JSON of a transcript of `game`; `signed` is its file's JSON."""
    roles = [seat.role for seat in transcript.seats]
    rulesheet = gdl_rules(game)
    spelling = spellings(rulesheet)
    gdl = as_gdl(game)
    state = gdl.initial_state()
    states = [gdl.facts(state)]
    for step in transcript.steps:
        state = gdl.next_state(state, tuple(gdl.parse_move(step.moves[r]) for r in roles))
        states.append(gdl.facts(state))
    start = _epoch_ms(transcript.started_at)
    terminal = transcript.end_reason == EndReason.TERMINAL
    match: dict[str, Any] = {
        "matchId": transcript.match_id,
        "randomToken": f"{transcript.seed:016x}",
        "startTime": start,
        "startClock": _seconds(transcript.clocks["start_ms"]),
        "playClock": _seconds(transcript.clocks["play_ms"]),
        "gameName": transcript.game,
        "gameRoleNames": [respell(role, spelling) for role in roles],
        RULES: rulesheet,
        "playerNamesFromHost": [seat.player for seat in transcript.seats],
        "isPlayerHuman": [seat.human for seat in transcript.seats],
        "states": [
            "( " + " ".join(respell(fact, spelling) for fact in facts) + " )" for facts in states
        ],
        "moves": moves_of(transcript, spelling),
        "errors": errors_of(transcript, spelling),
        **_percepts_field(transcript, spelling),
        # A manager completes a match only at the game's end, and marks its goals then.
        "isCompleted": terminal,
        "isAborted": not terminal and transcript.end_reason != UNFINISHED,
    }
    if all(step.at_ms is not None for step in transcript.steps):
        match["stateTimes"] = [start] + [
            start + round(step.at_ms or 0) for step in transcript.steps
        ]
    goals = _goal_values(transcript)
    if goals is not None:
        match["goalValues"] = goals
    match[EXTRA] = signed
    return match


def moves_of(transcript: Transcript, spelling: Mapping[str, str]) -> list[list[str]]:
    """Each step's moves in role order, spelled as the rulesheet spells its names."""
    roles = [seat.role for seat in transcript.seats]
    return [[respell(step.moves[role], spelling) for role in roles] for step in transcript.steps]


def _percepts_field(transcript: Transcript, spelling: Mapping[str, str]) -> dict[str, Any]:
    """`percepts`, each turn's percepts of each role in role order, spelled as the
    rulesheet spells its names: only in a match that records them (GDL-II)."""
    if not transcript.steps or transcript.steps[0].percepts is None:
        return {}
    roles = [seat.role for seat in transcript.seats]
    return {
        "percepts": [
            [[respell(p, spelling) for p in (step.percepts or {}).get(role, [])] for role in roles]
            for step in transcript.steps
        ]
    }


def _goal_values(transcript: Transcript) -> list[int] | None:
    """The goals a GGP record gives a match: those of the game's end, and no other."""
    if transcript.end_reason != EndReason.TERMINAL or transcript.goals is None:
        return None
    return [transcript.goals[seat.role] for seat in transcript.seats]


def errors_of(transcript: Transcript, spelling: Mapping[str, str]) -> list[list[str]]:
    """One list per state (the START's first), a GGP error code per role, "" for none; an
    illegal move's code names it as the rulesheet spells it.

    A forfeit is decided at a step that was asked but never played: its row follows the last.
    """
    roles = [seat.role for seat in transcript.seats]
    rounds = len(transcript.steps) + 1
    if transcript.faults:
        rounds = max(rounds, transcript.faults[-1].step + 1)
    errors = [[""] * len(roles) for _ in range(rounds)]
    for fault in transcript.faults:
        errors[fault.step][roles.index(fault.role)] = respell(_code(fault), spelling)
    return errors


def from_ggp(
    data: Any, where: str, rules: Path | None = None, limits: StateLimits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """The transcript JSON of a GGP match JSON; TranscriptError naming `where` and the key.

    Our own export gives back the transcript it carries, once its GGP fields are found to
    say the same; another manager's match becomes a transcript of origin `ggp`, under the
    rulesheet file `rules` (the game named after it) when given, as the JSON must when it
    names its game only by URL, its states computed within `limits` when the game is played
    one state at a time.
    """
    if not isinstance(data, dict):
        raise TranscriptError(f"{where}: not a GGP match: not a JSON object")
    if EXTRA in data:
        return _own(data, where)
    return _foreign(data, where, rules, limits).to_json()


def _own(data: dict[str, Any], where: str) -> dict[str, Any]:
    signed = data[EXTRA]
    transcript = transcript_of(signed, f"{where}: {EXTRA}")
    # Spelled as the export spelled them: after its own rulesheet.
    rulesheet = data.get(RULES)
    spelling = spellings(rulesheet) if isinstance(rulesheet, str) else {}
    said = {
        "moves": moves_of(transcript, spelling),
        "errors": errors_of(transcript, spelling),
        "goalValues": _goal_values(transcript),
        "matchId": transcript.match_id,
        "percepts": _percepts_field(transcript, spelling).get("percepts"),
    }
    for key, value in said.items():
        if data.get(key) != value:
            raise TranscriptError(f"{where}: {key} disagrees with the referee's record in {EXTRA}")
    return dict(signed)


def _rulesheet_text(path: Path) -> str:
    """A rulesheet file's text as `play` reads and records it, in text mode: its line ends
    made "\n". Recorded as the bytes are, a CRLF rulesheet (ggp-base's ticTacToe.kif) would
    look changed to every replay of the match."""
    return io.StringIO(read_text(path, TranscriptError), newline=None).read()


def _foreign(
    data: dict[str, Any], where: str, rules: Path | None, limits: StateLimits
) -> Transcript:
    match_id = _field(data, "matchId", str, where)
    url = data.get("gameMetaURL")
    text = _rulesheet_text(rules) if rules is not None else data.get(RULES)
    path = str(rules) if rules is not None else f"{_game_name(data, match_id)}.kif"
    if not isinstance(text, str):
        named = f" (its game is {url})" if isinstance(url, str) else ""
        raise TranscriptError(f"{where}: no rules in the match{named}: give them with --rules")
    try:
        game = builtin_with_rules(one_line(text)) or load_text(text, path, limits)
    except RefereeError as error:
        raise TranscriptError(f"{where}: the rules: {error}") from None
    roles = game.roles
    moves = _field(data, "moves", list, where)
    steps = []
    for number, row in enumerate(moves, start=1):
        if not isinstance(row, list) or len(row) != len(roles):
            raise TranscriptError(f"{where}: moves[{number - 1}]: not {len(roles)} moves")
        try:
            joint = {
                role: game.parse_move(str(move)) for role, move in zip(roles, row, strict=True)
            }
        except MoveError as error:
            raise TranscriptError(f"{where}: moves[{number - 1}]: {error}") from None
        steps.append(Step(number, dict(joint)))
    start = _field(data, "startTime", int, where)
    times = data.get("stateTimes")
    if isinstance(times, list) and len(times) == len(steps) + 1:
        steps = [
            Step(step.step, step.moves, {}, float(at - start)) if isinstance(at, int) else step
            for step, at in zip(steps, times[1:], strict=True)
        ]
    if game.imperfect:
        steps = _with_percepts(game, steps, data.get("percepts"), where)
    faults = _faults(data.get("errors", []), roles, steps, where)
    aborted = bool(data.get("isAborted"))
    completed = _field(data, "isCompleted", bool, where) and not aborted
    # Neither completed nor aborted: its manager was still playing it when it was written.
    end = EndReason.TERMINAL if completed else EndReason.ABORTED if aborted else UNFINISHED
    goals = None
    if completed:
        values = _field(data, "goalValues", list, where)
        if len(values) != len(roles) or not all(isinstance(v, int) for v in values):
            raise TranscriptError(f"{where}: goalValues: not {len(roles)} whole numbers")
        goals = dict(zip(roles, values, strict=True))
    names = data.get("playerNamesFromHost")
    if not isinstance(names, list) or len(names) != len(roles):
        names = [f"player{index + 1}" for index in range(len(roles))]
    last = times[-1] if isinstance(times, list) and times and isinstance(times[-1], int) else start
    return Transcript(
        match_id=match_id,
        game=game.id,
        seed=0,
        seats=[Seat(role, str(name), [], None) for role, name in zip(roles, names, strict=True)],
        clocks={
            "start_ms": round(_field(data, "startClock", (int, float), where) * 1000),
            "play_ms": round(_field(data, "playClock", (int, float), where) * 1000),
            "time_bank_ms": 0,
        },
        # What the GGP managers do with a faulty player's move: a random legal one.
        policy=str(Policy.RANDOM),
        started_at=_iso(start),
        ended_at=_iso(max(start, last)),
        start_times_ms={},
        steps=steps,
        faults=faults,
        end_reason=str(end),
        goals=goals,
        rulesheet=rulesheet_of(game),
        origin=GGP_ORIGIN,
        rules_fault=_last_state_fault(game, steps) if aborted else None,
    )


def _with_percepts(game: Game, steps: list[Step], given: Any, where: str) -> list[Step]:
    """The steps of a GDL-II match with what each role was told: the match's `percepts`,
    read in any case, or what the rules give where it has none."""
    if given is not None and (not isinstance(given, list) or len(given) != len(steps)):
        raise TranscriptError(f"{where}: percepts: not one list per turn")
    told: list[Step] = []
    state = game.initial_state()
    for number, step in enumerate(steps):
        joint = tuple(Move(step.moves[role]) for role in game.roles)
        try:
            seen = game.percepts(state, joint) if given is None else given[number]
            state = game.next_state(state, joint)
        except RefereeError:
            return told + steps[number:]  # the replay says why
        if not isinstance(seen, list | tuple) or len(seen) != len(game.roles):
            raise TranscriptError(f"{where}: percepts[{number}]: not {len(game.roles)} lists")
        percepts = {
            role: [format_term(folded(term)) for p in row for term in _terms(p, where)]
            for role, row in zip(game.roles, seen, strict=True)
        }
        told.append(replace(step, percepts=percepts))
    return told


def _terms(text: Any, where: str) -> list[Any]:
    """The GDL terms of a percept as a match JSON writes it."""
    if not isinstance(text, str):
        raise TranscriptError(f"{where}: percepts: {text!r} is not a term")
    try:
        return [term for term, _line in parse_terms(text, where, headless=True)]
    except RefereeError as error:
        raise TranscriptError(f"{where}: percepts: {error}") from None


def _game_name(data: dict[str, Any], match_id: str) -> str:
    """What a match's game is called: its name, else the last name in its URL (ggp-base's
    `.../games/ticTacToe/v0/`), else the match's id; made a file's name."""
    name = data.get("gameName")
    url = data.get("gameMetaURL")
    if not isinstance(name, str) and isinstance(url, str):
        parts = [part for part in url.split("/") if part and not re.fullmatch(r"v\d+", part)]
        name = parts[-1] if parts else None
    return plain_name(name if isinstance(name, str) and name else match_id)


def _last_state_fault(game: Game, steps: list[Step]) -> RulesFault | None:
    """The record of the rules failing at the state after the last step, as a match of the
    referee's would end (replay --verify asks the states in the same order); None when they
    compute it, or when a move is not legal or the rules fail before (replay says where)."""
    state = game.initial_state()
    at = 0
    try:
        for number, step in enumerate(steps, start=1):
            if game.is_terminal(state):
                return None  # moves after the end: replay says so
            at = number
            state = game.next_state(state, tuple(Move(step.moves[role]) for role in game.roles))
        if game.is_terminal(state):
            game.goals(state)
    except GameFault as fault:
        return rules_fault(game, at, fault) if at == len(steps) else None
    except MoveError:
        return None
    return None


def _faults(errors: Any, roles: tuple[str, ...], steps: list[Step], where: str) -> list[Fault]:
    if not isinstance(errors, list):
        raise TranscriptError(f"{where}: errors: not a list")
    faults = []
    for number, row in enumerate(errors):
        if number > len(steps):
            break
        if not isinstance(row, list) or len(row) != len(roles):
            raise TranscriptError(f"{where}: errors[{number}]: not {len(roles)} entries")
        for role, code in zip(roles, row, strict=True):
            if not code:
                continue
            kind = _KINDS.get(str(code)[:2], FaultKind.PROTOCOL)
            if kind is FaultKind.ILLEGAL and number == 0:
                kind = FaultKind.PROTOCOL  # no move is asked at the START: its answer was no ready
            played = steps[number - 1].moves[role] if number else None
            faults.append(Fault(number, role, kind, f"GGP error {code}", played))
    return faults


def _code(fault: Fault) -> str:
    if fault.kind in _CODES:
        return _CODES[fault.kind]
    found = _ILLEGAL.match(fault.detail)
    return f"IL {found[1]}" if found else "IL"


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(key)
    numeric = kind in (int, (int, float))
    if not isinstance(value, kind) or (numeric and isinstance(value, bool)):
        wanted = "number" if isinstance(kind, tuple) else kind.__name__
        raise TranscriptError(f"{where}: {key}: missing, or not a {wanted}")
    return value


def _seconds(ms: int) -> int | float:
    """A clock in seconds, as GGP writes clocks: whole when it is."""
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def _epoch_ms(timestamp: str) -> int:
    return round(datetime.fromisoformat(timestamp).timestamp() * 1000)


def _iso(epoch_ms: int) -> str:
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
