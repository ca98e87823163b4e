"""Take the screenshots of the arena's pages in the README, docs/arena.md and docs/commands.md
from a real run, at a laptop's width and at a phone's: the leaderboard, an author's home with
a failed bot, a bot's page, a match watched as it is played, a submission caught while it
builds, the page on writing a bot and the organiser's page.

Usage: python docs/arena_screenshots.py

Makes an arena in a temporary directory with three authors, serves it with `referee arena
serve`, submits a few bots through the API (one slow to answer, so that a match lasts long
enough to watch; one that never flushes, so that validation fails) and lets the ladder play
them for a minute (so that the ratings have a history), then opens the pages in Debian's
chromium, as the browser tests do, and writes docs/images/arena-*.png.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

# The report's screenshots' script, beside this one: its browser flags and where the
# pictures go.
from screenshots import FLAGS, IMAGES

CONFIG = """\
name: ai-class-2026
games: [ticblock]
start_clock: 5000
play_clock: 1000
arena:
  placement_matches: 4
  submission: {per_hour: 100}
  validate: {matches_per_role: 1}
"""
# How long the ladder plays before the pictures: a few points of rating history each.
PLAY_S = 60
# Each bot: its author, and how it picks among the legal moves it is given.
PICKS = {
    "magpie": ("ada", "moves[0]"),
    "owl": ("grace", "moves[-1]"),
    "wren": ("linus", "random.choice(moves)"),
    "heron": ("grace", "moves[len(moves) // 2]"),
    "kestrel": ("linus", "max(moves)"),
    # Thinks for half a second a move: its matches last long enough to watch.
    "tortoise": ("ada", "(time.sleep(0.5), random.choice(moves))[1]"),
}
BOT = """\
import random
import re
import sys
import time

MOVE = re.compile(r"\\([^()]*\\)|[^\\s()]+")
for line in sys.stdin:
    words = line.split(maxsplit=3)
    if words and words[0] == "start":
        print("ready", flush=True)
    elif words and words[0] == "go":
        moves = MOVE.findall(words[3])
        print({pick}, flush=True)
    elif words and words[0] == "quit":
        break
"""


# ada's bot that answers without flushing: validation fails, and says how to fix it.
UNFLUSHED = BOT.replace(", flush=True", "").replace("{pick}", "moves[0]")
# The widths the pages are shot at: a laptop's and a phone's.
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def referee(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "referee", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def token_of(output: str) -> str:
    found = re.search(r"token \(shown once, kept only as its hash\): (\S+)", output)
    if found is None:
        sys.exit(f"arena_screenshots.py: no token in {output!r}")
    return found.group(1)


def archive(name: str, pick: str, build: str | None = None, source: str = BOT) -> bytes:
    manifest = f"name: {name}\nrun: /usr/bin/python3 bot.py\n"
    manifest += f"build: {build}\n" if build else ""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member, text in (("bot.yaml", manifest), ("bot.py", source.format(pick=pick))):
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def call(url: str, token: str, path: str, data: bytes | None = None) -> Any:
    request = urllib.request.Request(
        f"{url}{path}",
        data=data,
        headers={"Authorization": f"Bearer {token}"},
        method="GET" if data is None else "POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def main() -> None:
    executable = shutil.which("chromium")
    if executable is None:
        sys.exit("arena_screenshots.py: needs Chromium: apt-get install chromium")
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "arena.yaml"
        config.write_text(CONFIG)
        directory = Path(scratch) / "ai-class-2026"
        tokens = {
            "organiser": token_of(referee("arena", "init", str(directory), "--config", str(config)))
        }
        for author in ("ada", "grace", "linus"):
            tokens[author] = token_of(referee("arena", "author", "add", str(directory), author))
        server = subprocess.Popen(
            [sys.executable, "-m", "referee", "arena", "serve", str(directory), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            found = re.search(r"listening on (http://\S+)", server.stdout.readline())
            if found is None:
                sys.exit("arena_screenshots.py: the arena did not say where it listens")
            shoot(found.group(1), tokens, executable)
        finally:
            server.terminate()
            server.wait(30)


def shoot(url: str, tokens: dict[str, str], executable: str) -> None:
    for name, (author, pick) in PICKS.items():
        call(url, tokens[author], f"/api/bots/{name}/versions", archive(name, pick))
    call(url, tokens["ada"], "/api/bots/quiet/versions", archive("quiet", "", source=UNFLUSHED))
    print(f"playing for {PLAY_S} s at {url}")
    time.sleep(PLAY_S)
    call(url, tokens["organiser"], "/api/bots/kestrel/suspend", b'{"reason": "too many faults"}')
    shots: list[Path] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        for width, suffix in ((LAPTOP, ""), (PHONE, "-phone")):
            page = browser.new_page(viewport=width)
            shots += author_pages(page, url, tokens, suffix)
            page.close()
        page = browser.new_page(viewport=LAPTOP)
        shots += [submission(page, url, tokens), organiser_page(page, url, tokens)]
        browser.close()
    for shot in shots:
        print(shot)


def author_pages(page: Any, url: str, tokens: dict[str, str], suffix: str) -> list[Path]:
    """ada's pages, as she sees them: her home (landing there), the leaderboard, a bot's
    page, one of her matches as it is played, and the page on writing a bot."""
    shots = []

    def shot(name: str, full: bool = False) -> None:
        path = IMAGES / f"arena-{name}{suffix}.png"
        page.screenshot(path=path, full_page=full)
        shots.append(path)

    page.goto(f"{url}/signin")
    page.fill("#token", tokens["ada"])
    page.click("form.signin button")
    page.wait_for_url(f"{url}/me")
    page.wait_for_selector(".my-bot tr.why")
    shot("home", full=True)
    page.goto(f"{url}/")
    page.wait_for_selector("#leaderboard tbody tr")
    shot("leaderboard")
    page.goto(f"{url}/bots/magpie")
    page.wait_for_selector("#history svg")
    page.wait_for_selector("#head-to-head tbody tr")
    shot("bot", full=True)
    page.goto(f"{url}/matches/{running_match(url, tokens, 'tortoise')}")
    page.wait_for_function("() => Number(document.getElementById('step')?.max) >= 3")
    shot("live")
    page.goto(f"{url}/write-a-bot")
    shot("guide")
    page.click("header form button")
    return shots


def running_match(url: str, tokens: dict[str, str], bot: str) -> str:
    """The key of a match of `bot` that has just begun, once there is one."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for match in call(url, tokens["ada"], "/api/running")["running"]:
            seats = {seat["bot"] for seat in match["seats"]}
            live = call(url, tokens["ada"], f"/api/matches/{match['key']}/live")
            if bot in seats and live["state"] == "running" and (live["last"] or 0) <= 2:
                return str(match["key"])
        time.sleep(0.2)
    sys.exit(f"arena_screenshots.py: no match of {bot} began in two minutes")


def submission(page: Any, url: str, tokens: dict[str, str]) -> Path:
    """A second version of magpie whose build takes a while, caught on its way."""
    page.goto(f"{url}/signin")
    page.fill("#token", tokens["ada"])
    page.click("form.signin button")
    page.wait_for_url(f"{url}/me")
    path = Path(tempfile.mkdtemp()) / "magpie.tar.gz"
    path.write_bytes(archive("magpie", "moves[1] if len(moves) > 1 else moves[0]", "sleep 8"))
    page.goto(f"{url}/submit")
    page.fill("#bot-name", "magpie")
    page.set_input_files("#archive", str(path))
    page.click("#send")
    page.wait_for_url(re.compile(r"/versions/\d+$"))
    page.wait_for_selector('#steps tr[data-kind="build"][data-state="running"]')
    shot = IMAGES / "arena-submission.png"
    page.screenshot(path=shot)
    shutil.rmtree(path.parent)
    page.click("header form button")
    return shot


def organiser_page(page: Any, url: str, tokens: dict[str, str]) -> Path:
    page.goto(f"{url}/signin")
    page.fill("#token", tokens["organiser"])
    page.click("form.signin button")
    page.wait_for_url(f"{url}/organiser")
    page.wait_for_selector("#bots tbody tr")
    shot = IMAGES / "arena-organiser.png"
    page.screenshot(path=shot, full_page=True)
    return shot


if __name__ == "__main__":
    main()
