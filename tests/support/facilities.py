"""What a test needs of this machine (a system facility, a toolchain, a data set) and does
not find: a skip saying what is missing, and under CI, which has everything, a failure."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(reason: str, under_ci: str | None = None) -> NoReturn:
    """A system facility or data set the test needs is not here: a skip saying `reason`, and
    under CI, which has everything, a failure (saying `under_ci`, if given: why CI has it)."""
    if os.environ.get("CI"):
        pytest.fail(reason if under_ci is None else under_ci, pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def needs(lacking: bool, reason: str) -> pytest.MarkDecorator:
    """A mark for a test (or a module's `pytestmark`) that needs what this machine may lack:
    where `lacking`, `missing(reason)` before the test sets up (conftest.py's
    pytest_runtest_setup), a skip, and under CI a failure."""
    return pytest.mark.needs(lacking, reason)


def check_needs(item: pytest.Item) -> None:
    """`missing` for the first of the item's `needs` marks whose facility is lacking."""
    for mark in item.iter_markers("needs"):
        lacking, reason = mark.args
        if lacking:
            missing(reason)
