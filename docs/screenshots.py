"""Take the README's screenshots of the report: its index and one match of each game.

Usage: python docs/screenshots.py [RESULTS]   (default: matches/results/demo, from make demo)

Writes the report to a temporary directory and the pictures to docs/images/, opening the
pages in Debian's chromium as the browser tests do.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from referee.games import GAMES
from referee.records.signing import directory_key
from referee.report.site import write_report

IMAGES = Path(__file__).resolve().parent / "images"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
FLAGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    results = Path(sys.argv[1] if len(sys.argv) > 1 else "matches/results/demo")
    executable = shutil.which("chromium")
    if executable is None:
        sys.exit("screenshots.py: needs Chromium: apt-get install chromium")
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as directory, sync_playwright() as playwright:
        site = write_report(results, Path(directory), directory_key(results))
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        page = browser.new_page(viewport={"width": 1000, "height": 760})
        page.goto(site.index.as_uri())
        page.screenshot(path=IMAGES / "report-index.png")
        for game_id in GAMES:
            match = sorted((Path(directory) / "matches").glob(f"{game_id}-*.html"))[0]
            page.goto(match.as_uri())
            page.keyboard.press("End")
            page.screenshot(path=IMAGES / f"report-{game_id}.png", full_page=True)
            print(IMAGES / f"report-{game_id}.png")
        browser.close()


if __name__ == "__main__":
    main()
