"""Games from GDL rulesheets: read, checked, grounded by clingo, compiled to Python."""

from referee.games.gdl.game import GdlGame, load_rulesheet, load_text, rulesheet_sha256
from referee.games.gdl.remote import StateLimits

__all__ = ["GdlGame", "StateLimits", "load_rulesheet", "load_text", "rulesheet_sha256"]
