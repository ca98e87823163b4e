"""Where the benchmarks find the public GGP repository's rulesheets, which the project does
not ship: REFEREE_GGP_CORPUS (a directory with gdl/ in it, as the tests take it), else
shared/ beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

SETTING = "REFEREE_GGP_CORPUS"


def corpus_rules() -> Path:
    """The folder of the corpus's .kif files, where it would be; it may not exist."""
    setting = os.environ.get(SETTING)
    root = Path(setting) if setting else Path(__file__).resolve().parents[1].parent / "shared"
    return root / "gdl"


def missing(folder: Path) -> str:
    """One line saying the corpus is not at `folder` and how to point at it."""
    return (
        f"no GGP rulesheets at {folder}: set {SETTING} to a directory whose gdl/ holds the "
        "public GGP repository's rulesheets"
    )
