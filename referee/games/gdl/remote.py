"""The per-state reasoner in a child process, with limits the referee sets, not the rules.

A rulesheet is input from strangers. One whose first state is small can still have a later
state that grounds to gigabytes (a domain that grows each step, a rule over its product),
and clingo grounds in the process that asks. So the per-state reasoner runs in a child
(`remote_child.py`) under an address-space cap, and each question is given a deadline; the
child is killed when it passes it. A state that cannot be computed within the limits, or
that clingo fails on, is a fault of the rules (`StateLimitFault`, a `GameFault`), never a
traceback in the caller and never the caller's memory.

The child numbers facts and moves as it meets them; each answer carries the ones met since
the last, so this side keeps the same tables and answers the questions about text itself.
A child that was killed is started again with those tables, so the states this side holds
keep their meaning.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator, Sequence
from enum import Enum
from typing import Any

from referee.errors import GameFault, StateLimit, StateLimitFault
from referee.games.gdl.limits import StateLimits
from referee.games.gdl.reasoner import QuestionControls, State, StateView, true_bits

# What the child exits with when it runs out of memory outside a question.
OUT_OF_MEMORY = 3
# Views kept on this side: the current state's, a search player's recent ones.
_KEPT = 64
# What this side keeps of the states' text: one answer's new facts and moves, and all of
# them met so far. The child's are within its memory cap; these bound the referee's own.
ANSWER_LIMIT = 64 << 20
MET_LIMIT = 256 << 20


class _Silence(Enum):
    """Why the child's next line did not come."""

    GONE = "gone"  # its output closed, or its input did: it died
    GIVEN_UP = "given up"  # the question's asker gave it up (`asked`, `interrupt`)
    LATE = "late"  # the deadline passed, and it was left to be killed
    TOO_LONG = "too long"  # the line passed ANSWER_LIMIT before its end


class OutOfTime(GameFault):
    """A question given up at the asker's own deadline, before the state's limit: nothing is
    known of the state."""


class RemotePerState(QuestionControls):
    """The `Reasoner` of a game played one state at a time, its clingo in a limited child."""

    complete = False
    bad_goals: tuple[tuple[str, str], ...] = ()

    def __init__(self, text: str, where: str, limits: StateLimits) -> None:
        self._text = text
        self._where = where
        self.limits = limits
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._buffer = bytearray()
        # The give-up of the query each thread is computing (`asked`), and the pipe that
        # wakes a question waiting for the child when one is given up (`interrupt`).
        self._asking = threading.local()
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        weakref.finalize(self, _close_all, self._wake_read, self._wake_write)
        # The text of the facts and moves met, and the fault once it passed MET_LIMIT.
        self._met = 0
        self._over: StateLimitFault | None = None
        # When set (time.monotonic()), a question still unanswered then is given up, as a
        # search player gives up what its clock cannot wait for: OutOfTime, not a fault.
        self._give_up_at: float | None = None
        self._facts: list[str] = []
        self._fact_symbols: list[str] = []
        self._moves: list[list[str]] = []
        self._move_symbols: list[list[str]] = []
        self._move_by_text: list[dict[str, int]] = []
        self._views: OrderedDict[State, StateView] = OrderedDict()
        self._last_step: tuple[Hashable, dict[str, Any]] | None = None
        # Questions the rules failed: asked again, they fail again at once, not after the
        # limit again.
        self._failed: OrderedDict[Hashable, GameFault] = OrderedDict()
        with self._lock:
            started = self._start()
        self.roles: tuple[str, ...] = tuple(started["roles"])
        self.initial: State = int(started["initial"], 16)
        self.imperfect = bool(started["imperfect"])

    def legal(self, state: State, /) -> tuple[tuple[int, ...], ...]:
        return self._view(state).legal

    def terminal(self, state: State, /) -> bool:
        return self._view(state).terminal

    def goals(self, state: State, /) -> tuple[tuple[int, ...], ...]:
        return self._view(state).goals

    def next(self, state: State, moves: Sequence[int], /) -> State:
        return int(self._step(state, moves)["state"], 16)

    def sees(self, state: State, moves: Sequence[int], /) -> tuple[tuple[str, ...], ...]:
        seen = self._step(state, moves).get("sees") or [[] for _ in self.roles]
        return tuple(tuple(row) for row in seen)

    def _step(self, state: State, moves: Sequence[int]) -> dict[str, Any]:
        """The child's answer of a joint move: the next state, and each role's percepts;
        the last one kept, which a step asks for twice."""
        key = (state, tuple(moves))
        with self._lock:
            if self._last_step is not None and self._last_step[0] == key:
                return self._last_step[1]
            question = {"op": "next", "state": format(state, "x"), "moves": list(moves)}
            answer = self._ask_held(key, question)
            self._last_step = (key, answer)
        return answer

    def move(self, role: int, index: int) -> str:
        return self._moves[role][index]

    def move_index(self, role: int, text: str) -> int | None:
        return self._move_by_text[role].get(text)

    def known_moves(self) -> Iterable[str]:
        return {move for row in self._moves for move in row}

    def known_facts(self) -> Sequence[str]:
        return self._facts

    def fact_texts(self, state: State) -> list[str]:
        return sorted(self._facts[i] for i in true_bits(state))

    def give_up_at(self, moment: float | None) -> None:
        self._give_up_at = moment

    def close(self) -> None:
        """End the child; the next question starts another."""
        with self._lock:
            self._stop()

    @contextlib.contextmanager
    def asked(self, given_up: threading.Event) -> Iterator[None]:
        """The questions this thread asks meanwhile belong to one query, given up once
        `given_up` is set: each of them, asked or waiting for the child then, raises
        OutOfTime, which blames no state."""
        self._asking.given_up = given_up
        try:
            yield
        finally:
            self._asking.given_up = None

    def interrupt(self) -> None:
        """Wake the question waiting for the child, from any thread, so that it ends if its
        query has been given up (`asked`); the others wait on."""
        with contextlib.suppress(BlockingIOError):  # a wake is pending already
            os.write(self._wake_write, b"!")

    def _given_up(self) -> bool:
        given_up: threading.Event | None = getattr(self._asking, "given_up", None)
        return given_up is not None and given_up.is_set()

    def _view(self, state: State) -> StateView:
        with self._lock:
            view = self._views.get(state)
            if view is not None:
                self._views.move_to_end(state)
                return view
            answer = self._ask_held(state, {"op": "view", "state": format(state, "x")})
            view = StateView(
                tuple(tuple(row) for row in answer["legal"]),
                bool(answer["terminal"]),
                tuple(tuple(row) for row in answer["goals"]),
            )
            self._views[state] = view
            if len(self._views) > _KEPT:
                self._views.popitem(last=False)
            return view

    def _ask_held(self, key: Hashable, request: dict[str, Any]) -> dict[str, Any]:
        """A question to the child, the lock held: one question at a time."""
        failed = self._over or self._failed.get(key)
        if failed is not None:
            raise failed
        if self._given_up() or (
            self._give_up_at is not None and time.monotonic() >= self._give_up_at
        ):
            raise OutOfTime(f"{self._where}: out of the asker's time")
        try:
            if self._child is None:
                self._start()
            return self._exchange(request)
        except OutOfTime:
            raise
        except GameFault as fault:
            self._failed[key] = fault
            if len(self._failed) > _KEPT:
                self._failed.popitem(last=False)
            raise

    def _start(self) -> dict[str, Any]:
        """Start the child and give it the rules and every fact and move met so far."""
        command = [sys.executable, "-m", "referee.games.gdl.remote_child"]
        self._child = subprocess.Popen(
            [*command, str(self.limits.memory_mb << 20), str(self.limits.seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            # Its own session: a Ctrl-C meant for the referee is not a fault of the rules.
            start_new_session=True,
        )
        self._buffer.clear()
        self._finalizer = weakref.finalize(self, _kill, self._child)
        return self._exchange(
            {
                "op": "start",
                "rules": self._text,
                "where": self._where,
                "facts": self._fact_symbols,
                "moves": self._move_symbols,
            }
        )

    def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        child = self._child
        assert child is not None and child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")
            child.stdin.flush()
            limit_at = time.monotonic() + self.limits.seconds
            asker_at = self._give_up_at if self._give_up_at is not None else limit_at
            line = self._read_line(child, min(limit_at, asker_at))
        except BrokenPipeError:
            line = _Silence.GONE
        if isinstance(line, _Silence):
            if line is _Silence.GIVEN_UP or (line is _Silence.LATE and asker_at < limit_at):
                self._stop()
                raise OutOfTime(f"{self._where}: out of the asker's time")
            raise self._lost(line)
        answer: dict[str, Any] = json.loads(line)
        self._learn(answer)
        if "fault" in answer:
            raise GameFault(answer["fault"])
        if "error" in answer:
            self._stop()
            raise self._failure(answer["error"])
        return answer

    def _read_line(self, child: subprocess.Popen[bytes], deadline: float) -> bytes | _Silence:
        """The child's next line, or why it did not come (then the child is to be killed:
        a state it cannot compute in time is one it will not compute)."""
        assert child.stdout is not None
        fd = child.stdout.fileno()
        while (end := self._buffer.find(b"\n")) < 0:
            left = deadline - time.monotonic()
            ready = select.select([fd, self._wake_read], [], [], left)[0] if left > 0 else []
            if self._wake_read in ready:
                # A wake for a query given up before this one began is drained here too.
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_read, 64)
                if self._given_up():
                    return _Silence.GIVEN_UP
                continue
            if not ready:
                return _Silence.LATE
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return _Silence.GONE
            self._buffer += chunk
            if len(self._buffer) > ANSWER_LIMIT:  # one answer at a time: all of it is this one
                return _Silence.TOO_LONG
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    def _learn(self, answer: dict[str, Any]) -> None:
        """Take the facts and moves the child met while answering; past MET_LIMIT of them,
        every question is a fault of the rules from then on."""
        for text, symbol in answer.get("facts", ()):
            self._met += len(text) + len(symbol)
            self._facts.append(text)
            self._fact_symbols.append(symbol)
        for role, row in enumerate(answer.get("moves", ())):
            while len(self._moves) <= role:
                self._moves.append([])
                self._move_symbols.append([])
                self._move_by_text.append({})
            for text, symbol in row:
                self._met += len(text) + len(symbol)
                self._move_by_text[role][text] = len(self._moves[role])
                self._moves[role].append(text)
                self._move_symbols[role].append(symbol)
        if self._met > MET_LIMIT:
            self._over = StateLimitFault(
                f"{self._where}: the facts and moves of the states met take over"
                f" {MET_LIMIT >> 20} MiB (the referee's limit)",
                StateLimit.MEMORY,
            )
            raise self._over

    def _lost(self, silence: _Silence) -> StateLimitFault:
        """Why the child gave no answer: out of time, or out of memory, or killed."""
        status = self._stop()
        if silence is _Silence.TOO_LONG:
            return StateLimitFault(
                f"{self._where}: a state's new facts and moves take over"
                f" {ANSWER_LIMIT >> 20} MiB (the referee's limit)",
                StateLimit.MEMORY,
            )
        if silence is _Silence.LATE:
            return StateLimitFault(
                f"{self._where}: a state does not ground within {self.limits.seconds:g} s"
                " (state_seconds)",
                StateLimit.TIME,
            )
        if status in (-signal.SIGKILL, OUT_OF_MEMORY):
            return self._failure("memory")
        return StateLimitFault(f"{self._where}: the reasoner of the rules died (status {status})")

    def _failure(self, error: str) -> StateLimitFault:
        if error == "memory":
            return StateLimitFault(
                f"{self._where}: a state needs more than {_size(self.limits.memory_mb)} to ground"
                " (state_memory_mb)",
                StateLimit.MEMORY,
            )
        return StateLimitFault(f"{self._where}: clingo fails on a state: {error}")

    def _stop(self) -> int | None:
        """Kill the child and reap it; its exit status."""
        child, self._child = self._child, None
        if child is None:
            return None
        _kill(child)
        if self._finalizer is not None:
            self._finalizer.detach()
        return child.returncode


def _kill(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is None:
        child.kill()
    child.wait()
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):  # a question left in the buffer of a dead child
                pipe.close()


def _close_all(*descriptors: int) -> None:
    for descriptor in descriptors:
        os.close(descriptor)


def _size(mb: int) -> str:
    return f"{mb >> 10} GiB" if mb % 1024 == 0 else f"{mb} MiB"
