"""The `referee` application: its commands in the order its help lists them, and its entry
point."""

import itertools
import shlex
import sys
from collections.abc import Callable
from typing import Annotated

import typer
from typer._click.exceptions import NoArgsIsHelpError

import referee
from referee.cli import arena, games, matches, players, tournaments
from referee.cli.failures import EXIT_INTERRUPTED, say_error
from referee.cli.help import PlainCommand, PlainGroup

# Plain help, as click formats it: option names and metavars in words, never Python types.
app = typer.Typer(cls=PlainGroup, rich_markup_mode=None)
app.add_typer(arena.app, name="arena")

# The commands by name, in the order `referee --help` lists them; each module holds a group.
_COMMANDS: list[tuple[str, Callable[..., None]]] = [
    ("games", games.games),
    ("rules", games.rules),
    ("random", games.random_game),
    ("conformance", games.conformance),
    ("play", matches.play),
    ("tournament", tournaments.tournament),
    ("standings", tournaments.standings),
    ("validate", players.validate_command),
    ("new-bot", players.new_bot_command),
    ("report", tournaments.report_command),
    ("replay", matches.replay_command),
    ("export", matches.export),
    ("import", matches.import_command),
    ("serve", players.serve),
    ("doctor", players.doctor),
]
for _name, _command in _COMMANDS:
    app.command(_name, cls=PlainCommand)(_command)


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"referee {referee.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Referee and match runner for game-playing bots.

    \b
    Start here:
      referee games                          the games and their roles
      referee rules ticblock                 how a game is played
      referee new-bot python my-bot          a starter bot to make your own
      referee validate 'python3 bot.py'      is my bot fit for a tournament?
      referee play ticblock -p xcplayer='python3 bot.py' -p obplayer=random
      referee tournament matches/demo.yaml   a round-robin, with standings
    """


def _quoting_hint(args: list[str]) -> str:
    """For arguments the shell split: how to quote a player command that has spaces."""
    for index, word in enumerate(args):
        if word.startswith("--player="):
            option, value = "--player", word.removeprefix("--player=")
        elif word in ("--player", "-p") and index + 1 < len(args):
            option, value = word, args[index + 1]
            index += 1
        elif word == "validate" and index + 1 < len(args):
            option, value = "validate", args[index + 1]
            index += 1
        else:
            continue
        rest = list(itertools.takewhile(lambda w: not w.startswith("-"), args[index + 1 :]))
        if any("=" in word for word in rest):
            return "each role needs a --player of its own: --player ROLE=PLAYER --player ..."
        if rest:
            whole = shlex.quote(" ".join([value, *rest]))
            return f"a command with spaces must be quoted: {option} {whole}"
    return ""


def main(args: list[str] | None = None) -> None:
    """Entry point of the `referee` console script: a usage error is one line, exit 2."""
    args = sys.argv[1:] if args is None else args
    try:
        code = app(args or ["--help"], prog_name="referee", standalone_mode=False)
    except NoArgsIsHelpError as error:
        # `referee arena` alone, as `referee` alone: its help, which is no error.
        typer.echo(error.ctx.get_help() if error.ctx is not None else error.format_message())
        code = 0
    except typer.TyperException as error:
        # Typer's own usage errors carry the command they were found in (`ctx`).
        context = getattr(error, "ctx", None)
        command = context.command_path if context is not None else "referee"
        message = error.format_message()
        hint = _quoting_hint(args) if "unexpected extra argument" in message else ""
        say_error(f"{command}: {message} ({hint or f'see {command} --help'})")
        code = error.exit_code
    except typer.Abort:
        say_error("interrupted")
        code = EXIT_INTERRUPTED
    sys.exit(code or 0)
