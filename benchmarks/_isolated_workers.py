"""Dask workers on this machine that share nothing with the arena but the network: each in
a network namespace of its own, joined to the scheduler's by a veth pair, and in a mount
namespace of its own in which the directories given (the arena's) are empty, with a local
directory of its own and its share of the cores. What a benchmark run on them shows is what
workers on other machines, without a shared disk, would do.

Root only, with iproute2 (`ip`) and util-linux (`unshare`, `nsenter`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from referee.sandbox.cores import CORES_VARIABLE, available_cores, format_cores, split_cores

from _arena_run import BenchError, Deadline, progress, until  # isort: skip

SCHEDULER = (sys.executable, "-m", "distributed.cli.dask_scheduler")
WORKER = (sys.executable, "-m", "distributed.cli.dask_worker")
# A range no test uses (tests/test_cluster.py takes 10.231.*).
NETWORK = "10.233"
START_S = 120.0
QUIET = {"DASK_LOGGING__DISTRIBUTED": "error"}


def missing() -> str | None:
    """Why workers cannot be isolated here, or None."""
    if os.geteuid() != 0:
        return "isolated workers need root (network and mount namespaces)"
    for program in ("ip", "unshare", "nsenter", "mount"):
        if shutil.which(program) is None:
            return f"isolated workers need {program}, which is not on the PATH"
    return None


@dataclass
class IsolatedWorkers:
    """A scheduler on this machine and `count` workers, each in its own namespaces."""

    address: str = ""
    scheduler: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    veths: list[str] = field(default_factory=list)
    scratch: Path = Path()
    # How each worker was started: its command and environment.
    _started: list[tuple[list[str], dict[str, str]]] = field(default_factory=list)

    @classmethod
    def start(cls, count: int, hidden: list[Path], deadline: Deadline) -> IsolatedWorkers:
        made = cls(scratch=Path(tempfile.mkdtemp(prefix="rush-workers-")))
        try:
            made._start(count, hidden, deadline)
        except BaseException:
            made.stop()
            raise
        return made

    def _start(self, count: int, hidden: list[Path], deadline: Deadline) -> None:
        tag = os.getpid() % 10_000
        for index in range(1, count + 1):
            namespace, veth, inner = f"rush-{tag}-{index}", f"rs{tag}h{index}", f"rs{tag}n{index}"
            _ip("netns", "add", namespace)
            self.namespaces.append(namespace)
            _ip("link", "add", veth, "type", "veth", "peer", "name", inner)
            self.veths.append(veth)
            _ip("link", "set", inner, "netns", namespace)
            _ip("addr", "add", f"{NETWORK}.{index}.1/24", "dev", veth)
            _ip("link", "set", veth, "up")
            _ip("addr", "add", f"{NETWORK}.{index}.2/24", "dev", inner, namespace=namespace)
            _ip("link", "set", inner, "up", namespace=namespace)
            _ip("link", "set", "lo", "up", namespace=namespace)
        file = self.scratch / "scheduler.json"
        self.scheduler = subprocess.Popen(
            [
                *SCHEDULER,
                *("--host", "0.0.0.0", "--port", "0", "--no-dashboard"),
                "--scheduler-file",
                str(file),
            ],
            env={**os.environ, **QUIET},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.scratch / "scheduler.err").open("wb"),
            start_new_session=True,
        )
        until("the scheduler to start", file.exists, deadline, START_S)
        port = json.loads(file.read_text())["address"].rsplit(":", 1)[1]
        self.address = f"tcp://{NETWORK}.1.1:{port}"
        # Each its share of this machine's cores, offered to the matches that pin theirs.
        shares = split_cores(available_cores(), count)
        for index, (namespace, share) in enumerate(zip(self.namespaces, shares, strict=True), 1):
            local = self.scratch / f"worker{index}"
            local.mkdir()
            # In its own mount namespace, the arena's directories are empty mounts.
            covers = " && ".join(
                f"mount -t tmpfs -o size=1m,mode=0700 none {shlex.quote(str(path))}"
                for path in hidden
            )
            command = shlex.join(
                [
                    *WORKER,
                    f"tcp://{NETWORK}.{index}.1:{port}",
                    *("--host", f"{NETWORK}.{index}.2", "--nthreads", str(len(share))),
                    *("--resources", f"cores={len(share)}"),
                    *("--no-dashboard", "--nworkers", "1", "--local-directory", str(local)),
                    *("--name", f"isolated-{index}"),
                ]
            )
            self._started.append(
                (
                    [
                        *("nsenter", f"--net=/run/netns/{namespace}"),
                        *("unshare", "--mount", "--propagation", "private"),
                        *("sh", "-c", f"{covers} && exec {command}"),
                    ],
                    {**os.environ, **QUIET, CORES_VARIABLE: format_cores(share)},
                )
            )
            self.workers.append(self._start_worker(index - 1))
        progress(f"{count} isolated workers on {self.address}")

    def _start_worker(self, index: int) -> subprocess.Popen[bytes]:
        argv, env = self._started[index]
        return subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.scratch / f"worker{index + 1}.err").open("ab"),
            start_new_session=True,
        )

    def kill(self, index: int) -> None:
        """SIGKILL worker `index` (from 0), nanny and all: as a machine lost."""
        worker = self.workers[index]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    def restart(self, index: int) -> None:
        """Start worker `index` (from 0) again, as it was started: its machine back, its
        cache (its local directory) as the kill left it."""
        self.workers[index] = self._start_worker(index)

    def stop(self) -> None:
        for process in [*self.workers, self.scheduler]:
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in [*self.workers, self.scheduler]:
            if process is None:
                continue
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for namespace in self.namespaces:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
        for veth in self.veths:
            subprocess.run(["ip", "link", "del", veth], capture_output=True, check=False)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def said(self) -> str:
        """The last line each worker wrote to its standard error."""
        lines = []
        for path in sorted(self.scratch.glob("worker*.err")):
            text = path.read_text(errors="replace").strip().splitlines()
            lines.append(f"{path.stem}: {text[-1][:200] if text else '(nothing)'}")
        return "; ".join(lines)


def _ip(*words: str, namespace: str | None = None) -> None:
    inside = ["ip", "netns", "exec", namespace] if namespace else []
    try:
        subprocess.run([*inside, "ip", *words], check=True, capture_output=True, timeout=30)
    except subprocess.CalledProcessError as error:
        said = error.stderr.decode(errors="replace").strip()
        raise BenchError(f"ip {' '.join(words)}: {said}") from None


def wait_for_workers(address: str, count: int, deadline: Deadline) -> None:
    """Until the scheduler at `address` has `count` workers."""
    from distributed import Client

    with Client(address, timeout=START_S) as client:
        began = time.monotonic()
        while len(client.scheduler_info()["workers"]) < count:
            deadline.check("waiting for the workers")
            if time.monotonic() - began > START_S:
                raise BenchError(f"the scheduler has not {count} workers after {START_S:g} s")
            time.sleep(0.5)
