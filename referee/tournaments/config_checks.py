"""A tournament config's checks: each setting checked against the rest of the referee (game
ids, rulesheets, books, player commands) and against the others (a format and its games,
players and settings), once its file has the shape of config_models.py.

Each check gives the setting's value, or raises Located with the key path of what it
refuses, which config.py turns into `file:line: key: message`.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

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
from referee.players.base import PlayerKind, PlayerSpec
from referee.players.builtin import program_spec
from referee.players.chance import competing
from referee.sandbox.limits import Limits
from referee.tournaments.books import BUILT_IN, Book, Order, built_in_book, read_book
from referee.tournaments.config_models import (
    MAX_OPENING,
    ConfigFile,
    GameEntry,
    LimitsEntry,
    Location,
    PlayerEntry,
    TournamentFormat,
)
from referee.tournaments.knockout import TieBreak
from referee.tournaments.sprt import SprtSettings
from referee.tournaments.swiss import DEFAULT_TIEBREAKS, Tiebreak

# The most matches a tournament may schedule: days of play for instant players.
MAX_MATCHES = 1_000_000
# The matches a URL player is in at once unless its entry says more: a GGP player, as
# ggp-base's are, plays one match and answers `busy` to the next START.
URL_CAPACITY = 1
# The states whose goals are checked for `max_steps` when a config is read.
GOALS_CHECKED = 50


class Located(Exception):
    """A setting refused: the key path of the setting, and why."""

    def __init__(self, loc: Location, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


class AllLocated(Exception):
    """Every setting refused of the parts of a config checked one by one."""

    def __init__(self, found: list[Located]) -> None:
        super().__init__("; ".join(f.message for f in found))
        self.found = found


@contextlib.contextmanager
def collected(found: list[Located]) -> Iterator[None]:
    """Check one part of a config: a setting it refuses is added to `found`, not raised."""
    try:
        yield
    except Located as error:
        found.append(error)


def game(
    game_id: str, base: Path, loc: Location, states: StateLimits, rulesheets: Mapping[str, str]
) -> Game:
    """A built-in game, or the game of a rulesheet named relative to the config's folder
    (its text from `rulesheets` if it is there), its states computed within `states`."""
    if game_id in GAMES:
        return GAMES[game_id]
    if not is_rulesheet(game_id):
        raise Located(loc, f"unknown game {game_id!r}{_hint(game_id, base)}")
    path = os.path.normpath(base / game_id)
    try:
        if path in rulesheets:
            return load_text(rulesheets[path], path, states)
        return load_rulesheet(path, states)
    except RulesheetError as error:
        raise Located(loc, str(error)) from None


def _hint(game_id: str, base: Path) -> str:
    close = nearest_game(game_id, base)
    return f" (did you mean {close}?)" if close else f" (known: {', '.join(GAMES)})"


def game_in_field(game: Game, earlier: Collection[str], players: int, loc: Location) -> None:
    """Refuse a game listed twice (`earlier`: the ids of the games before it), or one of more
    competing roles than the tournament has `players`."""
    if game.id in earlier:
        raise Located(loc, f"game {game.id} is listed twice")
    if competing(game.roles) > players:
        raise Located(
            loc, f"{game.id} has {competing(game.roles)} roles but only {players} players"
        )


def _pick(override: Any, default: Any) -> Any:
    return default if override is None else override


def clocks(raw: ConfigFile, entry: GameEntry, where: Location) -> Clocks:
    """A game's clocks and time margin: its own, else the config's."""
    try:
        return Clocks(
            _pick(entry.start_clock, raw.start_clock),
            _pick(entry.play_clock, raw.play_clock),
            _pick(entry.time_bank, raw.time_bank),
            _pick(entry.time_margin, raw.time_margin),
        )
    except ConfigError as error:
        raise Located(where, str(error)) from None


# A player's clock keys and the `Clocks` fields they set.
_OWN_CLOCKS = {"start_clock": "start_ms", "play_clock": "play_ms", "time_bank": "time_bank_ms"}


def own_clocks(entry: PlayerEntry) -> tuple[tuple[str, int], ...]:
    """The clocks a player sets for its own seats (their bounds are the model's), each as a
    `Clocks` field and its value."""
    return tuple(
        (name, getattr(entry, key))
        for key, name in _OWN_CLOCKS.items()
        if getattr(entry, key) is not None
    )


def openings(value: Any, game: Game, base: Path, seed: int, loc: Location) -> int | Book:
    """A game's openings: steps at random, or the book `value` names (read relative to the
    config's folder, its lines in the order asked for)."""
    order = Order.IN_ORDER
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"file", "order"})
        if unknown:
            raise Located((*loc, unknown[0]), f"unknown key {unknown[0]!r} (file, order)")
        if "order" in value:
            if value["order"] not in set(Order):
                raise Located(
                    (*loc, "order"), f"expected {' or '.join(Order)}, got {value['order']!r}"
                )
            order = Order(value["order"])
        value = value.get("file")
        if not isinstance(value, str) or not value:
            raise Located(loc, "a book needs its file: {file: PATH}")
        loc = (*loc, "file")
    elif isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value <= MAX_OPENING:
            raise Located(loc, f"{value} steps: from 0 to {MAX_OPENING}")
        return value
    elif value != BUILT_IN:
        raise Located(
            loc,
            f"expected a number of steps played at random (0 to {MAX_OPENING}), {BUILT_IN},"
            f" or a book: {{file: PATH, order: {' or '.join(Order)}}}; got {value!r}",
        )
    try:
        if value == BUILT_IN:
            book = built_in_book(game, order, seed)
            if book is None:
                raise Located(loc, f"{game.id} has no book of its own; give one: {{file: PATH}}")
            return book
        return read_book(base / value, value, game, order, seed)
    except ConfigError as error:
        raise Located(loc, str(error)) from None


def max_steps(max_steps: int | None, game: Game, openings: int | Book, loc: Location) -> int | None:
    """`max_steps` for `game`, if its goals are defined before its end, past its openings."""
    if max_steps is None:
        return None
    if not isinstance(game, GdlGame):
        raise Located(
            loc,
            f"{game.id}'s rules give goals only at its end (referee rules {game.id}), and it"
            f" ends within {game.max_steps} steps: max_steps is for a rulesheet that defines"
            " its goals before its end",
        )
    longest = (
        max(len(line.steps) for line in openings.lines) if isinstance(openings, Book) else openings
    )
    if max_steps <= longest:
        raise Located(loc, f"{max_steps} steps end a match within its opening of {longest}")
    problem = _goals_missing(game, max_steps)
    if problem:
        raise Located(
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


def challengers(raw: ConfigFile, fmt: TournamentFormat, games: Sequence[Game]) -> int:
    """A gauntlet's challengers, each with players enough to meet at every game."""
    if fmt is not TournamentFormat.GAUNTLET:
        if raw.challengers is not None:
            raise Located(("challengers",), "only a gauntlet has challengers (format: gauntlet)")
        return 0
    challengers = raw.challengers or 1
    rest = len(raw.players) - challengers
    if rest < 1:
        raise Located(
            ("challengers",),
            f"{challengers} challengers leave no other player of the {len(raw.players)}"
            " to play against",
        )
    for index, game in enumerate(games):
        roles = competing(game.roles)
        if roles - 1 > rest:
            raise Located(
                ("games", index, "id"),
                f"{game.id} needs {roles - 1} players besides each challenger;"
                f" the gauntlet has {rest}",
            )
    return challengers


def sprt(raw: ConfigFile, fmt: TournamentFormat, games: Sequence[Game]) -> SprtSettings | None:
    """An SPRT's settings: a test between two players, at two-player games."""
    if fmt is not TournamentFormat.SPRT:
        if raw.sprt is not None:
            raise Located(("sprt",), "only a tournament with format: sprt takes sprt settings")
        return None
    if raw.sprt is None:
        raise Located(("format",), "an SPRT needs sprt settings (elo0, elo1, alpha, beta)")
    settings = SprtSettings(raw.sprt.elo0, raw.sprt.elo1, raw.sprt.alpha, raw.sprt.beta)
    problem = settings.problem()
    if problem:
        raise Located(("sprt",), problem)
    if len(raw.players) != 2:
        raise Located(
            ("players",), f"an SPRT is between two players; this config has {len(raw.players)}"
        )
    for index, game in enumerate(games):
        if competing(game.roles) != 2:
            raise Located(
                ("games", index, "id"),
                f"an SPRT plays two-player games; {game.id} has {competing(game.roles)} players",
            )
    return settings


def games_per_pairing(raw: ConfigFile, fmt: TournamentFormat, games: Sequence[Game]) -> int:
    """The games of each pairing of a Swiss or a knockout, which play one two-player game."""
    if fmt not in (TournamentFormat.SWISS, TournamentFormat.KNOCKOUT):
        if raw.games_per_pairing is not None:
            raise Located(
                ("games_per_pairing",),
                "only a Swiss or a knockout pairs its players (format: swiss or knockout)",
            )
        return 2
    kind = "a Swiss" if fmt is TournamentFormat.SWISS else "a knockout"
    if len(games) != 1:
        raise Located(("games",), f"{kind} plays one game; this config has {len(games)}")
    roles = competing(games[0].roles)
    if roles != 2:
        raise Located(("games", 0, "id"), f"{kind} pairs two players; {games[0].id} has {roles}")
    return raw.games_per_pairing or 2


def tiebreaks(raw: ConfigFile, fmt: TournamentFormat) -> tuple[Tiebreak, ...]:
    """What ranks a Swiss's equal scores, in order: each once."""
    if raw.tiebreaks is None:
        return DEFAULT_TIEBREAKS
    if fmt is not TournamentFormat.SWISS:
        raise Located(
            ("tiebreaks",),
            "only a Swiss ranks equal scores by tie-breaks (format: swiss); a knockout's drawn"
            " tie: tiebreak",
        )
    for index, name in enumerate(raw.tiebreaks):
        if name in raw.tiebreaks[:index]:
            raise Located(("tiebreaks", index), f"{name} is named twice")
    return tuple(Tiebreak(name) for name in raw.tiebreaks)


def knockout(
    raw: ConfigFile, fmt: TournamentFormat, base: Path
) -> tuple[int, TieBreak, Path | None]:
    """A knockout's tie-break games and rule, and the results directory that seeds it."""
    if fmt is not TournamentFormat.KNOCKOUT:
        for key in ("tiebreak_games", "tiebreak", "seeding"):
            if getattr(raw, key) is not None:
                # A Swiss's own key differs from the knockout's by a letter.
                swiss = key == "tiebreak" and fmt is TournamentFormat.SWISS
                hint = "; a Swiss ranks its equal scores by tiebreaks: [...]" if swiss else ""
                raise Located(
                    (key,),
                    f"only a knockout has tie-break games and a seeding (format: knockout){hint}",
                )
        return 2, TieBreak.HIGHER_SEED, None
    given: list[Location] = [("rounds",)] if "rounds" in raw.model_fields_set else []
    given += [("games", i, "rounds") for i, g in enumerate(raw.games) if g.rounds is not None]
    if given:
        raise Located(given[0], "a knockout plays until one player is left: it has no rounds")
    seeding = None
    if raw.seeding is not None:
        seeding = base / raw.seeding
        if not seeding.is_dir():
            what = "not a directory" if seeding.exists() else "no such directory"
            raise Located(("seeding",), f"{what}: {seeding} (a results directory)")
    games = 2 if raw.tiebreak_games is None else raw.tiebreak_games
    return games, TieBreak(raw.tiebreak or TieBreak.HIGHER_SEED), seeding


def schedule_size(
    players: int,
    fmt: TournamentFormat,
    games: Sequence[tuple[Game, int]],
    challengers: int,
    per_pairing: int,
    tiebreak_games: int,
) -> None:
    """Refuse a schedule of more than MAX_MATCHES matches, of `games` (each with its rounds).
    Counted before a match is scheduled: a billion rounds must not fill the memory first."""
    matches = sum(
        rounds * (players // 2) * per_pairing
        if fmt is TournamentFormat.SWISS
        else (players - 1) * (per_pairing + tiebreak_games)
        if fmt is TournamentFormat.KNOCKOUT
        else rounds * _groups(players, challengers, competing(game.roles)) * competing(game.roles)
        for game, rounds in games
    )
    if matches > MAX_MATCHES:
        raise Located(("rounds",), f"the schedule has {matches} matches; at most {MAX_MATCHES}")


def _groups(players: int, challengers: int, roles: int) -> int:
    """How many groups of players meet at a game of `roles` competing roles."""
    if challengers:
        return challengers * math.comb(players - challengers, roles - 1)
    return math.comb(players, roles)


def limits(entry: LimitsEntry, under: Limits, loc: Location) -> Limits:
    """The limits `entry` sets over `under`, or an error at `loc` for one out of range."""
    try:
        return entry.over(under)
    except ConfigError as error:
        raise Located(loc, str(error)) from None


def player(
    entry: PlayerEntry, base: Path, where: Location, cwd: Path | None, names: Collection[str]
) -> PlayerSpec:
    """A player named as none of `names` (the players before it): a GGP player's URL, or a
    command found, to run in its directory (`cwd` if given, else the entry's, relative to
    the config's folder)."""
    if entry.name in names:
        raise Located((*where, "name"), f"player name {entry.name} is used twice")
    if (entry.command is None) == (entry.url is None):
        raise Located(where, "give a player either a command or a url")
    if entry.url is not None:
        try:
            return PlayerSpec.http(entry.name, entry.url)
        except ConfigError as error:
            raise Located((*where, "url"), str(error)) from None
    assert entry.command is not None
    if cwd is None and entry.cwd:
        cwd = base / entry.cwd
    if cwd is not None and not cwd.is_dir():
        raise Located((*where, "cwd"), f"no such directory: {cwd}")
    try:
        return program_spec(
            entry.command, "a person cannot play in a tournament", entry.name, base, cwd, entry.env
        )
    except RefereeError as error:
        raise Located((*where, "command"), str(error)) from None


def capacity(entry: PlayerEntry, spec: PlayerSpec, where: Location) -> int | None:
    """The matches a player may be in at once: URL players only; None for no limit."""
    if spec.kind is PlayerKind.HTTP:
        return _pick(entry.capacity, URL_CAPACITY)
    if entry.capacity is not None:
        raise Located(
            (*where, "capacity"),
            "capacity is for URL players; a program is started for each match it plays",
        )
    return None


def url_player(
    entry: PlayerEntry,
    spec: PlayerSpec,
    where: Location,
    earlier: Sequence[PlayerSpec],
    clocks: Sequence[Clocks],
) -> None:
    """Refuse a URL player whose server is an `earlier` player's too, or one that cannot be
    told its `clocks` at every game (its own, else the game's) in whole seconds (GGP's
    START)."""
    if spec.kind is not PlayerKind.HTTP:
        return
    # A capacity is a server's: two names for one would let it be in two matches.
    same = next(
        (
            other.name
            for other in earlier
            if other.kind is PlayerKind.HTTP and other.address == spec.address
        ),
        None,
    )
    if same is not None:
        raise Located((*where, "url"), f"{entry.url} is player {same}'s URL too")
    for index, settings in enumerate(clocks):
        try:
            ggp_seconds(settings)
        except ConfigError as error:
            # The player's own clock, where it set the one refused; else the game's.
            key = "start_clock" if settings.start_ms < 1000 else "play_clock"
            at = (*where, key) if getattr(entry, key) is not None else ("games", index)
            raise Located(at, f"{error} (player {spec.name})") from None


def anchor(raw: ConfigFile, names: Collection[str]) -> str | None:
    """The player rated 0, one of the tournament's `names`; None puts the mean at 0."""
    if raw.anchor is not None and raw.anchor not in names:
        raise Located(("anchor",), f"{raw.anchor} is not a player of this tournament")
    return raw.anchor
