"""KIF text to GDL sentences: the one reader of rulesheets, which keeps each sentence's line.

A term is a constant (`str`), a variable (`str` starting with `?`) or a compound (`tuple`
of a name and its arguments). GDL is case-insensitive, so every name is read in lower case;
the game managers are not (ggp-base matches a move to the rulesheet's spelling), so a
rulesheet's own spelling of its names is kept apart (`spellings`) and written back
(`respell`) where a manager reads them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias, Union

from referee.errors import RulesheetError

Term: TypeAlias = Union[str, "tuple[Term, ...]"]

# Deeper than any real rulesheet (the public ones reach 27) and shallow enough that the
# recursive walks over terms never meet Python's recursion limit, whatever a bot answers.
MAX_DEPTH = 64
_TOKEN = re.compile(r";[^\n]*|[()]|[^\s();]+|\s+")
# Control characters in a name: no rulesheet means them, and clingo's reader stops at them.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The names ggp-base always writes in lower case, whatever a rulesheet says (its GdlPool's
# keywords), and the connectives, which never occur in a move or a state.
_KEYWORDS = frozenset(
    [
        "init",
        "true",
        "next",
        "role",
        "does",
        "goal",
        "legal",
        "terminal",
        "base",
        "input",
        "distinct",
        "not",
        "or",
        "<=",
    ]
)


@dataclass(frozen=True)
class Sentence:
    """A top-level sentence: a fact (empty body) or a rule, with the line it starts on."""

    head: Term
    body: tuple[Term, ...]
    line: int


def is_variable(term: Term) -> bool:
    """Whether a term is a variable (`?x`)."""
    return isinstance(term, str) and term.startswith("?")


def name_of(term: Term) -> str:
    """The relation or function name of a term: the constant itself, or a compound's head."""
    return term if isinstance(term, str) else str(term[0])


def variables(term: Term) -> set[str]:
    """The variables that occur in a term."""
    if isinstance(term, str):
        return {term} if term.startswith("?") else set()
    found: set[str] = set()
    for part in term[1:]:
        found |= variables(part)
    return found


def format_term(term: Term) -> str:
    """The canonical text of a term: lower case, single spaces, `(name arg ...)`."""
    if isinstance(term, str):
        return term
    return "(" + " ".join(format_term(part) for part in term) + ")"


def parse_terms(
    text: str, where: str, headless: bool = False, fold: bool = True
) -> list[tuple[Term, int]]:
    """Every top-level term of KIF text, each with the line it starts on, its names in lower
    case unless `fold` is False.

    RulesheetError naming `where` and the line for an unbalanced parenthesis, an empty list
    or lists nested more than MAX_DEPTH deep. A GDL list starts with a name; `headless`
    also allows lists that start with a list, as the GGP protocol's lists of sentences and
    of moves do.
    """
    stack: list[tuple[list[Term], int]] = []
    found: list[tuple[Term, int]] = []
    line = 1
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == ";" or token.isspace():
            line += token.count("\n")
            continue
        if token == "(":
            if len(stack) == MAX_DEPTH:
                raise RulesheetError(where, line, f"lists nested more than {MAX_DEPTH} deep")
            stack.append(([], line))
        elif token == ")":
            if not stack:
                raise RulesheetError(where, line, "')' closes nothing")
            items, start = stack.pop()
            if not items:
                raise RulesheetError(where, start, "empty list '()'")
            if is_variable(items[0]) or (isinstance(items[0], tuple) and not headless):
                raise RulesheetError(
                    where, start, f"a list must start with a name, not {format_term(items[0])}"
                )
            term: Term = tuple(items)
            if stack:
                stack[-1][0].append(term)
            else:
                found.append((term, start))
        else:
            control = _CONTROL.search(token)
            if control:
                raise RulesheetError(
                    where, line, f"a control character, U+{ord(control.group()):04X}, in a name"
                )
            atom = token.lower() if fold else token
            if stack:
                stack[-1][0].append(atom)
            else:
                found.append((atom, line))
    if stack:
        raise RulesheetError(where, stack[-1][1], "'(' is never closed")
    return found


def folded(term: Term) -> Term:
    """A term with every name in lower case, as GDL reads it."""
    if isinstance(term, str):
        return term.lower()
    return tuple(folded(part) for part in term)


def spellings(text: str) -> dict[str, str]:
    """The names of KIF text whose first spelling there is not lower case: that spelling, by
    its lower case. Variables and GDL's keywords are left out."""
    first: dict[str, str] = {}
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] not in ";()?" and not token.isspace():
            first.setdefault(token.lower(), token)
    return {
        lower: token for lower, token in first.items() if token != lower and lower not in _KEYWORDS
    }


def respell(text: str, spelling: Mapping[str, str]) -> str:
    """Canonical KIF text (a move, a fact) with each name written as `spelling` has it."""
    if not spelling:
        return text
    return _TOKEN.sub(lambda match: spelling.get(match.group(), match.group()), text)


def one_line(text: str) -> str:
    """A rulesheet on one line, as GGP managers send it: its sentences, canonical, no comments."""
    return " ".join(format_term(term) for term, _line in parse_terms(text, "rulesheet"))


def parse_rulesheet(text: str, where: str) -> tuple[Sentence, ...]:
    """The sentences of a rulesheet; RulesheetError for text that is not GDL's shape."""
    sentences = []
    for term, line in parse_terms(text, where):
        if isinstance(term, tuple) and term[0] == "<=":
            if len(term) < 2:
                raise RulesheetError(where, line, "a rule '(<= ...)' has no head")
            sentences.append(Sentence(term[1], term[2:], line))
        else:
            sentences.append(Sentence(term, (), line))
    if not sentences:
        raise RulesheetError(where, 1, "the rulesheet is empty: no roles, no rules")
    return tuple(sentences)
