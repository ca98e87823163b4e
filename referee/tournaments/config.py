"""Tournament configs: YAML checked as a whole before anything starts, errors as file:line.

The shape (keys, types, ranges) is checked by the pydantic models of config_models.py;
what needs the rest of the referee (game ids, player commands) is checked after, as the
config is built. Every error is located by walking the YAML node tree along the error's
key path. The format is documented in `docs/tournaments.md`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from referee.clock import Clocks, ggp_seconds
from referee.errors import ConfigError, GameFault, RefereeError, RulesheetError
from referee.games import (
    GAMES,
    Game,
    GdlGame,
    StateLimits,
    is_rulesheet,
    load_rulesheet,
    load_text,
    nearest_game,
)
from referee.games.gdl.remote import DEFAULT_LIMITS
from referee.players.base import PlayerKind, PlayerSpec
from referee.players.builtin import program_spec
from referee.players.chance import competing
from referee.policy import Policy
from referee.records.files import field_path, read_text, yaml_problem
from referee.records.transcript import BookLine
from referee.sandbox.limits import Limits
from referee.tournaments.books import BUILT_IN, Book, Order, built_in_book, read_book
from referee.tournaments.config_models import (
    MAX_OPENING,
    ConfigFile,
    GameEntry,
    LimitsEntry,
    Location,
    PlayerEntry,
    error_message,
)
from referee.tournaments.knockout import TieBreak
from referee.tournaments.sprt import SprtSettings

# A config is small and shallow: bounds no real one comes near, which keep a hostile one
# from taking the referee's memory or time before it is even checked.
MAX_CONFIG_BYTES = 1024 * 1024
MAX_CONFIG_DEPTH = 32
MAX_CONFIG_NODES = 100_000
# The most matches a tournament may schedule: days of play for instant players.
MAX_MATCHES = 1_000_000
# The matches a URL player is in at once unless its entry says more: a GGP player, as
# ggp-base's are, plays one match and answers `busy` to the next START.
URL_CAPACITY = 1
# The states whose goals are checked for `max_steps` when a config is read.
GOALS_CHECKED = 50
# Where `trace: true` writes the lines exchanged with the players, in the results directory.
TRACE_FILE = "trace.log"


class TournamentFormat(StrEnum):
    """Who plays whom: every group of players, the challengers against the rest, two players
    until a sequential test decides, each round players of near score (Swiss), or a bracket
    whose winners go on (knockout)."""

    ROUND_ROBIN = "round-robin"
    GAUNTLET = "gauntlet"
    SPRT = "sprt"
    SWISS = "swiss"
    KNOCKOUT = "knockout"


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
    URL_CAPACITY unless its config says more.
    """

    spec: PlayerSpec
    reuse: bool
    capacity: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name


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
    # The config file's text, which a cluster's workers are sent to read it as this one did.
    text: str = field(default="", repr=False, compare=False)

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
        # The first in the file, and a misspelt key before the key it leaves missing.
        first = min(
            error.errors(), key=lambda e: (e["type"] != "extra_forbidden", locate.line(e["loc"]))
        )
        raise locate.error(first["loc"], error_message(first)) from None
    try:
        return replace(_build(path, raw, locate, cwds or {}, rulesheets or {}), text=text)
    except _Located as error:
        raise locate.error(error.loc, error.message) from None


class _Located(Exception):
    def __init__(self, loc: Location, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


def _build(
    path: Path,
    raw: ConfigFile,
    locate: Locator,
    cwds: Mapping[str, Path],
    rulesheets: Mapping[str, str],
) -> TournamentConfig:
    base = path.resolve().parent
    games = []
    seen: set[str] = set()
    states = StateLimits(raw.state_memory_mb, raw.state_seconds)
    for index, entry in enumerate(raw.games):
        game = _game(entry.id, base, ("games", index, "id"), states, rulesheets)
        if game.id in seen:
            raise _Located(("games", index, "id"), f"game {game.id} is listed twice")
        seen.add(game.id)
        if competing(game.roles) > len(raw.players):
            raise _Located(
                ("games", index, "id"),
                f"{game.id} has {competing(game.roles)} roles but only {len(raw.players)} players",
            )
        clocks = _clocks(raw, entry, ("games", index))
        own = entry.openings is not None
        at: Location = ("games", index, "openings") if own else ("openings",)
        openings = _openings(entry.openings if own else raw.openings, game, base, raw.seed, at)
        own = entry.max_steps is not None
        at = ("games", index, "max_steps") if own else ("max_steps",)
        max_steps = _max_steps(entry.max_steps if own else raw.max_steps, game, openings, at)
        games.append(GameSettings(game, entry.rounds or raw.rounds, clocks, openings, max_steps))
    fmt = TournamentFormat(raw.format)
    challengers = _challengers(raw, fmt, games)
    sprt = _sprt(raw, fmt, games)
    per_pairing = _games_per_pairing(raw, fmt, games)
    knockout = _knockout(raw, fmt, base)
    # Counted before a match is scheduled: a billion rounds must not fill the memory first.
    matches = sum(
        settings.rounds * (len(raw.players) // 2) * per_pairing
        if fmt is TournamentFormat.SWISS
        else (len(raw.players) - 1) * (per_pairing + knockout[0])
        if fmt is TournamentFormat.KNOCKOUT
        else settings.rounds
        * _groups(len(raw.players), challengers, competing(settings.game.roles))
        * competing(settings.game.roles)
        for settings in games
    )
    if matches > MAX_MATCHES:
        raise _Located(("rounds",), f"the schedule has {matches} matches; at most {MAX_MATCHES}")
    everyone = _limits(raw.limits, Limits(), ("limits",))
    players = []
    names: set[str] = set()
    for index, player in enumerate(raw.players):
        where = ("players", index)
        if player.name in names:
            raise _Located((*where, "name"), f"player name {player.name} is used twice")
        names.add(player.name)
        spec = _spec(player, base, where, cwds.get(player.name))
        spec = replace(spec, limits=_limits(player.limits, everyone, (*where, "limits")))
        capacity = _capacity(player, spec, where)
        players.append(Entrant(spec, _pick(player.reuse, raw.reuse), capacity))
        if spec.kind is PlayerKind.HTTP:
            # A capacity is a server's: two names for one would let it be in two matches.
            same = next(
                (
                    other.name
                    for other in players[:-1]
                    if other.spec.kind is PlayerKind.HTTP and other.spec.address == spec.address
                ),
                None,
            )
            if same is not None:
                raise _Located((*where, "url"), f"{player.url} is player {same}'s URL too")
        if spec.kind is PlayerKind.HTTP:
            for index, settings in enumerate(games):
                try:
                    ggp_seconds(settings.clocks)
                except ConfigError as error:
                    raise _Located(("games", index), f"{error} (player {spec.name})") from None
    if raw.anchor is not None and raw.anchor not in names:
        raise _Located(("anchor",), f"{raw.anchor} is not a player of this tournament")
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
        tiebreak_games=knockout[0],
        tiebreak=knockout[1],
        seeding=knockout[2],
        challengers=challengers,
        sprt=sprt,
        rating_interval=raw.rating_interval,
        anchor=raw.anchor,
        states=states,
        withdraw_after=raw.withdraw_after,
        live=raw.live,
    )


def _groups(players: int, challengers: int, roles: int) -> int:
    """How many groups of players meet at a game of `roles` competing roles."""
    if challengers:
        return challengers * math.comb(players - challengers, roles - 1)
    return math.comb(players, roles)


def _games_per_pairing(
    raw: ConfigFile, fmt: TournamentFormat, games: Sequence[GameSettings]
) -> int:
    if fmt not in (TournamentFormat.SWISS, TournamentFormat.KNOCKOUT):
        if raw.games_per_pairing is not None:
            raise _Located(
                ("games_per_pairing",),
                "only a Swiss or a knockout pairs its players (format: swiss or knockout)",
            )
        return 2
    kind = "a Swiss" if fmt is TournamentFormat.SWISS else "a knockout"
    if len(games) != 1:
        raise _Located(("games",), f"{kind} plays one game; this config has {len(games)}")
    roles = competing(games[0].game.roles)
    if roles != 2:
        raise _Located(
            ("games", 0, "id"), f"{kind} pairs two players; {games[0].game.id} has {roles}"
        )
    return raw.games_per_pairing or 2


def _knockout(
    raw: ConfigFile, fmt: TournamentFormat, base: Path
) -> tuple[int, TieBreak, Path | None]:
    """A knockout's tie-break games and rule, and the results directory that seeds it."""
    if fmt is not TournamentFormat.KNOCKOUT:
        for key in ("tiebreak_games", "tiebreak", "seeding"):
            if getattr(raw, key) is not None:
                raise _Located(
                    (key,), "only a knockout has tie-breaks and a seeding (format: knockout)"
                )
        return 2, TieBreak.HIGHER_SEED, None
    given: list[Location] = [("rounds",)] if "rounds" in raw.model_fields_set else []
    given += [("games", i, "rounds") for i, g in enumerate(raw.games) if g.rounds is not None]
    if given:
        raise _Located(given[0], "a knockout plays until one player is left: it has no rounds")
    seeding = None
    if raw.seeding is not None:
        seeding = base / raw.seeding
        if not seeding.is_dir():
            what = "not a directory" if seeding.exists() else "no such directory"
            raise _Located(("seeding",), f"{what}: {seeding} (a results directory)")
    games = 2 if raw.tiebreak_games is None else raw.tiebreak_games
    return games, TieBreak(raw.tiebreak or TieBreak.HIGHER_SEED), seeding


def _challengers(raw: ConfigFile, fmt: TournamentFormat, games: Sequence[GameSettings]) -> int:
    if fmt is not TournamentFormat.GAUNTLET:
        if raw.challengers is not None:
            raise _Located(("challengers",), "only a gauntlet has challengers (format: gauntlet)")
        return 0
    challengers = raw.challengers or 1
    rest = len(raw.players) - challengers
    if rest < 1:
        raise _Located(
            ("challengers",),
            f"{challengers} challengers leave no other player of the {len(raw.players)}"
            " to play against",
        )
    for index, settings in enumerate(games):
        roles = competing(settings.game.roles)
        if roles - 1 > rest:
            raise _Located(
                ("games", index, "id"),
                f"{settings.game.id} needs {roles - 1} players besides each challenger;"
                f" the gauntlet has {rest}",
            )
    return challengers


def _sprt(
    raw: ConfigFile, fmt: TournamentFormat, games: Sequence[GameSettings]
) -> SprtSettings | None:
    if fmt is not TournamentFormat.SPRT:
        if raw.sprt is not None:
            raise _Located(("sprt",), "only a tournament with format: sprt takes sprt settings")
        return None
    if raw.sprt is None:
        raise _Located(("format",), "an SPRT needs sprt settings (elo0, elo1, alpha, beta)")
    settings = SprtSettings(raw.sprt.elo0, raw.sprt.elo1, raw.sprt.alpha, raw.sprt.beta)
    problem = settings.problem()
    if problem:
        raise _Located(("sprt",), problem)
    if len(raw.players) != 2:
        raise _Located(
            ("players",), f"an SPRT is between two players; this config has {len(raw.players)}"
        )
    for index, game in enumerate(games):
        if competing(game.game.roles) != 2:
            raise _Located(
                ("games", index, "id"),
                f"an SPRT plays two-player games; {game.game.id} has"
                f" {competing(game.game.roles)} players",
            )
    return settings


def _openings(value: Any, game: Game, base: Path, seed: int, loc: Location) -> int | Book:
    """A game's openings: steps at random, or the book `value` names (read relative to the
    config's folder, its lines in the order asked for)."""
    order = Order.IN_ORDER
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"file", "order"})
        if unknown:
            raise _Located((*loc, unknown[0]), f"unknown key {unknown[0]!r} (file, order)")
        if "order" in value:
            if value["order"] not in set(Order):
                raise _Located(
                    (*loc, "order"), f"expected {' or '.join(Order)}, got {value['order']!r}"
                )
            order = Order(value["order"])
        value = value.get("file")
        if not isinstance(value, str) or not value:
            raise _Located(loc, "a book needs its file: {file: PATH}")
        loc = (*loc, "file")
    elif isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_OPENING:
            raise _Located(loc, f"{value} steps: from 0 to {MAX_OPENING}")
        return value
    elif value != BUILT_IN:
        raise _Located(
            loc,
            f"expected a number of steps played at random (0 to {MAX_OPENING}), {BUILT_IN},"
            f" or a book: {{file: PATH, order: {' or '.join(Order)}}}; got {value!r}",
        )
    try:
        if value == BUILT_IN:
            book = built_in_book(game, order, seed)
            if book is None:
                raise _Located(loc, f"{game.id} has no book of its own; give one: {{file: PATH}}")
            return book
        return read_book(base / value, value, game, order, seed)
    except ConfigError as error:
        raise _Located(loc, str(error)) from None


def _max_steps(
    max_steps: int | None, game: Game, openings: int | Book, loc: Location
) -> int | None:
    """`max_steps` for `game`, if its goals are defined before its end, past its openings."""
    if max_steps is None:
        return None
    if not isinstance(game, GdlGame):
        raise _Located(
            loc,
            f"{game.id}'s rules give goals only at its end (referee rules {game.id}), and it"
            f" ends within {game.max_steps} steps: max_steps is for a rulesheet that defines"
            " its goals before its end",
        )
    longest = (
        max(len(line.steps) for line in openings.lines) if isinstance(openings, Book) else openings
    )
    if max_steps <= longest:
        raise _Located(loc, f"{max_steps} steps end a match within its opening of {longest}")
    problem = _goals_missing(game, max_steps)
    if problem:
        raise _Located(
            loc,
            f"{game.id} does not define its goals before its end ({problem}): max_steps"
            " needs a game that does",
        )
    return max_steps


def _goals_missing(game: Game, max_steps: int) -> str | None:
    """Where the goals of `game` are not defined, in the states of a match of first legal
    moves up to `max_steps` (at most GOALS_CHECKED of them); None if they all are."""
    state = game.initial_state()
    try:
        for step in range(min(max_steps, GOALS_CHECKED) + 1):
            if game.is_terminal(state):
                return None
            try:
                game.goals(state)
            except GameFault as fault:
                return f"at step {step}: {str(fault).rpartition(': ')[2] or fault}"
            joint = tuple(game.legal_moves(state, role)[0] for role in range(len(game.roles)))
            state = game.next_state(state, joint)
    except GameFault as fault:
        return str(fault)
    return None


def _limits(entry: LimitsEntry, under: Limits, loc: Location) -> Limits:
    """The limits `entry` sets over `under`, or an error at `loc` for one out of range."""
    try:
        return entry.over(under)
    except ConfigError as error:
        raise _Located(loc, str(error)) from None


def _pick(override: Any, default: Any) -> Any:
    return default if override is None else override


def _clocks(raw: ConfigFile, entry: GameEntry, where: Location) -> Clocks:
    try:
        return Clocks(
            _pick(entry.start_clock, raw.start_clock),
            _pick(entry.play_clock, raw.play_clock),
            _pick(entry.time_bank, raw.time_bank),
        )
    except ConfigError as error:
        raise _Located(where, str(error)) from None


def _spec(entry: PlayerEntry, base: Path, where: Location, cwd: Path | None) -> PlayerSpec:
    if (entry.command is None) == (entry.url is None):
        raise _Located(where, "give a player either a command or a url")
    if entry.url is not None:
        try:
            return PlayerSpec.http(entry.name, entry.url)
        except ConfigError as error:
            raise _Located((*where, "url"), str(error)) from None
    assert entry.command is not None
    if cwd is None and entry.cwd:
        cwd = base / entry.cwd
    if cwd is not None and not cwd.is_dir():
        raise _Located((*where, "cwd"), f"no such directory: {cwd}")
    try:
        return program_spec(
            entry.command, "a person cannot play in a tournament", entry.name, base, cwd, entry.env
        )
    except RefereeError as error:
        raise _Located((*where, "command"), str(error)) from None


def _capacity(entry: PlayerEntry, spec: PlayerSpec, where: Location) -> int | None:
    """The matches a player may be in at once: URL players only; None for no limit."""
    if spec.kind is PlayerKind.HTTP:
        return _pick(entry.capacity, URL_CAPACITY)
    if entry.capacity is not None:
        raise _Located(
            (*where, "capacity"),
            "capacity is for URL players; a program is started for each match it plays",
        )
    return None


def _game(
    game_id: str, base: Path, loc: Location, states: StateLimits, rulesheets: Mapping[str, str]
) -> Game:
    """A built-in game, or the game of a rulesheet named relative to the config's folder
    (its text from `rulesheets` if it is there), its states computed within `states`."""
    if game_id in GAMES:
        return GAMES[game_id]
    if not is_rulesheet(game_id):
        raise _Located(loc, f"unknown game {game_id!r}{_hint(game_id)}")
    path = os.path.normpath(base / game_id)
    try:
        if path in rulesheets:
            return load_text(rulesheets[path], path, states)
        return load_rulesheet(path, states)
    except RulesheetError as error:
        raise _Located(loc, str(error)) from None


def _hint(game_id: str) -> str:
    close = nearest_game(game_id)
    return f" (did you mean {close}?)" if close else f" (known: {', '.join(GAMES)})"


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
        loc = _keys(loc)
        line = f":{self.line(loc)}" if self.root is not None else ""
        # For an unknown or missing key the message names it; the path is where it is.
        shown = loc[:-1] if message.startswith(("unknown key", "missing key")) else loc
        key = f" {field_path(shown)}:" if shown else ""
        return ConfigError(f"{self.path}{line}:{key} {message}")

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
