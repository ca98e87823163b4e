"""`referee games`, `rules`, `random`, `conformance`: the games and their rules, without players."""

import json
import random
from pathlib import Path
from typing import Annotated

import typer

from referee.cli.failures import EXIT_BAD_INPUT, EXIT_FAILED, say_error, user_errors
from referee.cli.options import GameArgument, JsonOption, ShowOption, fresh_seed
from referee.errors import ConformanceFileError
from referee.games import GAMES, get_game, shipped_rulesheets, shown_path
from referee.policy import MAX_SEED

# What a command runs is imported when it runs (as `from referee.cli import present`): every
# command's help and shell completion start with this module, and need none of it.


def games(as_json: JsonOption = False) -> None:
    """List the games: id, roles and a one-line description.

    \b
    Examples:
      referee games
      referee games --json
    """
    from referee.cli import present

    if as_json:
        rows = [
            {"id": g.id, "roles": list(g.roles), "description": g.description}
            for g in GAMES.values()
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = [(g.id, ", ".join(g.roles), g.description) for g in GAMES.values()]
    typer.echo(present.table_text(["game", "roles", "description"], table))
    shipped = shipped_rulesheets()
    if shipped:
        typer.echo("\nAnd any GDL rulesheet, by its path; these come with it:")
        typer.echo("\n".join(f"  {shown_path(path)}" for path in shipped))


@user_errors
def rules(game: GameArgument) -> None:
    """Explain a game's rules in plain words, with the move syntax and an example move.

    \b
    Example:
      referee rules ticblock
    """
    found = get_game(game)
    typer.echo(f"{found.id}: {found.description}")
    typer.echo(f"Roles, in order: {', '.join(found.roles)}")
    if found.imperfect:
        typer.echo(
            "Imperfect information: after each step a player is told only its own move and"
            " what it sees (`sees`, docs/protocol.md)"
        )
    typer.echo()
    typer.echo(found.rules)
    typer.echo(f"\nExample move: {found.example_move}\n\nInitial position:")
    typer.echo(found.render(found.initial_state()))


@user_errors
def random_game(
    game: GameArgument,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_SEED,
            metavar="N",
            help="Seed of the random movers (default: a fresh one).",
        ),
    ] = None,
    show: ShowOption = False,
) -> None:
    """Play one game between random movers and print every joint move and the goals.

    \b
    Example:
      referee random hex-pie --seed 7 --show
    """
    from referee.cli import present
    from referee.games.playout import random_steps

    found = get_game(game)
    seed = fresh_seed(seed)
    typer.echo(f"{found.id}, seed {seed}")
    print_step = present.step_printer(found, show)
    state = found.initial_state()
    steps = 0
    for steps, (joint, state) in enumerate(random_steps(found, random.Random(seed)), start=1):
        print_step(steps, joint, state)
    goals = ", ".join(
        f"{role} {goal}" for role, goal in zip(found.roles, found.goals(state), strict=True)
    )
    typer.echo(f"goals: {goals} (after {present.counted(steps, 'step')})")


def conformance(
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE", help="Reference files, one JSON game per line."),
    ],
    game: Annotated[
        str | None,
        typer.Option(
            metavar="GAME",
            help="Check under these rules (a game id or a .kif file), not each line's game.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay reference games; check every legal-move set, the end and the goals.

    A line's game is a built-in game, or a rulesheet: `<game>.kif` beside the file or in a
    gdl/ folder of a folder above it.

    \b
    Examples:
      referee conformance tests/conformance/*.jsonl
      referee conformance --game referee/games/rulesheets/ticblock.kif \\
        tests/conformance/ticblock.jsonl
    """
    from referee.records.conformance import check_file

    reports = []
    errors = 0
    rules = get_game(game) if game is not None else None
    for path in files:
        try:
            report = check_file(path, rules)
        except ConformanceFileError as error:
            say_error(str(error))
            errors += 1
            continue
        reports.append(report)
        if not as_json:
            for mismatch in report.mismatches:
                typer.echo(str(mismatch))
            typer.echo(report.summary())
    if as_json:
        typer.echo(json.dumps([report.as_dict() for report in reports], indent=2))
    if errors:
        raise typer.Exit(EXIT_BAD_INPUT)
    if any(report.mismatches for report in reports):
        raise typer.Exit(EXIT_FAILED)
