"""Charts as SVG, drawn once when the report is written: the ratings with their intervals,
each player's answer times over a match against the play clock, and a knockout's bracket."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from referee.records.transcript import Transcript
from referee.report.colours import role_colour
from referee.tournaments.knockout import round_name

WIDTH = 640
ROW = 26
LEFT = 120
PAD = 24


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values spread over [low, high], for an axis."""
    span = max(high - low, 1e-9)
    raw = span / count
    step = min((m * 10**e for e in range(-3, 7) for m in (1, 2, 5)), key=lambda s: abs(s - raw))
    first = -(-low // step) * step
    return [first + k * step for k in range(int((high - first) // step) + 1)]


def ratings_chart(records: Sequence[dict[str, Any]]) -> str:
    """Each player's Elo as a dot on a line from the low to the high end of its interval."""
    if not records:
        return ""
    low = min(min(r["elo_low"], r["elo"]) for r in records)
    high = max(max(r["elo_high"], r["elo"]) for r in records)
    low, high = min(low, 0.0), max(high, 0.0)
    margin = max((high - low) * 0.05, 10.0)
    low, high = low - margin, high + margin
    height = PAD * 2 + ROW * len(records)

    def x(value: float) -> float:
        return LEFT + (WIDTH - LEFT - PAD) * (value - low) / (high - low)

    parts = []
    for tick in _ticks(low, high):
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="{PAD - 6}" x2="{x(tick):.1f}" y2="{height - PAD}"'
            f' class="{"zero" if tick == 0 else "grid"}"/>'
            f'<text x="{x(tick):.1f}" y="{height - PAD + 14}" class="tick">{tick:+.0f}</text>'
        )
    for index, record in enumerate(records):
        y = PAD + ROW * index + ROW / 2
        name = escape(record["player"])
        parts.append(
            f'<g class="rating" data-player="{name}"><title>{name}: {record["elo"]:+.0f}'
            f" ({record['elo_low']:+.0f} to {record['elo_high']:+.0f})</title>"
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" class="name">{name}</text>'
            f'<line x1="{x(record["elo_low"]):.1f}" y1="{y:.1f}" x2="{x(record["elo_high"]):.1f}"'
            f' y2="{y:.1f}" class="interval"/>'
            f'<circle cx="{x(record["elo"]):.1f}" cy="{y:.1f}" r="5" class="elo"/></g>'
        )
    return _svg("ratings", WIDTH, height, "".join(parts))


def times_chart(transcript: Transcript, roles: Sequence[str]) -> str:
    """Each role's answer time at each step, the play clock as a dashed line, and a ring on
    each step where a role faulted."""
    steps = transcript.steps
    clock = transcript.clocks.get("play_ms", 0)
    times = [t for step in steps for t in step.times_ms.values()]
    top = max([clock, *times, 1.0]) * 1.08
    height = 220
    # A forfeit's step, after the last played, has its fault's ring.
    last = max(transcript.last_step, 1)

    def x(step: int) -> float:
        return LEFT / 2 + (WIDTH - LEFT / 2 - PAD) * (step - 1) / max(last - 1, 1)

    def y(ms: float) -> float:
        return height - PAD - (height - 2 * PAD) * ms / top

    parts = []
    for tick in _ticks(0, top):
        parts.append(
            f'<line x1="{LEFT / 2}" y1="{y(tick):.1f}" x2="{WIDTH - PAD}" y2="{y(tick):.1f}"'
            f' class="grid"/><text x="{LEFT / 2 - 6}" y="{y(tick) + 4:.1f}" class="tick left">'
            f"{tick:.0f}</text>"
        )
    if clock:
        parts.append(
            f'<line x1="{LEFT / 2}" y1="{y(clock):.1f}" x2="{WIDTH - PAD}" y2="{y(clock):.1f}"'
            f' class="clock"/><text x="{WIDTH - PAD}" y="{y(clock) - 4:.1f}" class="tick right">'
            f"play clock {clock} ms</text>"
        )
    for index, role in enumerate(roles):
        points = [(s.step, s.times_ms[role]) for s in steps if role in s.times_ms]
        line = " ".join(f"{x(step):.1f},{y(ms):.1f}" for step, ms in points)
        # The role's colour on the board: its class, as the board's pieces have it.
        colour = role_colour(role, roles)
        parts.append(
            f'<polyline points="{line}" class="times {colour}" data-role="{escape(role)}"/>'
        )
        parts.append(
            f'<text x="{LEFT / 2 + 110 * index}" y="12" class="legend {colour}"'
            f' text-anchor="start">{escape(role)}</text>'
        )
    for fault in transcript.faults:
        if fault.step < 1:
            continue
        ms = fault.time_ms if fault.time_ms is not None else clock
        parts.append(
            f'<circle cx="{x(fault.step):.1f}" cy="{y(ms):.1f}" r="6" class="fault"'
            f' data-step="{fault.step}"><title>step {fault.step}, {escape(fault.role)}:'
            f" {escape(str(fault.kind))}</title></circle>"
        )
    return _svg("times", WIDTH, height, "".join(parts))


def _svg(kind: str, width: int, height: int, body: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" width="{width}"'
        f' height="{height}" viewBox="0 0 {width} {height}">{body}</svg>'
    )


BRACKET_COLUMN = 190
BRACKET_BOX = 44
BRACKET_GAP = 10


def bracket_chart(knockout: dict[str, Any]) -> str:
    """A knockout's bracket: a column per round, a box per tie with its two players (seed,
    name, points), the one who went on in bold, each box joined to the tie its winner
    plays next. Rounds not yet known are left out."""
    rounds = knockout["rounds"]
    if not rounds:
        return ""
    first = len(rounds[0])
    height = PAD * 2 + first * (BRACKET_BOX + BRACKET_GAP)
    width = PAD * 2 + BRACKET_COLUMN * len(rounds)

    def centre(round_: int, index: int) -> float:
        span = (BRACKET_BOX + BRACKET_GAP) * 2**round_
        return PAD + span * index + span / 2

    total = (2 * first).bit_length() - 1  # the rounds of the whole bracket
    parts = []
    for number, ties in enumerate(rounds):
        x = PAD + BRACKET_COLUMN * number
        name = round_name(number + 1, total).removeprefix("the ")
        parts.append(f'<text x="{x + 6}" y="{PAD - 8}" class="round-name">{escape(name)}</text>')
        for index, tie in enumerate(ties):
            y = centre(number, index) - BRACKET_BOX / 2
            if number + 1 < len(rounds):
                after = centre(number + 1, index // 2)
                edge, middle = x + BRACKET_COLUMN - 24, x + BRACKET_COLUMN - 12
                parts.append(
                    f'<path class="link" d="M{edge:.1f},{y + BRACKET_BOX / 2:.1f}'
                    f' H{middle:.1f} V{after:.1f} H{x + BRACKET_COLUMN:.1f}"/>'
                )
            lines = []
            for side in (0, 1):
                name = tie["players"][side]
                seed = tie["seeds"][side]
                if name is None:
                    text, won = "bye", False
                else:
                    points = f" {tie['points'][side]:g}" if tie["decided_by"] != "bye" else ""
                    text, won = f"({seed}) {name}{points}", tie["winner"] == name
                lines.append(
                    f'<text x="{x + 6}" y="{y + 17 + side * 20:.1f}"'
                    f' class="{"won" if won else "entrant"}">{escape(text)}</text>'
                )
            how = tie["decided_by"] or "to play"
            parts.append(
                f'<g class="tie" data-round="{number + 1}"><title>{escape(how)}</title>'
                f'<rect x="{x}" y="{y:.1f}" width="{BRACKET_COLUMN - 24}" height="{BRACKET_BOX}"/>'
                f"{''.join(lines)}</g>"
            )
    return _svg("bracket", width, height, "".join(parts))
