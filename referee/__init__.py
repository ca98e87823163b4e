"""referee: a command-line referee and match runner for game-playing bots."""

__version__ = "0.1.0"
