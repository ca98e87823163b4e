"""Transcripts written from their data, and matches exported to ggp-base's format and
imported from it with the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from referee.cli import app

runner = CliRunner()


def write_data(
    tmp_path: Path, data: dict[str, Any], name: str = "t.json", signed: bool = False
) -> Path:
    """Write a transcript; unsigned unless asked, so that the checks of its content are seen."""
    path = tmp_path / name
    if not signed:
        data = {key: value for key, value in data.items() if key != "signature"}
    path.write_text(json.dumps(data, indent=2))
    return path


def ggp_exported(tmp_path: Path, data: dict[str, Any], name: str) -> dict[str, Any]:
    """A transcript's data, signed, exported by `referee export --format ggp`: the GGP match."""
    path = write_data(tmp_path, data, f"{name}.json", signed=True)
    out = tmp_path / f"{name}.ggp.json"
    result = runner.invoke(app, ["export", str(path), "--format", "ggp", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def ggp_imported(tmp_path: Path, match: dict[str, Any], name: str, *options: str):
    """A GGP match imported by `referee import --format ggp`: the command's result and the
    transcript it wrote (if it did)."""
    path = tmp_path / f"{name}.in.json"
    path.write_text(json.dumps(match))
    out = tmp_path / f"{name}.imported.json"
    result = runner.invoke(
        app, ["import", str(path), "--format", "ggp", "--out", str(out), *options]
    )
    return result, out
