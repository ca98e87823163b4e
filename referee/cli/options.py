"""The options and arguments that several commands share, and the seed --seed leaves to chance."""

from __future__ import annotations

import functools
import inspect
import random
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from referee.games import GAMES, StateLimits
from referee.sandbox.limits import Limits
from referee.tournaments.formats import Format

JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
GameArgument = Annotated[
    str,
    typer.Argument(
        metavar="GAME",
        help=f"The game: {', '.join(GAMES)}, or the path of a GDL rulesheet (.kif).",
        show_default=False,
    ),
]
ShowOption = Annotated[bool, typer.Option("--show", help="Print the board after every step.")]
FormatOption = Annotated[
    Format,
    typer.Option(
        "--format", metavar="|".join(Format), help="How to print the standings.", show_choices=False
    ),
]
StartClockOption = Annotated[int, typer.Option(metavar="MS", help="Time to answer ready, ms.")]
PlayClockOption = Annotated[int, typer.Option(metavar="MS", help="Time for each move, ms.")]
TraceOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Write every line exchanged with the players to FILE: time, match, role, direction.",
    ),
]
# Where a match's transcript goes when no --out says otherwise: RESULTS_DIR/ID.json.
RESULTS_DIR = Path("matches") / "results"
TranscriptOutOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Transcript file (default: matches/results/ID.json)."),
]
SigningKeyOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Private key that signs the transcripts (default: signing.key beside them).",
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--key",
        metavar="KEY",
        help="Public key the transcripts must be signed with: ed25519:BASE64, or a signing.pub"
        " (default: the results directory's signing.pub, if it has one).",
    ),
]


F = TypeVar("F", bound=Callable[..., None])

# The option of each limit: what its value is called, and what it limits.
_LIMIT_OPTIONS = {
    "memory_mb": ("MIB", "Memory of a player's processes together, MiB."),
    "cpu_s": ("SECONDS", "CPU seconds per match of a player."),
    "processes": ("N", "Processes and threads a player may have."),
    "open_files": ("N", "Open files per player process."),
    "file_size_mb": ("MIB", "Largest file a player may write, MiB."),
    "disk_mb": ("MIB", "What a player's private directory (HOME, TMPDIR) may hold, MiB."),
}
# The same for the limits of computing one state of a rulesheet played one state at a time.
_STATE_OPTIONS = {
    "memory_mb": ("MIB", "Memory for computing one state of a GDL game, MiB."),
    "seconds": ("SECONDS", "Time for computing one state of a GDL game."),
}


def _options_of(
    record: type[Any], parameter: str, prefix: str, table: dict[str, tuple[str, str]]
) -> Callable[[F], F]:
    """Give a command an option per field of the dataclass `record` (named `prefix` and the
    field), handed to it as one `parameter: record`."""

    def decorate(command: F) -> F:
        default = record()
        signature = inspect.signature(command, eval_str=True)
        options = [
            inspect.Parameter(
                prefix + item.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=getattr(default, item.name),
                annotation=Annotated[
                    type(getattr(default, item.name)),
                    typer.Option(
                        # Whole units, or for seconds any positive time.
                        min=1 if isinstance(getattr(default, item.name), int) else 0.001,
                        metavar=table[item.name][0],
                        help=table[item.name][1],
                    ),
                ],
            )
            for item in fields(record)
        ]
        kept = [p for p in signature.parameters.values() if p.name != parameter]

        @functools.wraps(command)
        def run(*args: object, **kwargs: Any) -> None:
            values = {item.name: kwargs.pop(prefix + item.name) for item in fields(record)}
            command(*args, **{parameter: record(**values)}, **kwargs)

        run.__signature__ = signature.replace(parameters=[*kept, *options])  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate


# Every limit of a player, handed to the command as one `limits: Limits`.
limit_options = _options_of(Limits, "limits", "", _LIMIT_OPTIONS)
# The limits of a GDL game's states, handed to the command as one `states: StateLimits`.
state_options = _options_of(StateLimits, "states", "state_", _STATE_OPTIONS)


def fresh_seed(seed: int | None) -> int:
    """The seed `--seed` gave, or a fresh one."""
    return random.SystemRandom().randrange(2**31) if seed is None else seed
