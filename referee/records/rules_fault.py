"""A transcript's fault of the rules checked: its record, and against what the rules meet
where it was recorded on replay."""

from __future__ import annotations

from referee.errors import ConfigError, GameFault, StateLimit, StateLimitFault
from referee.games import Game, GdlGame, StateLimits
from referee.games.gdl.limits import DEFAULT_LIMITS
from referee.protocol import EndReason
from referee.records.replayed import mismatch
from referee.records.transcript import RulesFault, Transcript, state_limits


def recorded_limits(transcript: Transcript) -> StateLimits:
    """The limits a match's states were computed within, as far as its record says: its
    own, else those of its rules fault (a record made before the match recorded its own);
    else the defaults."""
    fault = transcript.rules_fault
    recorded = [(transcript.state_memory_mb, transcript.state_seconds)]
    if fault is not None:
        recorded.append((fault.state_memory_mb, fault.state_seconds))
    for memory_mb, seconds in recorded:
        if memory_mb is not None and seconds is not None:
            try:
                return StateLimits(memory_mb, seconds)
            except ConfigError:
                return DEFAULT_LIMITS  # told as a discrepancy by the header's check
    return DEFAULT_LIMITS


def check_state_limits_header(transcript: Transcript, game: Game) -> None:
    """A match's own limits of a state: both or neither, limits a state can have, only for
    a GDL game, and those of its rules fault if that records them too."""
    memory_mb, seconds = transcript.state_memory_mb, transcript.state_seconds
    if memory_mb is None and seconds is None:
        return
    if memory_mb is None or seconds is None:
        raise mismatch("state_limits", "one limit of a state recorded without the other")
    if not isinstance(game, GdlGame):
        raise mismatch(
            "state_limits",
            f"the limits of a state recorded, but the states of {game.id} are computed under"
            " no limits",
        )
    try:
        StateLimits(memory_mb, seconds)
    except ConfigError as error:
        raise mismatch("state_limits", str(error)) from None
    fault = transcript.rules_fault
    faults_own = None if fault is None else (fault.state_memory_mb, fault.state_seconds)
    if faults_own not in (None, (None, None), (memory_mb, seconds)):
        raise mismatch("rules_fault", "its limits of a state are not the match's")


def check_rules_fault_header(transcript: Transcript, game: Game) -> None:
    """A recorded fault of the rules, before the replay: at the state after the last step, of
    an aborted match, its limits those a state of `game` can have."""
    fault = transcript.rules_fault
    if fault is None:
        return
    if transcript.end_reason != EndReason.ABORTED:
        raise mismatch(
            "end", f"recorded as {transcript.end_reason}, but the rules failed the match"
        )
    if fault.step != len(transcript.steps):
        raise mismatch(
            "rules_fault",
            f"at state {fault.step}, but the match ends after step {len(transcript.steps)}",
        )
    if fault.limit is not None and fault.limit not in set(StateLimit):
        raise mismatch("rules_fault", f"unknown limit {fault.limit!r}")
    if not isinstance(game, GdlGame):
        # A built-in game's engine computes every state: none can pass a limit, and
        # none was given one. (A GDL game compiled whole here may have been played one
        # state at a time on a slower machine: its state computes here, checked below.)
        unlimited = f"the states of {game.id} are computed under no limits"
        if fault.limit is not None:
            raise mismatch("rules_fault", f"past its {fault.limit} limit, but {unlimited}")
        if fault.state_memory_mb is not None or fault.state_seconds is not None:
            raise mismatch("rules_fault", f"the limits of a state recorded, but {unlimited}")
    if (fault.state_memory_mb is None) != (fault.state_seconds is None):
        raise mismatch("rules_fault", "one limit of a state recorded without the other")
    if fault.state_memory_mb is not None and fault.state_seconds is not None:
        try:
            StateLimits(fault.state_memory_mb, fault.state_seconds)
        except ConfigError as error:
            raise mismatch("rules_fault", str(error)) from None


def rules_fault_note(fault: RulesFault, found: GameFault | None, game: Game) -> str | None:
    """The recorded fault of the last state against what the rules meet there here,
    `found` (None: the state computes). What every machine meets alike must be recorded
    as met; what depends on the machine (a deadline; which of two limits a state passes
    first) is noted, if its detail is one the limits could have given."""
    at = f"state {fault.step}"
    passed = found.limit if isinstance(found, StateLimitFault) else None
    if found is not None and passed is None:
        # A fault of the rules as written, or of their grounder: the same on any machine.
        if fault.limit is not None:
            raise mismatch(
                "rules_fault",
                f"recorded as past its {fault.limit} limit, but the rules fail at {at} as"
                f" written: {found}",
            )
        if fault.detail != str(found):
            raise mismatch("rules_fault", f"the rules fail at {at} with another detail: {found}")
        return None
    if passed is not None and passed == fault.limit:
        if fault.detail != str(found):
            raise mismatch(
                "rules_fault",
                f"{at} passes its {passed} limit here with another detail: {found}",
            )
        return None
    if found is None and fault.limit != StateLimit.TIME:
        said = f"past its {fault.limit} limit" if fault.limit else "a fault of the rules"
        raise mismatch("rules_fault", f"{at} computes here, yet it is recorded as {said}")
    _check_unreproduced(fault)
    if found is None:
        limits = state_limits(game)
        within = f"within {limits.seconds:g} s" if limits else "(the game compiled whole)"
        return f"{at} computes here {within}; the match's machine gave up on it: {fault.detail}"
    elif fault.limit is None:
        return (
            f"{at} passes its {passed} limit here, so the fault of the rules recorded there"
            f" cannot be checked: {fault.detail}"
        )
    else:
        return (
            f"{at} passes its {passed} limit here, its {fault.limit} limit on the match's"
            f" machine (which comes first depends on the machine): {fault.detail}"
        )


# The most a rules fault's detail that the replay cannot reproduce may have: the referee's own
# is a line (the rulesheet's path and the limit).
DETAIL_CHARS = 1_000
# The setting each limit's fault names (the referee's texts: referee/games/gdl/remote.py).
_LIMIT_SETTINGS = {StateLimit.MEMORY: "state_memory_mb", StateLimit.TIME: "state_seconds"}


def _check_unreproduced(fault: RulesFault) -> None:
    """A detail the replay does not reproduce is at most a line, naming the limit passed."""
    if len(fault.detail) > DETAIL_CHARS:
        raise mismatch(
            "rules_fault",
            f"a detail of {len(fault.detail):,} characters, where one the replay does not"
            f" reproduce has at most {DETAIL_CHARS:,}",
        )
    setting = _LIMIT_SETTINGS[StateLimit(fault.limit)] if fault.limit else None
    if setting is not None and setting not in fault.detail:
        raise mismatch(
            "rules_fault", f"past its {fault.limit} limit, but its detail names no {setting}"
        )
