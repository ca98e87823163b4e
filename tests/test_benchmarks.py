"""The benchmark scripts run and print their figures (speed itself is not tested here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_engine_benchmark_reports_every_game() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "engines.py"), "--seconds", "0.05", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    rows = {row["game"]: row for row in report["results"]}
    assert set(rows) == {"blocker-parallel", "ticblock", "hex-pie", "double-tictactoe", "quad"}
    for row in rows.values():
        assert row["playouts"] >= 1
        assert row["steps_per_s"] >= row["playouts_per_s"] > 0
        assert isinstance(row["meets_floor"], bool)
