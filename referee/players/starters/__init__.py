"""The starter bots: the same random player in eight languages, package data, so that a
bot's author finds them wherever the package is installed."""

from __future__ import annotations

from pathlib import Path

# The starters' sources, installed with the package.
STARTERS = Path(__file__).resolve().parent
