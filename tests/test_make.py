"""The Makefile: what `make demo` and `make test` say while they set up their environment."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.facilities import missing
from tests.support.paths import ROOT


def test_setting_up_the_environment_says_each_step_and_shows_pip_s_progress(
    tmp_path: Path,
) -> None:
    make = shutil.which("make")
    if make is None:
        missing("make is not installed on this machine")
    venv = tmp_path / "venv"
    # -n: what it would run and say, for a virtual environment not made yet.
    planned = subprocess.run(
        [make, "-n", f"VENV={venv}", f"{venv}/bin/referee"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    said = [line for line in planned if line.startswith("echo ")]
    assert said[0].startswith(f'echo "setting up {venv} (a minute or two on first run)')
    (install,) = [line for line in planned if line.endswith("pip install -e '.[test]'")]
    assert "--quiet" not in install and " -q" not in install
