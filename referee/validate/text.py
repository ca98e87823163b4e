"""Validate's report as people read it, the one text of it: what `referee validate` prints
and what the arena shows an author as the validate step's log. How to fix what failed comes
first, then every check with its result (a check nothing put to the test is "not run", never
a pass), why it stopped early, where it ran, and the verdict."""

from __future__ import annotations

from referee.plaintext import counted, fit, table
from referee.validate.checks import Report


def report_text(report: Report, width: int | None, kept: str = "") -> str:
    """The report fit to `width` columns (whole for None): how to fix each failing check,
    with its known cause, and the program's last words when it crashed; the checks as a
    table; why it stopped early; the limits, the protections and what they lack (for a GGP
    player at a URL: the requests it was sent and what came back); the verdict, and `kept`
    (where its transcripts are) if given."""
    rows = [(c.name, str(c.verdict), c.description, c.detail) for c in report.checks]
    # One cause may fail several checks: its advice and the program's last words, once.
    advised: dict[tuple[str, str], list[str]] = {}
    last_words: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for check in report.checks:
        if check.advice:
            advised.setdefault((check.advice, check.cause or ""), []).append(check.name)
        for stream, lines in (("output", check.stdout), ("error", check.stderr)):
            if lines:
                last_words.setdefault((stream, lines), []).append(check.name)
    # Each with its known cause, as the report in JSON names it (`cause`).
    fixes = [
        f"how to fix {', '.join(names)}{f' ({cause})' if cause else ''}: {advice}"
        for (advice, cause), names in advised.items()
    ]
    for (stream, lines), names in last_words.items():
        fixes.append(f"{', '.join(names)}: the last lines it wrote to standard {stream}:")
        fixes += [f"    {line}" for line in lines]
    stopped = [report.stopped] if report.stopped else []
    where: list[str] = []
    if report.limits is not None:
        where.append(f"limits: {report.limits.summary()}")
    if report.protections is not None:
        where.append(f"protections: {report.protections.summary()}")
    where += [f"warning: {warning}" for warning in report.warnings]
    if report.protections is None:
        where.append(
            f"checked over HTTP at {' '.join(report.command)}, a server that no limit or"
            " protection of this machine reaches; sent, answered, in what time:"
        )
        where += [f"    {sent.summary()}" for sent in report.requests]
    verdict = (
        f"verdict: {report.summary()}; {counted(report.matches, 'match', 'matches')} in"
        f" {report.seconds:.1f} s (bound {report.bound_s:.0f} s)" + (f"; {kept}" if kept else "")
    )
    first = [*(fit(line, width) for line in fixes), ""] if fixes else []
    return "\n".join(
        [
            *first,
            table(["check", "result", "what", "detail"], rows, width),
            "",
            *(fit(line, width) for line in [*stopped, *where]),
            verdict,
        ]
    )
