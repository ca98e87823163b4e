"""Validating a submitted player program: matches against random in every role, then checks.

`run` plays the matches and gathers the evidence (`evidence`); `checks` judges it, check by
check, naming the first offence and the pattern of the rest; `mistakes` is the table of the
known causes, which a failing check names with the advice that fixes it.
"""

from referee.validate.checks import Check, Report, Verdict
from referee.validate.run import time_bound_s, validate

__all__ = ["Check", "Report", "Verdict", "time_bound_s", "validate"]
