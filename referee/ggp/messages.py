"""The messages of the GGP HTTP protocol: the one home of their syntax, both ways.

A GGP game manager POSTs one KIF list per request to a player and reads one term back, the
forms that ggp-base's GameServer and players use (`docs/ggp.md`):

    (START <id> <role> (<rules>) <startclock> <playclock>)   -> ready | busy
    (PLAY <id> NIL) first, then (PLAY <id> (<m1> ... <mn>))  -> a move
    (STOP <id> (<m1> ... <mn>))                              -> done
    (ABORT <id>)                                             -> aborted
    (INFO)                                                   -> ((name X) (status available))
    (PREVIEW (<rules>) <previewclock>)                       -> (anything)

The moves are the previous joint move in role order; clocks are whole seconds. A game of
imperfect information (GDL-II) tells a player only its own move and what it sees, in the
form the Dresden GGP server used for them:

    (PLAY <id> <turn> <lastmove> <percepts>)                 -> a move
    (STOP <id> <turn> <lastmove> <percepts>)                 -> done

with <turn> 0 at the first PLAY, one more at each PLAY or STOP after it, and <lastmove> and
<percepts> NIL at the first (a list of terms, or NIL for none, after). The head is
read in any case; START may carry more arguments than five, which are ignored, as ggp-base
does. Every name comes back in lower case, as GDL is read (a match id too, on both sides),
but the rules keep the manager's spelling: a manager matches a move to it, case and all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from referee.errors import RulesheetError
from referee.games.gdl.syntax import Term, folded, format_term, one_line, parse_terms

NIL = "nil"
# What a plain name holds: a KIF atom that is also a file name in any directory.
_NOT_PLAIN = re.compile(r"[^A-Za-z0-9_.+-]")


class MessageError(ValueError):
    """Text that is not one of the protocol's requests or replies, and why."""


@dataclass(frozen=True)
class Start:
    match_id: str
    role: str
    # The rulesheet's sentences on one line, canonical but for the case of its names, which
    # is the manager's, without the enclosing list.
    rules: str
    start_clock_s: int
    play_clock_s: int


@dataclass(frozen=True)
class Seen:
    """What a GDL-II PLAY or STOP tells a player of the step before it: the turn, and its own
    last move and percepts (None at the first PLAY)."""

    turn: int
    move: str | None
    percepts: tuple[str, ...]


@dataclass(frozen=True)
class Play:
    match_id: str
    # The previous joint move in role order; None on the first turn (NIL), and in GDL-II.
    moves: tuple[str, ...] | None
    # In GDL-II, what the player is told instead.
    seen: Seen | None = None


@dataclass(frozen=True)
class Stop:
    match_id: str
    moves: tuple[str, ...] | None
    seen: Seen | None = None


@dataclass(frozen=True)
class Abort:
    match_id: str


@dataclass(frozen=True)
class Info:
    pass


@dataclass(frozen=True)
class Preview:
    rules: str
    preview_clock_s: int


Request = Start | Play | Stop | Abort | Info | Preview


class Status(Enum):
    """What a player says of itself in reply to INFO."""

    AVAILABLE = "available"
    BUSY = "busy"


def format_request(request: Request) -> str:
    """A request as the text of a POST body."""
    match request:
        case Start(match_id, role, rules, start_s, play_s):
            return f"(START {match_id} {role} ({rules}) {start_s} {play_s})"
        case Play(match_id, _, Seen() as seen):
            return f"(PLAY {match_id} {_seen(seen)})"
        case Stop(match_id, _, Seen() as seen):
            return f"(STOP {match_id} {_seen(seen)})"
        case Play(match_id, moves):
            return f"(PLAY {match_id} {_moves(moves)})"
        case Stop(match_id, moves):
            return f"(STOP {match_id} {_moves(moves)})"
        case Abort(match_id):
            return f"(ABORT {match_id})"
        case Info():
            return "(INFO)"
        case Preview(rules, preview_s):
            return f"(PREVIEW ({rules}) {preview_s})"


def start(match_id: str, role: str, rulesheet: str, start_clock_s: int, play_clock_s: int) -> Start:
    """The START of a match, its rulesheet's text put on one line."""
    return Start(match_id, role, one_line(rulesheet), start_clock_s, play_clock_s)


def plain_name(text: str) -> str:
    """`text` with every character a KIF atom or a file name cannot hold made `_`: the
    referee's match id as a GGP match id, a manager's match id as the name of a log."""
    return _NOT_PLAIN.sub("_", text)


def parse_request(text: str) -> Request:
    """The request a POST body (or a GET path, decoded) spells; MessageError if none."""
    term = _one_term(text, "request", fold=False)
    if not isinstance(term, tuple) or not isinstance(term[0], str):
        raise MessageError(f"a request is a list headed by its name, not {format_term(term)}")
    head, args = term[0].lower(), term[1:]
    if head == "start":
        if len(args) < 5:
            raise MessageError(f"START takes 5 arguments, got {len(args)}")
        match_id, role, rules, start_s, play_s = args[:5]
        return Start(
            _name(match_id, "match id"),
            _name(role, "role"),
            _rules(rules),
            _seconds(start_s, "start clock"),
            _seconds(play_s, "play clock"),
        )
    if head in ("play", "stop") and len(args) == 4:
        match_id = _name(args[0], "match id")
        seen = Seen(_whole(args[1], "turn"), _parse_last_move(args[2]), _parse_moves(args[3]) or ())
        return Play(match_id, None, seen) if head == "play" else Stop(match_id, None, seen)
    if head in ("play", "stop"):
        _count(head, args, 2)
        moves = _parse_moves(args[1])
        match_id = _name(args[0], "match id")
        return Play(match_id, moves) if head == "play" else Stop(match_id, moves)
    if head == "abort":
        _count(head, args, 1)
        return Abort(_name(args[0], "match id"))
    if head == "info":
        _count(head, args, 0)
        return Info()
    if head == "preview":
        _count(head, args, 2)
        return Preview(_rules(args[0]), _seconds(args[1], "preview clock"))
    raise MessageError(f"no request is called {head.upper()}")


def parse_move_reply(text: str) -> str:
    """The move a reply to PLAY names, canonical; MessageError for anything but one term."""
    return format_term(_one_term(text, "reply"))


def format_info(name: str, status: Status) -> str:
    """A player's reply to INFO."""
    return f"((name {name}) (status {status.value}))"


def _one_term(text: str, what: str, fold: bool = True) -> Term:
    try:
        terms = parse_terms(text, what, headless=True, fold=fold)
    except RulesheetError as error:
        raise MessageError(f"the {what} is not KIF: {error.problem}") from None
    if len(terms) != 1:
        raise MessageError(f"the {what} must be one term, got {len(terms)}")
    return terms[0][0]


def _count(head: str, args: tuple[Term, ...], wanted: int) -> None:
    if len(args) != wanted:
        raise MessageError(f"{head.upper()} takes {wanted} argument(s), got {len(args)}")


def _name(term: Term, what: str) -> str:
    if not isinstance(term, str):
        raise MessageError(f"the {what} must be a name, not {format_term(term)}")
    return term.lower()


def _seconds(term: Term, what: str) -> int:
    return _whole(term, what, " of seconds")


def _whole(term: Term, what: str, unit: str = "") -> int:
    if not isinstance(term, str) or not term.isdigit():
        raise MessageError(f"the {what} must be a whole number{unit}, not {format_term(term)}")
    return int(term)


def _rules(term: Term) -> str:
    # A one-sentence rulesheet is still a list of sentences: ((role a)), never (role a).
    if not isinstance(term, tuple) or not all(isinstance(part, tuple) for part in term):
        raise MessageError("the rules must be a list of sentences")
    return " ".join(format_term(sentence) for sentence in term)


def _parse_moves(term: Term) -> tuple[str, ...] | None:
    term = folded(term)
    if term == NIL:
        return None
    if not isinstance(term, tuple):
        raise MessageError(f"the moves must be NIL or a list, not {term}")
    return tuple(format_term(move) for move in term)


def _parse_last_move(term: Term) -> str | None:
    return None if folded(term) == NIL else format_term(folded(term))


def _moves(moves: tuple[str, ...] | None) -> str:
    return NIL.upper() if moves is None else "(" + " ".join(moves) + ")"


def _seen(seen: Seen) -> str:
    move = NIL.upper() if seen.move is None else seen.move
    return f"{seen.turn} {move} {_moves(seen.percepts or None)}"
