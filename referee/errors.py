"""The referee's error types: one small hierarchy, each a precise kind of failure."""

from enum import StrEnum


class RefereeError(Exception):
    """Base of every error the referee reports to its user."""


class UnknownGameError(RefereeError, KeyError):
    """A game id that is not in the registry."""

    def __init__(self, game_id: str, known: tuple[str, ...], nearest: str | None = None) -> None:
        super().__init__(game_id)
        self.game_id = game_id
        self.known = known
        self.nearest = nearest

    def __str__(self) -> str:
        guess = f"did you mean {self.nearest}? " if self.nearest else ""
        return (
            f"unknown game {self.game_id!r} ({guess}known: {', '.join(self.known)}; "
            "or the path of a .kif rulesheet)"
        )


class UnknownRoleError(RefereeError, ValueError):
    """A role name that the game does not have."""


class MoveError(RefereeError, ValueError):
    """A move that cannot be played."""


class MoveParseError(MoveError):
    """Text that is not a move of the game in any state."""


class IllegalMoveError(MoveError):
    """A well-formed move that is not legal for its role in the current state."""


class ConformanceFileError(RefereeError):
    """A reference-game file that cannot be read: bad JSON, a missing field, an unknown game."""


class TranscriptError(RefereeError):
    """A transcript file that cannot be read: not JSON, not a transcript, a field wrong."""


class SchemaVersionError(TranscriptError):
    """A transcript of a schema version this referee does not read."""


class FaultKind(StrEnum):
    """The ways a player can fail a request, as recorded in transcripts."""

    TIMEOUT = "timeout"
    ILLEGAL = "illegal"
    PROTOCOL = "protocol"
    CRASH = "crash"
    RESOURCE = "resource"
    # Only a person at the prompt can resign (by typing quit): the protocol gives programs no
    # word for it, so on a program's seat it is a record that was tampered with.
    RESIGNED = "resigned"


class PlayerStartError(RefereeError):
    """A player program that cannot be started at all: no such file, not executable."""


class PlayerFault(RefereeError):
    """A player failed a request; `kind` says how, the message says what it did."""

    kind: FaultKind

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class PlayerTimeout(PlayerFault):
    """No answer before the deadline, or one that came after it."""

    kind = FaultKind.TIMEOUT


class IllegalMoveFault(PlayerFault):
    """An answer that is a move of the game but not one of the legal moves sent."""

    kind = FaultKind.ILLEGAL


class ProtocolViolation(PlayerFault):
    """An answer that is not what the protocol asks for: garbage, or a line over 64 KiB."""

    kind = FaultKind.PROTOCOL


class PlayerCrashed(PlayerFault):
    """The player exited, closed its output, or stopped reading its input."""

    kind = FaultKind.CRASH


class PlayerResigned(PlayerFault):
    """A person gave the match up at the prompt: a choice, not a failure of the seat."""

    kind = FaultKind.RESIGNED


class ResourceExceeded(PlayerCrashed):
    """The player's processes went over one of its limits and were killed: a crash, named."""

    kind = FaultKind.RESOURCE


class ConfigError(RefereeError):
    """A bad setting: a clock, a policy, a player option."""


class LimitTooLowError(RefereeError):
    """A hard limit the referee was started under leaves a player, or the referee itself, too
    little to run; the message names the limit and how to raise it."""


class RulesheetError(RefereeError):
    """A GDL rulesheet that cannot be used: bad syntax, a rule outside GDL, too big to ground."""

    def __init__(self, where: str, line: int | None, problem: str) -> None:
        super().__init__(f"{where}:{line}: {problem}" if line else f"{where}: {problem}")
        self.where = where
        self.line = line
        self.problem = problem


class GameFault(RefereeError):
    """A state where the rules themselves fail: no legal move, no goal or several."""


class StateLimit(StrEnum):
    """The limits a state of the rules is computed within."""

    MEMORY = "memory"
    TIME = "time"


class StateLimitFault(GameFault):
    """A state of the rules that cannot be computed within the limits the referee sets (its
    memory, its deadline: `limit`), or that the grounder fails on (`limit` None)."""

    def __init__(self, detail: str, limit: StateLimit | None = None) -> None:
        super().__init__(detail)
        self.limit = limit


class ClusterError(RefereeError):
    """The cluster a tournament runs on failed it: unreachable, without workers, or a worker
    that cannot play a match. Never a fault of the players."""


class PlayerRefused(ClusterError):
    """A worker will not play a player: its files there are not the coordinator's. Not the
    player's fault, but its matches cannot be played there, however often they are sent."""

    def __init__(self, message: str, player: str) -> None:
        super().__init__(message)
        self.player = player

    def __reduce__(self) -> tuple[type["PlayerRefused"], tuple[str, str]]:
        # Sent back by the worker: rebuilt with its player.
        return (PlayerRefused, (str(self), self.player))


class ArenaError(RefereeError):
    """An arena that cannot be made, opened or reached: its directory, database, config or
    server."""


class SubmissionError(ArenaError):
    """A submission refused before it is built: the archive, a member of it, or its bot.yaml;
    the message names which and why, in one line."""
