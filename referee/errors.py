"""The referee's error types: one small hierarchy, each a precise kind of failure."""


class RefereeError(Exception):
    """Base of every error the referee reports to its user."""


class UnknownGameError(RefereeError, KeyError):
    """A game id that is not in the registry."""

    def __init__(self, game_id: str, known: tuple[str, ...]) -> None:
        super().__init__(game_id)
        self.game_id = game_id
        self.known = known

    def __str__(self) -> str:
        return f"unknown game {self.game_id!r} (known: {', '.join(self.known)})"


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
