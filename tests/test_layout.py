"""The house's shape, which a change can quietly undo: no module of the package over 650
lines (past that a module holds more than one job), and no test module importing another
(what tests share is tests/support's, so a test file can move or go without breaking
others)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

LONGEST = 650


def test_no_module_of_the_package_is_over_650_lines() -> None:
    modules = sorted((ROOT / "referee").rglob("*.py"))
    assert len(modules) > 100
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LONGEST
    }
    assert long == {}


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_test_module_imports_another() -> None:
    tests = sorted((ROOT / "tests").rglob("test_*.py"))
    names = {".".join(path.relative_to(ROOT).with_suffix("").parts) for path in tests}
    assert "tests.arena.ladder.test_pairing" in names
    importing = {
        str(path.relative_to(ROOT)): sorted(_imported(path) & names)
        for path in tests
        if _imported(path) & names
    }
    assert importing == {}
