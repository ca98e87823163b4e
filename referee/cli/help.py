"""Help in plain words: arguments and options by the names their values go by, never the
Python types behind them, and examples kept as they are written. And help and shell
completion at once: no value converted that nothing will use."""

from __future__ import annotations

import re
from typing import Any

# Typer carries its own copy of click, and its commands take that copy's types.
from typer import _click as click
from typer._click.exceptions import UsageError
from typer._coercion import RuntimeParam, build_runtime_param
from typer.core import TyperCommand, TyperGroup, _TyperParameter

# The range click adds to an option's help (`x>=1`, `0<=x<=9223372036854775807`): the
# option's own words say what values make sense, and a bad one is refused with its range.
_RANGE = re.compile(r"^(?:[-\d.]+<=?)?x(?:[<>]=?[-\d.]+)?$")


class _AsGiven(RuntimeParam):
    """A value left as the command line gave it: a line being completed runs nothing."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: click.Context) -> Any:
        return value


class _WhenGiven(RuntimeParam):
    """A value converted as Typer converts it, by the pydantic adapter Typer builds for it
    only once there is a value: a parameter left out (None) needs none. Without it, every
    `referee COMMAND --help` would import pydantic to convert the top level's options that
    were not given."""

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: click.Context) -> Any:
        param._runtime_param = build_runtime_param(param.type_descriptor)
        return param._runtime_param.coerce(value, param=param, ctx=ctx)


def _convert_lightly(command: click.Command, ctx: click.Context) -> None:
    """Let the parameters of `command` convert their values only when there is one to
    convert, and not at all while a command line is being completed. Typer keeps the way
    a parameter's values are converted in `_runtime_param`, built on first use."""
    kind = _AsGiven if ctx.resilient_parsing else _WhenGiven
    for param in command.get_params(ctx):
        if not isinstance(param, _TyperParameter):
            continue
        if param._runtime_param is None or isinstance(param._runtime_param, _AsGiven):
            info = param.type_descriptor
            param._runtime_param = kind(info.parameter_info, info.annotation)


class PlainGroup(TyperGroup):
    """A group of commands whose options are converted only when given (`_convert_lightly`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _convert_lightly(self, ctx)
        return super().parse_args(ctx, args)


class PlainCommand(TyperCommand):
    """A command whose usage line and help name each argument by its metavar alone, and
    whose usage errors name it; its values are converted only when given
    (`_convert_lightly`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _convert_lightly(self, ctx)
        try:
            return super().parse_args(ctx, args)
        except UsageError as error:
            # Click's parser leaves out the command of an option missing its value.
            error.ctx = error.ctx or ctx
            raise

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name, text = record
            text = _without_range(text)
            if param.param_type_name == "argument":
                arguments.append((_name(param), text))
            else:
                options.append((name, text))
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _name(argument: click.Parameter) -> str:
    name = argument.metavar or (argument.name or "").upper()
    return name + ("..." if argument.nargs != 1 else "")


def _without_range(text: str) -> str:
    """The help text without click's range among its bracketed notes."""
    body, bracket, notes = text.rpartition("  [")
    if not bracket:
        return text
    kept = [note for note in notes.rstrip("]").split("; ") if not _RANGE.match(note)]
    return f"{body}  [{'; '.join(kept)}]" if kept else body
