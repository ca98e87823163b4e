"""referee: a command-line referee and match runner for game-playing bots."""
