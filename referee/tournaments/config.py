"""Tournament configs: the YAML read, checked as a whole before anything starts, and the
TournamentConfig built from it; errors as file:line.

The document is refused first if it is nested too deep or expands too far; its shape (keys,
types, ranges) is checked by the pydantic models of config_models.py; what needs the rest
of the referee (game ids, player commands) and the settings' agreement are checked after,
by config_checks.py, as the config is built. Every error is located by walking the YAML
node tree along the error's key path (`Locator`). The format is documented in
`docs/tournaments.md`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from referee.clock import Clocks
from referee.errors import ConfigError
from referee.games import Game, GdlGame, StateLimits
from referee.games.gdl.limits import DEFAULT_LIMITS
from referee.players.base import PlayerSpec
from referee.policy import Policy
from referee.records.files import field_path, read_text, yaml_problem
from referee.records.transcript import BookLine
from referee.sandbox.limits import Limits
from referee.tournaments import config_checks as checks
from referee.tournaments.books import Book
from referee.tournaments.config_models import (
    ConfigFile,
    GameEntry,
    Location,
    PlayerEntry,
    TournamentFormat,
    error_message,
)
from referee.tournaments.knockout import TieBreak
from referee.tournaments.sprt import SprtSettings
from referee.tournaments.swiss import DEFAULT_TIEBREAKS, Tiebreak

# A config is small and shallow: bounds no real one comes near, which keep a hostile one
# from taking the referee's memory or time before it is even checked.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_CONFIG_DEPTH = 32
MAX_CONFIG_NODES = 100_000
# A config's mistakes are told all at once up to this many; a hostile one may hold thousands.
MAX_MISTAKES_SAID = 10
# Where `trace: true` writes the lines exchanged with the players, in the results directory.
TRACE_FILE = "trace.log"


@dataclass(frozen=True)
class GameSettings:
    """One game of a tournament, with its own number of rounds, clocks and openings: steps
    the referee plays at random, or a book's."""

    game: Game
    rounds: int
    clocks: Clocks
    openings: int | Book = 0
    # The step after which a match not over yet is adjudicated: its goals are the rules'.
    max_steps: int | None = None

    def opening(self, number: int) -> tuple[int, BookLine | None]:
        """The opening of the `number`th round (from 0), or of a ladder's pairing by its
        seed: its steps, at random or those of its book's line (then given too)."""
        if isinstance(self.openings, Book):
            line = self.openings.line_for(number)
            return len(line.steps), line
        return self.openings, None


@dataclass(frozen=True)
class Entrant:
    """One player of a tournament; `reuse` says whether a process may play many matches.

    `capacity` is how many matches it may be in at once: None for a program, started once
    per match; for a URL player, one server that tells a second match it is `busy`,
    URL_CAPACITY unless its config says more. `own_clocks` are the clocks it sets for its
    own seats over every game's (`Clocks` field names: `play_ms`, ...): time odds.
    """

    spec: PlayerSpec
    reuse: bool
    capacity: int | None = None
    own_clocks: tuple[tuple[str, int], ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name

    def clocks(self, game: Clocks) -> Clocks:
        """Its clocks at a game of clocks `game`: its own over the game's, the margin the
        game's."""
        return replace(game, **dict(self.own_clocks)) if self.own_clocks else game


@dataclass(frozen=True)
class TournamentConfig:
    """A checked tournament config; relative paths in it are resolved against its directory."""

    path: Path
    name: str
    games: tuple[GameSettings, ...]
    players: tuple[Entrant, ...]
    policy: Policy
    concurrency: int
    seed: int
    output: Path
    # The cores each match has to itself, shared by its seats, which take turns on them;
    # 0: its players run wherever the system puts them.
    cores_per_match: int = 1
    # Whether a seat may think while it is not asked (on another's time): then each seat has
    # `cores_per_seat` cores of its own, as in a game of simultaneous moves; else it is
    # paused between its answer and its next request.
    ponder: bool = False
    cores_per_seat: int = 1
    trace: Path | None = None
    format: TournamentFormat = TournamentFormat.ROUND_ROBIN
    # Swiss and knockout: the games of each pairing of a round (a knockout's tie), the seats
    # swapped from one to the next.
    games_per_pairing: int = 2
    # Knockout: the games a drawn tie plays more, then who goes on if it is drawn still; the
    # results directory whose ratings seed the bracket (else the players' order).
    tiebreak_games: int = 2
    tiebreak: TieBreak = TieBreak.HIGHER_SEED
    seeding: Path | None = None
    # Swiss: what ranks equal scores, in order, before the rating.
    tiebreaks: tuple[Tiebreak, ...] = DEFAULT_TIEBREAKS
    # Gauntlet: the first `challengers` players each play all the others, not each other.
    challengers: int = 0
    sprt: SprtSettings | None = None
    rating_interval: int = 0
    # The player whose rating is 0; None puts the mean rating at 0.
    anchor: str | None = None
    # What computing one state of a rulesheet played one state at a time may take.
    states: StateLimits = DEFAULT_LIMITS
    # Start failures in a row after which a player is withdrawn: its remaining matches are
    # forfeits, its program no longer tried.
    withdraw_after: int = 3
    # Whether each match's moves are written as it is played, for those who watch it
    # (`live.py`).
    live: bool = False
    # Whether its transcripts name no path of this machine (`results.as_written`): an
    # arena's, which its authors read. Set by the arena, not by a config file.
    portable_records: bool = False
    # The config file's text, which a cluster's workers are sent to read it as this one did.
    text: str = field(default="", repr=False, compare=False)

    def seat_clocks(self, clocks: Clocks, players: Sequence[str]) -> tuple[Clocks, ...]:
        """Each seat's clocks in a match at a game of clocks `clocks` of `players` (in role
        order): a player's own, else the game's; () when every seat has the game's, as when
        no player sets its own (the chance seat, no entrant, always has the game's)."""
        own = self._own_clocks
        if not own:
            return ()
        seats = tuple(own[name].clocks(clocks) if name in own else clocks for name in players)
        return () if all(seat == clocks for seat in seats) else seats

    @functools.cached_property
    def _own_clocks(self) -> dict[str, Entrant]:
        """The entrants that set clocks of their own, by name: made once, where each match
        scheduled asked every entrant (a cost of the field's size per match)."""
        return {entrant.name: entrant for entrant in self.players if entrant.own_clocks}

    def settings(self, game_id: str) -> GameSettings | None:
        """The settings of the game of that id, if the tournament has it."""
        return next((s for s in self.games if s.game.id == game_id), None)

    def seats_apart(self, game: Game) -> bool:
        """Whether each seat of a match of `game` is to have cores of its own: when seats
        think at once, on each other's time (`ponder`) or in a game of simultaneous moves."""
        return self.ponder or game.simultaneous


def check_shape(path: Path, text: str) -> None:
    """Refuse a document nested too deep, or whose aliases expand it past MAX_CONFIG_NODES,
    before anything is built from it: from the parser's events, which need no recursion."""
    expanded: dict[str, int] = {}  # an anchor's size, in nodes once aliases are expanded
    anchors: list[str | None] = []  # of each open collection, and its size so far
    sizes: list[int] = []
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        size = 0
        if isinstance(event, yaml.CollectionStartEvent):
            if len(sizes) == MAX_CONFIG_DEPTH:
                raise ConfigError(f"{_line(path, event)}: nested more than {MAX_CONFIG_DEPTH} deep")
            anchors.append(event.anchor)
            sizes.append(1)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = anchors.pop(), sizes.pop()
            if anchor is not None:
                expanded[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                expanded[event.anchor] = size
        elif isinstance(event, yaml.AliasEvent):
            size = expanded.get(event.anchor or "", 1)
        if size and sizes:
            sizes[-1] += size
            if sizes[-1] > MAX_CONFIG_NODES:
                raise ConfigError(
                    f"{_line(path, event)}: more than {MAX_CONFIG_NODES} values once its"
                    " aliases are expanded"
                )


def _line(path: Path, event: yaml.Event) -> str:
    mark = event.start_mark
    return f"{path}:{mark.line + 1}" if mark else str(path)


def rulesheets_of(config: TournamentConfig) -> dict[str, str]:
    """The text of each rulesheet of `config`'s games, by its path: what a worker that does
    not share the disk reads them from (`parse_config`)."""
    return {s.game.path: s.game.rules for s in config.games if isinstance(s.game, GdlGame)}


def load_config(path: Path) -> TournamentConfig:
    """Read and check a tournament config; ConfigError with file:line: key for any problem."""
    return parse_config(path, read_text(path, ConfigError, MAX_CONFIG_BYTES))


def parse_config(
    path: Path,
    text: str,
    cwds: Mapping[str, Path] | None = None,
    rulesheets: Mapping[str, str] | None = None,
) -> TournamentConfig:
    """Check the text of the tournament config at `path` (a worker is sent the text).
    `cwds`: where the players so named run instead of their `cwd`, a worker's copy of their
    directories (`bundles.py`); `rulesheets`: the text of each rulesheet by its path, read
    from there instead of the disk (`rulesheets_of`)."""
    loader = yaml.SafeLoader(text)
    try:
        check_shape(path, text)
        # One parse: the nodes locate errors, the data built from them is checked.
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as error:
        line, problem = yaml_problem(error)
        raise ConfigError(f"{path}{line}: not valid YAML: {problem or error}") from None
    finally:
        loader.dispose()
    locate = Locator(path, root)
    if data is None:
        raise ConfigError(f"{path}: the file is empty; a config needs name, games and players")
    if not isinstance(data, dict):
        raise locate.error((), "expected a mapping of settings (name, games, players, ...)")
    locate.check_duplicate_keys(root)
    # A game may be given by its id alone; the model sees every game as a mapping.
    games = data.get("games")
    if isinstance(games, list):
        data["games"] = [{"id": g} if isinstance(g, str) else g for g in games]
    try:
        raw = ConfigFile.model_validate(data)
    except ValidationError as error:
        found = error.errors()
        # A misspelt key explains the key it leaves missing: that one is not said again.
        misspelt = {_keys(e["loc"])[:-1] for e in found if e["type"] == "extra_forbidden"}
        said = [
            checks.Located(e["loc"], error_message(e))
            for e in found
            if not (e["type"] == "missing" and _keys(e["loc"])[:-1] in misspelt)
        ]
        said += _alone(data, path.resolve().parent, rulesheets or {})
        raise locate.errors(said) from None
    try:
        return replace(_build(path, raw, cwds or {}, rulesheets or {}), text=text)
    except checks.Located as error:
        raise locate.errors([error]) from None
    except checks.AllLocated as error:
        raise locate.errors(error.found) from None


def _build(
    path: Path,
    raw: ConfigFile,
    cwds: Mapping[str, Path],
    rulesheets: Mapping[str, str],
) -> TournamentConfig:
    """The config `raw` describes, each setting checked as it is built (config_checks.py)."""
    base = path.resolve().parent
    games: list[GameSettings] = []
    states = StateLimits(raw.state_memory_mb, raw.state_seconds)
    # Each game and each player is checked on its own, so that a config's mistakes in
    # several of them are told at once; what needs them all is checked once they pass.
    found: list[checks.Located] = []
    for index, entry in enumerate(raw.games):
        with checks.collected(found):
            games.append(_game(raw, index, entry, base, states, rulesheets, games))
    everyone = checks.limits(raw.limits, Limits(), ("limits",))
    players: list[Entrant] = []
    for index, player in enumerate(raw.players):
        with checks.collected(found):
            players.append(_entrant(raw, index, player, base, cwds, everyone, players, games))
    if found:
        raise checks.AllLocated(found)
    fmt = TournamentFormat(raw.format)
    played = [settings.game for settings in games]
    challengers = checks.challengers(raw, fmt, played)
    sprt = checks.sprt(raw, fmt, played)
    per_pairing = checks.games_per_pairing(raw, fmt, played)
    tiebreak_games, tiebreak, seeding = checks.knockout(raw, fmt, base)
    ranking = checks.tiebreaks(raw, fmt)
    checks.schedule_size(
        len(raw.players),
        fmt,
        [(settings.game, settings.rounds) for settings in games],
        challengers,
        per_pairing,
        tiebreak_games,
    )
    anchor = checks.anchor(raw, [p.name for p in players])
    output = base / raw.output if raw.output else base / "results" / raw.name
    return TournamentConfig(
        path=path,
        name=raw.name,
        games=tuple(games),
        players=tuple(players),
        policy=Policy(raw.policy),
        concurrency=raw.concurrency,
        seed=raw.seed,
        output=output,
        cores_per_match=raw.cores_per_match,
        ponder=raw.ponder,
        cores_per_seat=raw.cores_per_seat,
        trace=output / TRACE_FILE if raw.trace else None,
        format=fmt,
        games_per_pairing=per_pairing,
        tiebreak_games=tiebreak_games,
        tiebreak=tiebreak,
        seeding=seeding,
        tiebreaks=ranking,
        challengers=challengers,
        sprt=sprt,
        rating_interval=raw.rating_interval,
        anchor=anchor,
        states=states,
        withdraw_after=raw.withdraw_after,
        live=raw.live,
    )


def _alone(data: dict[str, Any], base: Path, rulesheets: Mapping[str, str]) -> list[checks.Located]:
    """Of a config whose shape is refused, what its games and players of a good shape of
    their own would be refused for (a game that is not one, a program not there): told in
    the same run, not the next."""
    found: list[checks.Located] = []
    games = data.get("games")
    for index, item in enumerate(games if isinstance(games, list) else []):
        try:
            game = GameEntry.model_validate(item)
        except ValidationError:
            continue
        with checks.collected(found):
            checks.game(game.id, base, ("games", index, "id"), DEFAULT_LIMITS, rulesheets)
    players = data.get("players")
    listed = players if isinstance(players, list) else []
    # A name taken by an entry of a bad shape is taken all the same.
    names = [item.get("name") if isinstance(item, dict) else None for item in listed]
    for index, item in enumerate(listed):
        try:
            player = PlayerEntry.model_validate(item)
        except ValidationError:
            continue
        with checks.collected(found):
            earlier = [name for name in names[:index] if isinstance(name, str)]
            checks.player(player, base, ("players", index), None, earlier)
    return found


def _game(
    raw: ConfigFile,
    index: int,
    entry: GameEntry,
    base: Path,
    states: StateLimits,
    rulesheets: Mapping[str, str],
    earlier: Sequence[GameSettings],
) -> GameSettings:
    """The game of `games` at `index`, checked."""
    at: Location = ("games", index, "id")
    game = checks.game(entry.id, base, at, states, rulesheets)
    checks.game_in_field(game, [s.game.id for s in earlier], len(raw.players), at)
    clocks = checks.clocks(raw, entry, ("games", index))
    own = entry.openings is not None
    at = ("games", index, "openings") if own else ("openings",)
    openings = checks.openings(entry.openings if own else raw.openings, game, base, raw.seed, at)
    own = entry.max_steps is not None
    at = ("games", index, "max_steps") if own else ("max_steps",)
    max_steps = checks.max_steps(entry.max_steps if own else raw.max_steps, game, openings, at)
    return GameSettings(game, entry.rounds or raw.rounds, clocks, openings, max_steps)


def _entrant(
    raw: ConfigFile,
    index: int,
    player: PlayerEntry,
    base: Path,
    cwds: Mapping[str, Path],
    everyone: Limits,
    earlier: Sequence[Entrant],
    games: Sequence[GameSettings],
) -> Entrant:
    """The player of `players` at `index`, checked against the players before it."""
    where: Location = ("players", index)
    spec = checks.player(player, base, where, cwds.get(player.name), [p.name for p in earlier])
    spec = replace(spec, limits=checks.limits(player.limits, everyone, (*where, "limits")))
    capacity = checks.capacity(player, spec, where)
    reuse = raw.reuse if player.reuse is None else player.reuse
    entrant = Entrant(spec, reuse, capacity, checks.own_clocks(player))
    its_clocks = [entrant.clocks(settings.clocks) for settings in games]
    checks.url_player(player, spec, where, [p.spec for p in earlier], its_clocks)
    return entrant


def _keys(loc: Sequence[int | str]) -> Location:
    """The key path of a pydantic error location, without the union members it names."""
    return tuple(part for part in loc if part not in ("str", "list[str]"))


class Locator:
    """Turns a key path into `file:line: key: message`, the line found in the YAML nodes."""

    def __init__(self, path: Path, root: yaml.Node | None) -> None:
        self.path = path
        self.root = root

    def line(self, loc: Sequence[int | str]) -> int:
        """The line (from 1) of the key a path ends at; 0 when the file has no nodes."""
        node = self._node(_keys(loc))
        return node.start_mark.line + 1 if node is not None else 0

    def error(self, loc: Sequence[int | str], message: str) -> ConfigError:
        return ConfigError(self._said(loc, message))

    def errors(self, found: Sequence[checks.Located]) -> ConfigError:
        """One error of every mistake found, a line each in the order of the file; past
        MAX_MISTAKES_SAID, how many more."""
        ordered = sorted(found, key=lambda f: self.line(f.loc))
        lines = [self._said(f.loc, f.message) for f in ordered[:MAX_MISTAKES_SAID]]
        if len(ordered) > MAX_MISTAKES_SAID:
            lines.append(f"{self.path}: and {len(ordered) - MAX_MISTAKES_SAID} more mistakes")
        return ConfigError("\n".join(lines))

    def _said(self, loc: Sequence[int | str], message: str) -> str:
        loc = _keys(loc)
        line = f":{self.line(loc)}" if self.root is not None else ""
        # For an unknown or missing key the message names it; the path is where it is.
        shown = loc[:-1] if message.startswith(("unknown key", "missing key")) else loc
        key = f" {field_path(shown)}:" if shown else ""
        return f"{self.path}{line}:{key} {message}"

    def _node(self, loc: Location) -> yaml.Node | None:
        """The node of the key the path ends at, or the deepest node on the way there."""
        node = self.root
        for index, part in enumerate(loc):
            if isinstance(node, yaml.MappingNode):
                found = next(
                    ((k, v) for k, v in node.value if getattr(k, "value", None) == part), None
                )
                if found is None:
                    return node
                key, value = found
                node = key if index == len(loc) - 1 else value
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if part >= len(node.value):
                    return node
                node = node.value[part]
            else:
                return node
        return node

    def check_duplicate_keys(self, node: yaml.Node | None, loc: Location = ()) -> None:
        """YAML keeps the last of two equal keys without a word; a config must not."""
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key, value in node.value:
                if key.value in seen:
                    raise ConfigError(
                        f"{self.path}:{key.start_mark.line + 1}: {field_path(loc) or 'top level'}:"
                        f" key {key.value!r} appears twice"
                    )
                seen.add(key.value)
                self.check_duplicate_keys(value, (*loc, key.value))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.check_duplicate_keys(item, (*loc, index))
