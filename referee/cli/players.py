"""`referee validate`, `new-bot`, `serve`, `doctor`: a player program judged, begun from a
starter, entered in GGP competitions; and the protections this machine gives it."""

import contextlib
import json
import os
import signal
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from referee.cli.failures import EXIT_FAILED, user_errors
from referee.cli.options import (
    RESULTS_DIR,
    JsonOption,
    PlayClockOption,
    StartClockOption,
    TraceOption,
    limit_options,
    state_options,
)
from referee.errors import ConfigError, RefereeError
from referee.games import GAMES, StateLimits, get_game
from referee.players.starter import SUFFIXES, Language, language_named
from referee.sandbox.limits import Limits

if TYPE_CHECKING:
    from referee.games import Game
    from referee.gateway import Gateway

# What a command runs is imported when it runs: every command's help and shell completion
# start with this module, and need none of it.


def _select_games(text: str, states: StateLimits) -> "list[Game]":
    """`all`, or game ids separated by commas."""
    if text.strip() == "all":
        return list(GAMES.values())
    selected = [get_game(game_id.strip(), states) for game_id in text.split(",") if game_id.strip()]
    if not selected:
        raise RefereeError("--games: name at least one game, or all")
    return selected


@user_errors
@limit_options
@state_options
def validate_command(
    command: Annotated[
        str,
        typer.Argument(
            metavar="COMMAND",
            help="The program, quoted if it has spaces: 'python3 bot.py'; or random or mcts.",
        ),
    ],
    games: Annotated[
        str, typer.Option(metavar="GAMES", help="all, or game ids separated by commas.")
    ] = "all",
    matches_per_role: Annotated[
        int, typer.Option(min=1, metavar="N", help="Matches in one process per game and role.")
    ] = 2,
    start_clock: StartClockOption = 10_000,
    play_clock: PlayClockOption = 1_000,
    as_json: JsonOption = False,
    keep: Annotated[
        Path | None,
        typer.Option(metavar="DIRECTORY", help="Keep the transcripts and logs in this directory."),
    ] = None,
    thorough: Annotated[
        bool,
        typer.Option(
            "--thorough", help="Play every match, even once the verdict is certain to be FAIL."
        ),
    ] = False,
    trace: TraceOption = None,
    *,
    limits: Limits,
    states: StateLimits,
) -> None:
    """Check that a player program is fit for a tournament: play it against random and judge.

    \b
    Examples:
      referee validate 'python3 bot.py'
      referee validate './bot' --games ticblock,quad --trace t.log
    """
    from referee.cli import present
    from referee.cli.running import open_trace, run_interruptible
    from referee.cli.sandbox import prepare_sandbox
    from referee.clock import Clocks, ggp_seconds
    from referee.players.base import PlayerKind
    from referee.players.builtin import program_spec
    from referee.records.files import check_writable_dir
    from referee.validate import Verdict, validate

    selected = _select_games(games, states)
    spec = program_spec(command, "validate checks a program; a person cannot be validated")
    spec = replace(spec, name="submitted", limits=limits)
    clocks = Clocks(start_clock, play_clock)
    if spec.kind is PlayerKind.HTTP:
        ggp_seconds(clocks)
    if keep is not None:
        check_writable_dir(keep, "--keep")
    prepare_sandbox([spec])
    with contextlib.ExitStack() as stack:
        tracer = open_trace(stack, trace)
        workdir = keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="referee-validate-"))
        )
        progress = present.progress_bar(transient=True)
        task = progress.add_task("validate", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        with progress:
            report = run_interruptible(
                validate(
                    spec, selected, matches_per_role, clocks, workdir, advance, thorough, tracer
                ),
                "interrupted; nothing was judged",
                progress.stop,
            )
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        typer.echo(present.validation_report(report, keep))
    if report.verdict is Verdict.FAIL:
        raise typer.Exit(EXIT_FAILED)


@user_errors
def new_bot_command(
    language: Annotated[
        str,
        typer.Argument(
            metavar="LANGUAGE",
            help=f"{', '.join(Language)}, or the suffix of its source ({', '.join(SUFFIXES)}).",
            show_default=False,
        ),
    ],
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="A new or empty directory for the bot.")
    ],
) -> None:
    """Write a starter bot into DIR: a random player, its bot.yaml for an arena, and a
    .gitignore of what its build makes, where it is built.

    Then it prints the commands that build it, if it needs building, and validate it, to run
    from here as they are printed. Edit the source to make it play well.

    \b
    Examples:
      referee new-bot python my-bot
      referee new-bot c my-bot
    """
    from referee.arena.intake.new_bot import new_bot
    from referee.arena.web.guide import starter_offer
    from referee.cli import present

    chosen = language_named(language)
    typer.echo(present.new_bot_lines(new_bot(chosen, directory)))
    lacking = starter_offer(chosen, os.environ.get("PATH", os.defpath)).lacking
    if lacking:
        typer.echo(present.lacking_line(lacking), err=True)


@user_errors
@limit_options
@state_options
def serve(
    command: Annotated[
        str,
        typer.Argument(
            metavar="COMMAND",
            help="The program, quoted if it has spaces: 'python3 bot.py'; or random or mcts.",
        ),
    ],
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="N", help="Port to listen on.")],
    host: Annotated[
        str,
        typer.Option(metavar="HOST", help="Address to listen on; 0.0.0.0 for every network."),
    ] = "127.0.0.1",
    name: Annotated[
        str | None, typer.Option(metavar="NAME", help="The player's name (default: the command's).")
    ] = None,
    logs: Annotated[
        Path,
        typer.Option(metavar="DIRECTORY", help="Where each match's log of the program goes."),
    ] = RESULTS_DIR / "serve",
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            metavar="ADDRESS",
            help="Only this address or network (CIDR) may connect: the game manager's."
            " Repeatable. Without it, anyone who can reach the port can start a match.",
        ),
    ] = None,
    trace: TraceOption = None,
    *,
    limits: Limits,
    states: StateLimits,
) -> None:
    """Enter a line-protocol program in GGP competitions: answer a GGP game manager over HTTP.

    Each START starts the program afresh; one match at a time, a second START is told busy.
    Ctrl-C stops.

    \b
    Examples:
      referee serve ./my-bot/bot --port 9147
      referee serve 'python3 bot.py' --port 9147 --host 0.0.0.0 --allow 10.1.2.3 --name mybot
    """
    import asyncio

    from referee.cli.running import open_trace
    from referee.cli.sandbox import prepare_sandbox
    from referee.gateway import Gateway
    from referee.ggp.door import Door
    from referee.pauses import short_pauses
    from referee.players.base import PlayerKind
    from referee.players.builtin import program_spec
    from referee.players.trace import trace_channel
    from referee.records.files import check_writable_dir

    door = Door.allowing(allow or ())
    spec = program_spec(command, "serve runs a program; a person cannot be served")
    if spec.kind is PlayerKind.HTTP:
        raise ConfigError(f"serve runs a program; {spec.url} is a GGP player already")
    spec = replace(spec, limits=limits)
    player_name = name or Path(spec.argv[-1]).stem
    check_writable_dir(logs, "--logs")
    prepare_sandbox([spec])
    with contextlib.ExitStack() as stack:
        tracer = open_trace(stack, trace)
        channel = trace_channel(tracer, player_name)
        gateway = Gateway(spec, player_name, logs, typer.echo, channel, states, door)
        with short_pauses():
            asyncio.run(_serve(gateway, host, port))
    typer.echo(f"{player_name}: stopped", err=True)


async def _serve(gateway: "Gateway", host: str, port: int) -> None:
    """Answer the game manager until Ctrl-C or SIGTERM, the way serving is meant to end (no
    error): a match under way ends with its program. The loop's end takes the handlers away."""
    import asyncio

    from referee.gateway import serve as serve_gateway

    stop = asyncio.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(number, stop.set)
    try:
        server = await serve_gateway(gateway, host, port)
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise ConfigError(f"cannot listen on {host}:{port}: {reason}") from None
    bound = server.sockets[0].getsockname()[1]
    typer.echo(f"{gateway.name}: a GGP player at http://{host}:{bound} (Ctrl-C stops)")
    if not gateway.door.allowed:
        typer.echo(
            f"referee: warning: anyone who can reach {host}:{bound} can start a match;"
            " --allow ADDRESS lets only the game manager in",
            err=True,
        )
    try:
        await stop.wait()
    finally:
        server.close()
        await gateway.close()


def doctor(as_json: JsonOption = False) -> None:
    """Say which protections against misbehaving players this machine gives.

    \b
    Example:
      referee doctor
    """
    from referee.cli import present
    from referee.sandbox.isolation import machine_protections

    protections = machine_protections()
    if as_json:
        typer.echo(json.dumps(protections.to_json(), indent=2))
        return
    table = [(name, "yes" if active else "NO", how) for name, active, how in protections.rows()]
    typer.echo(present.table_text(["protection", "active", "how"], table))
