"""Matches watched as they are played: the frames of a match that is not done, replayed with
the game's rules from the moves its live file has so far (`tournaments/live.py`), as the
report's viewer draws them.

A crowd of watchers costs what one does: each match followed is replayed step by step as
its file grows, each new step once, and what is asked is served from there. One replay
runs at a time (the rules' objects are the arena's, shared), and a few matches are kept.
The live file is the playing process's, read as untrusted text: a move the rules do not
take there, like a broken line, ends what is followed (the transcript shows the match once
it ends).

A game of imperfect information keeps its secrets until the match ends: a viewer is shown
only what the seats it may read (`Facts.readable`: its own bots', or all, to the organiser)
were told, step by step, never the board or another seat's move; anyone else sees that the
match is being played, and nothing of its moves.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from html import escape
from typing import Any

from referee.arena.replays.facts import Facts, Kept
from referee.arena.store.db import Author, MatchState
from referee.arena.store.home import Arena
from referee.errors import GameFault, MoveError
from referee.games import Game, Move
from referee.players.chance import is_chance
from referee.records.replayed import Frame
from referee.records.seats import told
from referee.report.site import PlayerLink, frame_data, player_html, steps_viewer
from referee.tournaments.live import LiveReader, LiveStep, live_path

# Matches followed at once: those asked about most recently.
FOLLOWED = 16
# The steps of a match followed, each frame kept (a board's worth of JSON): a longer match is
# followed no further.
MAX_STEPS = 1000
# The most frames one answer carries; the rest come with the next.
MAX_FRAMES = 100

Json = dict[str, Any]


@dataclass(frozen=True)
class LivePage:
    """A match page's viewer of a match not done: the frames so far, as HTML, and what the
    page's script needs to follow it (`data`)."""

    html: str
    data: dict[str, str]
    problem: str | None


class _Followed:
    """One match followed: its live file read so far, the state it has come to, and the
    frames as the viewer's script takes them."""

    def __init__(self, arena: Arena, match: Facts, game: Game) -> None:
        self.game = game
        self.players = match.players
        self.reader = LiveReader(live_path(arena.results, match.key), game.roles)
        self.problem: str | None = None
        self.state: Hashable = None
        self.frames: list[Json] = []
        # Of a game of imperfect information, what each seat was told of each step: its own
        # move and its percepts (`records.seats.told`, as the report's viewer takes them).
        self.told: list[dict[str, Json]] = []
        self._start()

    def _start(self) -> None:
        self.problem = None
        self.frames = []
        self.told = []
        try:
            self.state = self.game.initial_state()
        except GameFault as fault:
            self.problem = f"the rules fail at the start: {fault}"
            return
        self.frames.append(frame_data(self.game, Frame(0, self.state), self.players))

    def update(self) -> None:
        """Take in the steps written since the last update."""
        restarted, steps = self.reader.read()
        if restarted:
            self._start()
        for step in steps:
            if self.problem is not None:
                return
            self._take(step)

    def _take(self, step: LiveStep) -> None:
        roles = self.game.roles
        if step.step > MAX_STEPS:
            self.problem = f"it is longer than {MAX_STEPS} steps"
            return
        try:
            for index, move in enumerate(step.moves):
                if move not in self.game.legal_moves(self.state, index):
                    self.problem = f"step {step.step}: {roles[index]}'s move is not legal there"
                    return
            joint = [Move(move) for move in step.moves]
            percepts = self.game.percepts(self.state, joint) if self.game.imperfect else ()
            self.state = self.game.next_state(self.state, joint)
        except (GameFault, MoveError) as fault:
            self.problem = f"step {step.step}: the rules fail: {fault}"
            return
        moves = dict(zip(roles, step.moves, strict=True))
        if self.game.imperfect:
            self.told.append(told(moves, dict(zip(roles, percepts, strict=True)), roles))
        self.frames.append(frame_data(self.game, Frame(step.step, self.state, moves), self.players))

    def shown(self, seats: frozenset[str]) -> list[Json]:
        """The frames a viewer may see who may read `seats`: all of a game of perfect
        information; of one of imperfect information, what those seats were told, each
        step a frame with no board, and none at all to a viewer of no seat."""
        if not self.game.imperfect:
            return self.frames
        if not seats:
            return []
        return [_told(0, {})] + [
            _told(frame["step"], {role: seen for role, seen in step.items() if role in seats})
            for frame, step in zip(self.frames[1:], self.told, strict=True)
        ]

    @property
    def why_not(self) -> str | None:
        """Why the match is followed no further, if it is not."""
        problem = self.problem or self.reader.problem
        return None if problem is None else f"its moves cannot be followed here: {problem}"

    def why_not_to(self, viewer: Author) -> str | None:
        """Why the match is followed no further, as `viewer` may read it: of a game of
        imperfect information, why only to the organiser (a fault of the rules may name a
        fact of the hidden state)."""
        problem = self.why_not
        if problem is None or not self.game.imperfect or viewer.organiser:
            return problem
        return "its moves cannot be followed here (the organiser can see why)"


def _told(step: int, told: dict[str, Json]) -> Json:
    """A frame of a seat's view as the report's viewer takes it: the seats' own moves and
    what they were told, no board, no times, and whether it is over left unsaid."""
    return {
        "step": step,
        "played": True,
        "moves": {role: seen["move"] for role, seen in told.items()},
        "times_ms": {},
        "faults": [],
        "terminal": None,
        "board": "",
        "boards": [],
        "facts": [],
        "legend": [],
        "told": told,
    }


class Watching:
    """The matches of an arena that are being watched, found through `facts` (by default,
    its own)."""

    def __init__(self, arena: Arena, facts: Kept | None = None) -> None:
        self._arena = arena
        self._facts = facts or Kept(arena)
        self._followed: OrderedDict[str, _Followed] = OrderedDict()
        # One replay at a time, and the cache with it.
        self._lock = threading.Lock()

    def live(self, key: str, after: int, viewer: Author) -> Json:
        """Where match `key` is (NotFound if there is none): its state, the run of it being
        played, and the frames of the steps after `after` that `viewer` may see, MAX_FRAMES
        at most."""
        match = self._facts.of(key)
        shown: Json = {
            "key": match.key,
            "state": match.state,
            # When its play began; None while it waits its turn, claimed or queued.
            "started_at": (
                None if match.started_at is None else match.started_at.isoformat("T", "seconds")
            ),
            "run": None,
            "frames": [],
        }
        if match.state == MatchState.DONE:
            with self._lock:
                self._followed.pop(match.key, None)
            return dict(shown, last=None, problem=None)
        with self._lock:
            followed = self._follow(match)
            if followed is None:
                return dict(shown, last=None, problem=self._no_game(match))
            frames = followed.shown(match.readable(viewer))
            later = [frame for frame in frames if frame["step"] > after]
            return dict(
                shown,
                run=followed.reader.run,
                frames=later[:MAX_FRAMES],
                last=frames[-1]["step"] if frames else None,
                problem=followed.why_not_to(viewer),
            )

    def page(
        self, match: Facts, viewer: Author, player_link: PlayerLink | None = None
    ) -> LivePage | None:
        """The viewer of `match` as far as it has been played and as `viewer` may see it,
        each player linking where `player_link` says; None once it is done."""
        if match.state == MatchState.DONE:
            return None
        seats = match.readable(viewer)
        with self._lock:
            followed = self._follow(match)
            frames = list(followed.shown(seats)) if followed is not None else []
            imperfect = followed is not None and followed.game.imperfect
            run = followed.reader.run if followed is not None else None
            problem = self._no_game(match) if followed is None else followed.why_not_to(viewer)
        being = "being played" if match.being_played else "waiting to be played"
        player = functools.partial(player_html, player_link=player_link)
        playing = ", ".join(
            f"{player(name)} as {escape(role)}" for role, name in match.players.items()
        )
        note = (
            f"{escape(match.game)}: {playing}. The match is {being}: this page follows its moves."
        )
        if imperfect:
            note += (
                " A game of imperfect information: until it ends, this page shows only what"
                " your bots' seats are told."
                if seats
                else " A game of imperfect information: its moves are shown once it ends."
            )
        after = frames[-1]["step"] if frames else 0
        data = {"match": match.key, "run": run or "", "after": str(after)}
        if not frames:
            shown = f'<h1>{escape(match.key)}</h1>\n<p class="note">{note}</p>' if imperfect else ""
            return LivePage(shown, data, problem)
        roles = list(match.players)
        views = [role for role in roles if role in seats] if imperfect else []
        html = steps_viewer(
            match.key,
            note,
            roles,
            match.players,
            frames,
            player=player,
            seats=views,
            truth=not imperfect,
        )
        return LivePage(html, data, problem)

    def _follow(self, match: Facts) -> _Followed | None:
        """The match followed, brought up to date; None when the arena has no game of its
        name (its config changed). Called with the lock held."""
        followed = self._followed.get(match.key)
        if followed is None:
            settings = self._arena.config.tournament.settings(match.game)
            roles = (
                [role for role in settings.game.roles if not is_chance(role)] if settings else []
            )
            if settings is None or roles != list(match.players):
                return None
            followed = self._followed[match.key] = _Followed(self._arena, match, settings.game)
            while len(self._followed) > FOLLOWED:
                self._followed.popitem(last=False)
        self._followed.move_to_end(match.key)
        followed.update()
        return followed

    @staticmethod
    def _no_game(match: Facts) -> str:
        return f"this arena no longer plays {match.game} with these roles: it cannot be followed"
