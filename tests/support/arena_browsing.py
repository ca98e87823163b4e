"""The browser fixtures of the arena's page tests (a plugin, `tests/conftest.py`): one
Chromium for a module's served `arena`, and the check after each test that nothing went
wrong in it. A module uses them with
`pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("nothing_went_wrong")]`, and
defines its own `browser` where it needs another (a time zone, two contexts).

The browser support is imported in the fixtures, not here: a machine without Chromium skips
the tests that ask for one, not every test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def browser(arena: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.arena_pages import browsing

    with browsing(arena, tmp_path_factory) as opened:
        yield opened


@pytest.fixture
def nothing_went_wrong(browser: Any) -> Iterator[None]:
    from tests.support.arena_pages import nothing_goes_wrong

    with nothing_goes_wrong(browser):
        yield
