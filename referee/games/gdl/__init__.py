"""Games from GDL rulesheets: read, checked, grounded by clingo, compiled to Python."""

from referee.games.gdl.game import GdlGame, load_rulesheet, load_text, rulesheet_sha256

__all__ = ["GdlGame", "load_rulesheet", "load_text", "rulesheet_sha256"]
