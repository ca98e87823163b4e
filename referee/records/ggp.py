"""A transcript in the layout of the match JSON of the GGP game managers (GGP Base, Tiltyard).

Clocks there are in seconds; moves and goals are lists in role order; `errors` has one list
per request round (the start, then each step asked), with "" for a role that did not fail.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from referee.protocol import EndReason
from referee.records.transcript import Transcript


def _seconds(ms: int) -> int | float:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def _epoch_ms(timestamp: str) -> int:
    return round(datetime.fromisoformat(timestamp).timestamp() * 1000)


def to_ggp(transcript: Transcript) -> dict[str, Any]:
    """The GGP match JSON of a transcript."""
    roles = [seat.role for seat in transcript.seats]
    rounds = len(transcript.steps) + 1
    if transcript.faults:
        # A forfeit is decided at a step that was asked but never played.
        rounds = max(rounds, transcript.faults[-1].step + 1)
    errors = [[""] * len(roles) for _ in range(rounds)]
    for fault in transcript.faults:
        errors[fault.step][roles.index(fault.role)] = f"{fault.kind}: {fault.detail}"
    match: dict[str, Any] = {
        "matchId": transcript.match_id,
        "gameName": transcript.game,
        "gameRoleNames": roles,
        "playerNamesFromHost": [seat.player for seat in transcript.seats],
        "isPlayerHuman": [seat.human for seat in transcript.seats],
        "startTime": _epoch_ms(transcript.started_at),
        "startClock": _seconds(transcript.clocks["start_ms"]),
        "playClock": _seconds(transcript.clocks["play_ms"]),
        "moves": [[step.moves[role] for role in roles] for step in transcript.steps],
        "isCompleted": transcript.complete,
        "isAborted": transcript.end_reason == EndReason.ABORTED,
    }
    if transcript.faults:
        match["errors"] = errors
    if transcript.goals is not None:
        match["goalValues"] = [transcript.goals[role] for role in roles]
    return match
