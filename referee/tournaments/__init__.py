"""Tournaments: config, schedule, the player pool and runner, standings."""
