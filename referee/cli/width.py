"""The width the command line fits its text to: a module of its own, so that a command that
prints only a table (`referee standings`) needs none of what shows progress and boards."""

from __future__ import annotations

import os
import shutil
import sys


def terminal_width() -> int | None:
    """The columns of the terminal, or those COLUMNS says; None for a file or a pipe, whose
    lines are read by grep, whole."""
    if "COLUMNS" in os.environ or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None
