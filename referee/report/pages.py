"""The HTML of the report's pages: self-contained, the style and the script inside each
file, so that a page opens from the file system with no server and no network."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape, unescape
from importlib import resources
from typing import Any

_ASSETS = resources.files("referee.report") / "assets"


def asset(name: str) -> str:
    """The text of one of the report's assets (`report.js`, `report.css`)."""
    return (_ASSETS / name).read_text(encoding="utf-8")


def page(title: str, body: str, assets: str | None = None) -> str:
    """A whole page: its title, its body, the report's style and script inlined, or linked
    from `assets` (a URL's path ending in `/`: a site that serves them, under a policy that
    refuses inline ones)."""
    if assets is None:
        head = f"<style>\n{asset('report.css')}</style>\n<script>\n{asset('report.js')}</script>\n"
    else:
        head = (
            f'<link rel="stylesheet" href="{escape(assets)}report.css">\n'
            f'<script src="{escape(assets)}report.js"></script>\n'
        )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n{head}"
        f"</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def title_and_body(text: str) -> tuple[str, str]:
    """A page's title (as text) and its body (HTML), from `text` as `page` made it: for a
    site that serves the report's pages inside a layout of its own. ValueError for a page
    `page` did not make."""
    _, found, rest = text.partition("<title>")
    title, closed, rest = rest.partition("</title>")
    _, opened, rest = rest.partition("</head>\n<body>\n")
    body, ended, _ = rest.rpartition("\n</body>\n</html>")
    if not (found and closed and opened and ended):
        raise ValueError("not a page of the report")
    return unescape(title), body


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    numeric: Sequence[bool] | None = None,
    attributes: str = "",
) -> str:
    """A table of escaped cells; the columns flagged in `numeric` aligned right."""
    right = list(numeric) if numeric is not None else [False] * len(headers)

    def cell(tag: str, value: object, index: int) -> str:
        kind = ' class="number"' if right[index] else ""
        return f"<{tag}{kind}>{escape(str(value))}</{tag}>"

    head = "".join(cell("th", header, i) for i, header in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(cell("td", value, i) for i, value in enumerate(row)) + "</tr>\n"
        for row in rows
    )
    return f"<table{attributes}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"


def script_data(element_id: str, data: Any) -> str:
    """Data for the page's script, as JSON that cannot end the element early: no `<`, `>` or
    `&` is left in it, since `</script>` ends it and `<!--<script>` (a bot's answer quoted
    in a fault) makes the parser pass over the `</script>` that should."""
    text = json.dumps(data, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def options(values: Iterable[str], everything: str) -> str:
    """A select's options: `everything` (the empty value) first."""
    listed = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
    return f'<option value="">{escape(everything)}</option>{listed}'
