"""`referee arena`: make an arena, run it, add its authors, and its authors' clients."""

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from referee.cli.failures import EXIT_FAILED, say_error, user_errors
from referee.cli.help import PlainCommand, PlainGroup
from referee.errors import RefereeError

if TYPE_CHECKING:
    from referee.arena.accounts.audit import Action
    from referee.arena.store.db import Database
    from referee.tournaments.cluster import Workers

T = TypeVar("T")

# What a command runs is imported when it runs: every command's help and shell completion
# start with this module, and need none of it. The arena's modules above all bring the web
# server, the database toolkit and Dask.

app = typer.Typer(
    cls=PlainGroup,
    add_completion=False,
    rich_markup_mode=None,
    no_args_is_help=True,
    help="An arena: authors submit bots, which are built, validated and rated on a ladder.",
)
author_app = typer.Typer(
    cls=PlainGroup,
    add_completion=False,
    rich_markup_mode=None,
    no_args_is_help=True,
    help="The arena's authors.",
)
app.add_typer(author_app, name="author")

DirArgument = Annotated[
    Path, typer.Argument(metavar="DIR", help="The arena's directory.", show_default=False)
]
UrlArgument = Annotated[
    str, typer.Argument(metavar="URL", help="The arena: http://HOST:PORT.", show_default=False)
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
WorkersOption = Annotated[
    int | None,
    typer.Option(min=1, metavar="N", help="Play the matches on N local worker processes."),
]
ClusterOption = Annotated[
    str | None,
    typer.Option(metavar="ADDRESS", help="Play the matches on a Dask scheduler's workers."),
]
TokenOption = Annotated[
    str,
    typer.Option(
        "--token",
        metavar="TOKEN",
        envvar="REFEREE_TOKEN",
        show_envvar=False,
        help="Your token; or set REFEREE_TOKEN, which keeps it out of your shell's history.",
    ),
]


@app.command("init", cls=PlainCommand)
@user_errors
def init(
    directory: DirArgument,
    config: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="The arena's config (default: a sample to edit)."),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(
            metavar="URL", help="A SQLAlchemy database URL (default: SQLite in DIR/arena.db)."
        ),
    ] = None,
) -> None:
    """Make an arena in DIR: its config, database, signing key and organiser's token.

    \b
    Example:
      referee arena init class-arena --config arena.yaml
    """
    from referee.arena.store.home import init_arena

    token = init_arena(directory, config, database)
    typer.echo(f"arena: {directory} (config: {directory / 'arena.yaml'})")
    typer.echo(f"organiser token (shown once, kept only as its hash): {token}")


@author_app.command("add", cls=PlainCommand)
@user_errors
def author_add(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The author's name.")],
) -> None:
    """Add an author to the arena in DIR and print their token (shown once).

    \b
    Example:
      referee arena author add class-arena ada
    """
    from referee.arena.store.home import add_author, open_arena

    arena = open_arena(directory)
    try:
        token = add_author(arena, name)
    finally:
        arena.close()
    typer.echo(f"{name}'s token (shown once, kept only as its hash): {token}")


@author_app.command("token", cls=PlainCommand)
@user_errors
def author_token(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The author's name.")],
) -> None:
    """Replace an author's token and print the new one (shown once). The old token stops
    working at once, and every browser signed in with it is signed out. Also the way back
    in for an organiser who lost theirs.

    \b
    Example:
      referee arena author token class-arena ada
    """
    from referee.arena.accounts import audit, credentials

    token = _account_changed(
        directory, name, credentials.replace_token, audit.Action.TOKEN_REPLACED
    )
    typer.echo(f"{name}'s new token (shown once, kept only as its hash): {token}")


@author_app.command("revoke", cls=PlainCommand)
@user_errors
def author_revoke(
    directory: DirArgument,
    name: Annotated[str, typer.Argument(metavar="NAME", help="The author's name.")],
) -> None:
    """Revoke an author's token without giving a new one: it stops working at once, and
    every browser signed in with it is signed out, until `author token` gives them another.

    \b
    Example:
      referee arena author revoke class-arena ada
    """
    from referee.arena.accounts import audit, credentials

    ended = _account_changed(directory, name, credentials.revoke_token, audit.Action.TOKEN_REVOKED)
    typer.echo(f"{name}'s token is revoked; {ended} signed-in browser(s) signed out")


def _account_changed(
    directory: Path, name: str, change: "Callable[[Database, str], T]", action: "Action"
) -> T:
    """`change` made to the account of author `name` in the arena in DIR, and written in its
    audit log as the command line's."""
    from referee.arena.accounts import audit
    from referee.arena.store.home import open_arena

    arena = open_arena(directory)
    try:
        done = change(arena.database, name)
        audit.record(arena.database, action, None, audit.COMMAND_LINE, f"author {name}")
    finally:
        arena.close()
    return done


@app.command("serve", cls=PlainCommand)
@user_errors
def serve(
    directory: DirArgument,
    host: Annotated[
        str, typer.Option(metavar="HOST", help="Address to listen on; 0.0.0.0 for every network.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, metavar="N", help="Port to listen on.")
    ] = 8080,
    workers: WorkersOption = None,
    cluster: ClusterOption = None,
) -> None:
    """Run the arena in DIR: its API, the intake and the ladder, until Ctrl-C or SIGTERM.

    \b
    Example:
      referee arena serve class-arena --host 0.0.0.0 --port 8080 --workers 4
    """
    import asyncio

    from referee.arena.service import serve as serve_arena
    from referee.arena.store.home import open_arena
    from referee.arena.store.outages import DatabaseLost
    from referee.arena.store.serving_lock import serving
    from referee.cli.sandbox import prepare_sandbox

    venue = _workers(workers, cluster)
    prepare_sandbox()
    # Absolute: the bots' directories are named from it, and run where the jail puts them.
    arena = open_arena(directory.resolve())

    def ready(url: str) -> None:
        typer.echo(f"arena {directory} listening on {url}")

    def noted(line: str) -> None:
        typer.echo(line, err=True)

    try:
        with serving(arena) as held:
            asyncio.run(serve_arena(arena, host, port, venue, ready, noted, held.keep))
    except DatabaseLost as error:
        # Not a mistake of the command line (exit 2): the arena failed, and says why.
        say_error(str(error))
        raise typer.Exit(EXIT_FAILED) from None
    finally:
        arena.close()
    typer.echo(f"arena {directory} stopped", err=True)


@app.command("final", cls=PlainCommand)
@user_errors
def final(
    directory: DirArgument,
    fmt: Annotated[
        str,
        typer.Option("--format", metavar="FORMAT", help="round-robin, or swiss for a large field."),
    ] = "round-robin",
    rounds: Annotated[
        int,
        typer.Option(
            min=1, max=1000, metavar="N", help="Rounds: of each pairing, or of the Swiss."
        ),
    ] = 1,
    workers: WorkersOption = None,
    cluster: ClusterOption = None,
    as_json: JsonOption = False,
) -> None:
    """The season's last day: close submissions, then play a final among each bot's
    current version (the one on the ladder) on the arena's games and clocks, and print its
    standings. Its results, report and standings go to DIR/final/, and the served arena
    shows them beside the ladder's. Stop `serve` first; run the same command again to
    finish a final that was interrupted.

    \b
    Example:
      referee arena final class-arena --rounds 2 --workers 2
    """
    from referee.arena.ladder.final import begin, final_bundles, publish
    from referee.arena.store import bot_bundles
    from referee.arena.store.home import open_arena
    from referee.arena.store.serving_lock import serving
    from referee.cli import present
    from referee.cli.running import run_interruptible
    from referee.cli.sandbox import prepare_sandbox
    from referee.tournaments.cluster import on_cluster
    from referee.tournaments.formats import Format
    from referee.tournaments.runner import run_tournament
    from referee.tournaments.standings_tables import render

    where = _workers(workers, cluster)
    arena = open_arena(directory.resolve())
    with contextlib.ExitStack() as stack:
        stack.callback(arena.close)
        try:
            stack.enter_context(serving(arena))
        except RefereeError as error:
            raise RefereeError(f"{error}: stop it, then run the final") from None
        settings, key = begin(arena, fmt, rounds)
        venue = None
        if where is not None:
            # Workers are sent each bot as built, as the ladder's are: no disk is shared.
            bundles = bot_bundles.bundles_of(arena, final_bundles(arena, settings))
            venue = on_cluster(where, bundles)
        prepare_sandbox(entrant.spec for entrant in settings.players)
        bar = present.TournamentProgress(settings)
        try:
            run_interruptible(
                run_tournament(settings, key, bar, venue=venue),
                "interrupted; run the same command again to play the remaining matches",
                bar.close,
            )
        finally:
            bar.close()
        final = publish(arena, settings.output, key)
    for problem in final.problems:
        say_error(f"left out of the standings: {problem}")
    typer.echo(f"results: {settings.output}", err=True)
    typer.echo(f"report: {final.site.index}", err=True)
    typer.echo(render(final.standings, Format.JSON if as_json else Format.TABLE))
    if final.problems or final.site.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command("submit", cls=PlainCommand)
@user_errors
def submit(
    url: UrlArgument,
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH", help="The bot: a directory with bot.yaml, or a zip or tar.gz of one."
        ),
    ],
    token: TokenOption,
    name: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="The bot's name (default: a directory's bot.yaml's; an archive needs it).",
        ),
    ] = None,
) -> None:
    """Submit a bot, and follow it as it is built and validated, until it reaches the ladder
    (exit 0) or fails (exit 1, with the reason and validate's advice).

    \b
    Example:
      REFEREE_TOKEN=... referee arena submit http://arena.example:8080 mybot/
    """
    from referee.arena import client
    from referee.arena.store.db import player_name

    api = client.Api(url, token)
    done = client.submit(api, path, name, progress=lambda line: typer.echo(line, err=True))
    version = done.version
    typer.echo(f"{player_name(version['bot'], version['number'])}: {version['state']}")
    if version.get("reason"):
        typer.echo(f"reason: {version['reason']}")
    for line in version.get("advice", []):
        typer.echo(f"advice: {line}")
    if not done.reached_ladder:
        raise typer.Exit(EXIT_FAILED)


@app.command("status", cls=PlainCommand)
@user_errors
def status(url: UrlArgument, token: TokenOption, as_json: JsonOption = False) -> None:
    """Your bots (each version's state, reason and validate's advice) and the leaderboard;
    whether submissions are closed, and the final's report once it is played.

    \b
    Example:
      referee arena status http://arena.example:8080 --token TOKEN
    """
    from referee.arena import client

    found = client.status(client.Api(url, token))
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    typer.echo(_status_text(found))


def _status_text(found: dict[str, Any]) -> str:
    from referee.arena.store.db import player_name
    from referee.cli import present

    rows = []
    advice: list[str] = []
    for bot in found["bots"]:
        for version in bot["versions"]:
            player = player_name(bot["name"], version["number"])
            state = version["state"]
            if version.get("place_in_line") is not None:
                state += f", number {version['place_in_line']} in line"
            rows.append((player, state, version.get("reason") or ""))
            advice.extend(f"  {player}: {line}" for line in version.get("advice", []))
    mine = present.table_text(["version", "state", "reason"], rows) if rows else "(no bots yet)"
    board = [
        (
            entry["rank"] or "",
            f"{entry['bot']}.{entry['version']}",
            entry["author"],
            entry["state"],
            _rating(entry["rating"], entry["margin"]),
            entry["matches"],
            entry["faults"],
        )
        for entry in found["leaderboard"]
    ]
    headers = ["rank", "bot", "author", "state", "rating", "matches", "faults"]
    parts = []
    if found["submissions_closed"]:
        parts += ["submissions are closed: the season is over", ""]
    if found["final"]:
        parts += [f"the final's report: {found['final']}", ""]
    parts += [f"{found['author']}'s bots:", mine]
    if advice:
        parts += ["advice:", *advice]
    parts += ["", "leaderboard:", present.table_text(headers, board) if board else "(empty)"]
    return "\n".join(parts)


def _rating(rating: float | None, margin: float | None) -> str:
    if rating is None:
        return ""
    return f"{rating:.0f}" + ("" if margin is None else f" ± {margin:.0f}")


def _workers(count: int | None, address: str | None) -> "Workers | None":
    """Where `--workers` or `--cluster` send the arena's work; None: this process."""
    if count is not None and address is not None:
        raise RefereeError("give --workers or --cluster, not both")
    if count is None and address is None:
        return None
    # Only now: Dask takes a moment to import, which the other commands do not need.
    from referee.tournaments.cluster import Workers

    return Workers(count=count or 0, address=address)
