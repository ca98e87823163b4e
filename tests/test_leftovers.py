"""The suite's own check that it leaves nothing running (tests/support/leftovers.py), run on
sessions of their own: one that orphans a process fails, names it and ends it; one whose
processes all end, multiprocessing's helpers included, passes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.slow

# A session run with xdist's workers, as `make test` runs, and one run in one process.
MODES = {"xdist": ("-n", "2"), "one process": ("-p", "no:xdist")}
# Seconds a session's processes have to exit: they end at once, or never.
GRACE_S = "1"
# Far beyond what a session of two tests takes on a loaded machine.
SESSION_S = 300

ORPHANING = """\
import subprocess
import sys


def test_starts_a_process_that_outlives_its_parent():
    # The child exits at once; the grandchild it started sleeps on, an orphan.
    grandchild = ["import time; time.sleep(600)", {token!r}]
    start = (
        "import subprocess, sys; "
        f"grandchild = subprocess.Popen([sys.executable, '-c', *{{grandchild!r}}]); "
        f"open({pidfile!r}, 'w').write(str(grandchild.pid))"
    )
    subprocess.run([sys.executable, "-c", start], check=True)


def test_ends_its_own():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""

TIDY = """\
import multiprocessing
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor


def test_waits_for_its_child():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_shuts_its_pool():
    # A fork server and a resource tracker: the test's process's, ending with it.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        assert pool.submit(abs, -1).result() == 1
"""


def session(directory: Path, mode: str) -> subprocess.CompletedProcess[str]:
    """pytest on the tests in `directory`, with the suite's check of leftovers alone."""
    (directory / "pytest.ini").write_text("[pytest]\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *MODES[mode]]
    command += ["-p", "tests.support.leftovers", "--leftovers-grace", GRACE_S, str(directory)]
    return subprocess.run(
        command, cwd=directory, env=env, capture_output=True, text=True, timeout=SESSION_S
    )


def running(pid: int, token: str) -> bool:
    """Whether process `pid` is the one with `token` in its command line, and not ended."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return token.encode() in command and state != b"Z"


@pytest.mark.parametrize("mode", MODES)
def test_a_session_that_leaves_a_process_running_fails_names_it_and_ends_it(
    tmp_path: Path, mode: str
) -> None:
    tests, pidfile = tmp_path / "tests", tmp_path / "orphan.pid"
    tests.mkdir()
    token = f"orphan-of-{tmp_path.name}"
    text = ORPHANING.format(token=token, pidfile=str(pidfile))
    (tests / "test_orphaning.py").write_text(text)
    orphan = None
    try:
        done = session(tests, mode)
        orphan = int(pidfile.read_text())
        said = done.stdout + done.stderr
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, said
        assert "= 1 process outlived the session =" in said
        assert f"\n{orphan} {sys.executable} -c import time; time.sleep(600) {token}\n" in said
        assert "2 passed, 1 left running in " in said
        assert not running(orphan, token)
    finally:
        if orphan is not None and running(orphan, token):
            os.kill(orphan, signal.SIGKILL)


@pytest.mark.parametrize("mode", MODES)
def test_a_session_whose_processes_end_passes(tmp_path: Path, mode: str) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_tidy.py").write_text(TIDY)
    done = session(tests, mode)
    said = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.OK, said
    assert "outlived" not in said
