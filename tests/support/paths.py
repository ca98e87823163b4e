"""Where things are: the checkout, the built-in games' reference games, the example
rulesheets, and the public GGP corpus (its rulesheets and reference games)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# The reference games of the five built-in games, which the project keeps with its tests.
CONFORMANCE = ROOT / "tests" / "conformance"
REFERENCE_FILES = sorted(CONFORMANCE.glob("*.jsonl"))
# The example rulesheets the project ships, written for it.
EXAMPLES = ROOT / "matches" / "rulesheets"
# Where the public GGP corpus is looked for: a directory with gdl/ (its rulesheets) and
# conformance/gdl/ (their reference games), as ../shared/ beside the checkout is laid out.
CORPUS_SETTING = "REFEREE_GGP_CORPUS"


def _corpus_places() -> list[Path]:
    """The setting, else `shared/` beside this checkout or beside the local repository it
    was cloned from (a fresh clone in a temporary directory has none beside it; its origin
    may)."""
    if os.environ.get(CORPUS_SETTING):
        return [Path(os.environ[CORPUS_SETTING])]
    places = [ROOT.parent / "shared"]
    origin = subprocess.run(
        ["git", "-C", str(ROOT), "config", "--get", "remote.origin.url"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    origin = origin.removeprefix("file://")
    if origin and "://" not in origin and not origin.startswith("git@"):
        places.append((ROOT / origin).resolve().parent / "shared")
    return places


def _find_corpus() -> Path | None:
    for place in _corpus_places():
        if (place / "gdl").is_dir() and (place / "conformance" / "gdl").is_dir():
            return place
    return None


CORPUS = _find_corpus()
CORPUS_MISSING = (
    "the public GGP corpus (its rulesheets, gdl/, and their reference games, "
    "conformance/gdl/) is missing: put it at "
    + " or ".join(str(place) for place in _corpus_places())
    + f", or set {CORPUS_SETTING} to the directory that holds it"
)
# Its rulesheets and their reference games; paths that do not exist where it is missing,
# for tests marked `corpus`, which are then skipped before they look.
RULES = (CORPUS or ROOT / "no-corpus") / "gdl"
GDL_REFERENCES = sorted((RULES.parent / "conformance" / "gdl").glob("*.jsonl")) or [
    RULES.parent / "conformance" / "gdl" / "missing.jsonl"
]
