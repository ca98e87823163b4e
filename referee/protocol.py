"""The text of protocol version 1 (`docs/protocol.md`): building and splitting its lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from referee.games import Move

VERSION = 1
LINE_LIMIT = 64 * 1024
QUIT = "quit"
READY = "ready"
_MOVE = re.compile(r"\([^()]*\)|[^\s()]+")


class EndReason(StrEnum):
    """Why a match ended: the one word an `end` line gives."""

    TERMINAL = "terminal"
    FORFEIT = "forfeit"
    ABORTED = "aborted"


def start(match_id: str, game_id: str, role: str, start_ms: int, play_ms: int) -> str:
    """A new match begins; the player answers `ready`."""
    return f"start {match_id} {game_id} {role} {start_ms} {play_ms}"


def go(step: int, ms: int, legal: Sequence[Move]) -> str:
    """The player must choose one of `legal` for `step` within `ms`."""
    return f"go {step} {ms} {' '.join(legal)}"


def moves(step: int, joint: Sequence[Move]) -> str:
    """The joint move applied at `step`, in role order."""
    return f"moves {step} {' '.join(joint)}"


def end(goals: Sequence[int], reason: str) -> str:
    """The match is over."""
    return f"end {' '.join(str(goal) for goal in goals)} {reason}"


def split_moves(text: str) -> list[str]:
    """The moves in a list of moves on one line, as the protocol splits them."""
    return _MOVE.findall(text)
