"""The jail a player program runs in, built by bubblewrap.

Namespaces of its own (PID, network, IPC, UTS, mount; and user when the referee is not
root), the system read-only, its program's files read-only, one private writable directory
and nothing else of the machine. Under a root referee each player process also gets a user
of its own: bubblewrap runs as root to build the jail, and `setpriv` then drops to the seat's
uid, with no groups and no capabilities, before the program starts. (bubblewrap's own
`--uid` would not do: run by root, it maps that uid to root outside the jail.)

The private directory is a file system in memory of its own, of a size: a program that
fills it gets ENOSPC, and what it wrote is gone with the jail's last process. Its pages
count against the memory cgroup of the process that wrote them.
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.sandbox.leftovers import kind_prefix
from referee.sandbox.limits import MIB, Limits

# What a program may need of the system: programs, libraries, configuration.
SYSTEM_DIRECTORIES = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
)
# uids no account has, one per player process of a root referee.
SEAT_UIDS = range(2_000_000_000, 2_100_000_000)
# The jail's own processes, counted among a player's: bubblewrap, and its init in the jail.
JAIL_PROCESSES = 2
# bubblewrap keeps the standard streams it was started with, in its processes outside and in
# the jail: a program that closed its output would not be seen to. So the player's input and
# output pass through it as descriptors 7 and 8, which it hands on and closes in its own, and
# are put back in place by a shell in the jail.
_STREAMS_ASIDE = 'exec 7<&0 8>&1 </dev/null >/dev/null; exec "$0" "$@"'
# Before that, the shell moves itself into the player's cgroups, so that everything the jail
# starts is in them. There and not between fork and exec: a move into a cgroup v1 waits for
# the kernel to synchronise (about 10 ms here), and the referee's event loop waits for that
# exec, while the shell's wait is the new player's alone.
_JOIN = 'echo $$ >{procs} || {{ echo "referee: cannot join {procs}" >&2; exit 125; }}; '
_STREAMS_BACK = 'unset PWD; exec <&7 >&8 7<&- 8>&-; exec "$0" "$@"'
_SHELL = "/bin/sh"
# How the private directory is mounted, among the binds and the hidden directories' tmpfs.
_PRIVATE = "private"
_NAMESPACES = (
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--hostname",
    "player",
)


@dataclass(frozen=True)
class Place:
    """What of the file system a player sees besides the system: read-only `files`, the
    writable `private` directory (its HOME and TMPDIR), where it starts (`cwd`), the
    referee's own directories, which are hidden even inside a directory it may read, and the
    size of its shared memory (/dev/shm). `writable` directories are bound writable where
    they are (a bot's directory while it is built). The private directory is an empty file
    system of `private_bytes` at the path of the directory outside, which stays empty."""

    private: Path
    cwd: Path
    files: tuple[Path, ...]
    hidden: tuple[Path, ...] = ()
    shared_memory_bytes: int = 64 * 1024 * 1024
    # The cgroups the jail is started in.
    cgroups: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    private_bytes: int = Limits.disk_mb * MIB


@dataclass(frozen=True)
class Jail:
    """The programs that build the jail: bubblewrap, and setpriv when the referee is root."""

    bubblewrap: str
    setpriv: str | None = None

    def command(self, argv: Sequence[str], place: Place, uid: int | None) -> tuple[str, ...]:
        """The argv that runs `argv` in the jail; as the seat user `uid` under a root referee."""
        options = [*_NAMESPACES, "--die-with-parent", *_system_mounts()]
        options += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        # Shared memory, for semaphores and queues between its processes: as much as its
        # memory limit, memory the sampling does not see in its processes.
        size = str(place.shared_memory_bytes)
        options += ["--perms", "01777", "--size", size, "--tmpfs", "/dev/shm"]
        readable = [
            path
            for path in _outermost(place.files)
            if not any(path.is_relative_to(w) for w in place.writable)
        ]
        hidden = [
            path
            for path in place.hidden
            if path.is_dir() and any(path.is_relative_to(r) and path != r for r in readable)
        ]
        # Parents first: an empty file system over a hidden directory hides what it holds,
        # but for the program's own files, bound again over it.
        mounts = sorted(
            [(path, "--tmpfs") for path in hidden]
            + [(path, "--ro-bind") for path in readable]
            + [(path, "--bind") for path in place.writable]
            + [(place.private, _PRIVATE)],
            key=lambda mount: (len(mount[0].parts), mount[1] != "--tmpfs"),
        )
        made = {Path("/"), Path("/tmp")}
        for path, how in mounts:
            # bubblewrap would make the missing parents, but for root alone (0700).
            for parent in reversed(path.parents):
                if parent not in made:
                    options += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
            made.add(path)
            if how == _PRIVATE:
                # Its seat user's to write in, though root's under a root referee: it is the
                # only user in the jail.
                size = str(place.private_bytes)
                options += ["--perms", "01777", "--size", size, "--tmpfs", str(path)]
            elif how == "--tmpfs":
                options += [how, str(path)]
            else:
                options += [how, str(path), str(path)]
        options += ["--chdir", str(place.cwd)]
        # The file systems bubblewrap made are writable by the user who owns the jail, which
        # in a user namespace is the player: read-only once built.
        for made_by_it in ("/", "/tmp", "/dev", *map(str, hidden)):
            options += ["--remount-ro", made_by_it]
        if self.setpriv is None:
            # Its own user namespace: no capabilities outside it, and no nested one to get some.
            options += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
            return self._wrapped(options, argv, place.cgroups)
        assert uid is not None
        drop = (
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
        )
        return self._wrapped(options, (self.setpriv, *drop, "--", *argv), place.cgroups)

    def _wrapped(
        self, options: Sequence[str], argv: Sequence[str], cgroups: Sequence[Path]
    ) -> tuple[str, ...]:
        joins = "".join(_JOIN.format(procs=shlex.quote(str(g / "cgroup.procs"))) for g in cgroups)
        return (
            *(_SHELL, "-c", joins + _STREAMS_ASIDE, self.bubblewrap, *options),
            *("--", _SHELL, "-c", _STREAMS_BACK, *argv),
        )

    @staticmethod
    def return_code(code: int) -> int:
        """The program's own return code: bubblewrap reports a death by signal N as 128 + N."""
        if 128 < code <= 128 + signal.SIGRTMAX:
            return 128 - code
        return code


def _system_mounts() -> list[str]:
    options = []
    for name in SYSTEM_DIRECTORIES:
        if os.path.islink(name):
            options += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            options += ["--ro-bind", name, name]
    return options


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths not seen already through the system or another of them, parents first.

    A path that holds a system directory (`/`, say) is never bound: it would show the whole
    machine.
    """
    system = system_roots()
    kept: list[Path] = []
    for path in sorted({p for p in paths if p.exists()}, key=lambda p: len(p.parts)):
        if any(path.is_relative_to(outer) or outer.is_relative_to(path) for outer in system):
            continue
        if not any(path.is_relative_to(outer) for outer in kept):
            kept.append(path)
    return kept


def system_roots() -> list[Path]:
    """The system's directories the jail shows, as they resolve on this machine."""
    return [Path(os.path.realpath(name)) for name in SYSTEM_DIRECTORIES]


def jail_path(search_path: str) -> str:
    """The directories of `search_path` (a PATH) the jail shows: those in the system's
    directories, in the same order."""
    roots = system_roots()
    shown = [
        directory
        for directory in search_path.split(os.pathsep)
        if os.path.isabs(directory)
        and any(Path(os.path.realpath(directory)).is_relative_to(root) for root in roots)
    ]
    return os.pathsep.join(shown)


def program_files(argv: Sequence[str], program: str | None, cwd: Path | None) -> list[Path]:
    """What of a command a player must read: the directory of its program (`program`, the
    path `argv[0]` was found at) and of each file or directory its arguments name, as given
    and with links resolved, and its working directory.

    A directory called `bin` stands for the installation around it (a virtual environment,
    an interpreter's prefix): an interpreter finds its libraries there.
    """
    words = [program] if program is not None else []
    words += [word for word in argv[1:] if word.startswith("/")]
    found = [] if cwd is None else [cwd]
    for word in words:
        for path in {Path(word), Path(os.path.realpath(word))}:
            if not path.exists():
                continue
            directory = path if path.is_dir() else path.parent
            found.append(directory.parent if directory.name == "bin" else directory)
    return found


def lease_seat_uid(private: Path) -> int:
    """A uid of its own for one player process, leased by giving it `private`.

    The uid is one that owns no other player directory on the machine, so no two running
    players share one, whichever referee started them.
    """
    taken = set()
    for entry in Path(tempfile.gettempdir()).glob(f"{kind_prefix('player')}*"):
        try:
            taken.add(entry.stat().st_uid)
        except OSError:
            continue
    start = secrets.randbelow(len(SEAT_UIDS))
    # Among any len(taken) + 1 of them, one is free.
    for step in range(len(taken) + 1):
        uid = SEAT_UIDS[(start + step) % len(SEAT_UIDS)]
        if uid not in taken:
            break
    os.chown(private, uid, uid)
    return uid
