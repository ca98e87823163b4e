"""Seeded random mutations of real transcripts: a signature catches every one, and the
consistency checks alone catch every mutation of the classes that change a result or a fault.

The transcripts come from two real tournaments of misbehaving players, so that there are
faults of every kind with and without answer times, replacements, forfeits and time banks;
a seat swap is caught because a tournament's match id names its seating.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from referee.errors import FaultKind
from referee.games import get_game
from referee.records.signing import canonical, directory_key, public_key_text, results_key
from referee.records.verify import Outcome, verify_file
from referee.tournaments.config import load_config
from referee.tournaments.runner import run_tournament
from tests.support.boards import state_after

HERE = Path(__file__).resolve().parent
MISBEHAVING = HERE / "players" / "misbehaving.py"
MUTATIONS = 600

Data = dict[str, Any]


def _tournament(directory: Path, policy: str, games: str, extra: str, players: dict) -> Path:
    entries = "".join(f"  - name: {name}\n    command: {cmd}\n" for name, cmd in players.items())
    config = directory / f"{policy}.yaml"
    config.write_text(
        f"name: {policy}\nseed: 3\npolicy: {policy}\ngames: {games}\nconcurrency: 2\n"
        f"start_clock: 3000\n{extra}players:\n{entries}"
    )
    settings = load_config(config)
    key, _ = results_key(settings.output, None)
    asyncio.run(run_tournament(settings, key))
    return settings.output


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Data, str]]:
    """Real signed transcripts and the public key of their results directory."""
    directory = tmp_path_factory.mktemp("mutations")
    bad = f"{sys.executable} {MISBEHAVING}"
    outputs = [
        _tournament(
            directory,
            "random",
            "[ticblock, hex-pie]",
            "play_clock: 400\n",
            {
                "steady": "random",
                "illegal": f"{bad} illegal --at 2",
                "garbage": f"{bad} garbage --at 3",
                "crasher": f"{bad} exit --at 3",
            },
        ),
        _tournament(
            directory,
            "forfeit",
            "[ticblock]",
            "play_clock: 300\ntime_bank: 200\nrounds: 2\n",
            {
                "steady": "random",
                "late": f"{bad} late --at 2 --delay-ms 1500",
                "unready": f"{bad} bad-ready",
            },
        ),
    ]
    found = []
    for output in outputs:
        key = directory_key(output)
        assert key is not None
        found += [(json.loads(path.read_text()), key) for path in sorted(output.glob("*.json"))]
    return found


# A mutation changes a transcript's data in place, or returns False when it does not apply.
Mutation = Callable[[Data, random.Random], bool]


def _result_removed(data: Data, rng: random.Random) -> bool:
    if data["end_reason"] == "aborted":
        return False
    data.update(end_reason="aborted", goals=None)
    return True


def _contradicting_kinds(fault: Data) -> list[FaultKind]:
    """The kinds a fault cannot have with its answer time: a timeout came late or not at all,
    an illegal move was an answer in time, a crash or a resource fault answered nothing."""
    kind, timed = FaultKind(fault["kind"]), fault["time_ms"] is not None
    if not timed:
        return [FaultKind.ILLEGAL]
    if kind is FaultKind.TIMEOUT:
        return [FaultKind.ILLEGAL, FaultKind.PROTOCOL, FaultKind.CRASH, FaultKind.RESOURCE]
    return [FaultKind.TIMEOUT, FaultKind.CRASH, FaultKind.RESOURCE]


def _kind_against_time(data: Data, rng: random.Random) -> bool:
    if not data["faults"]:
        return False
    fault = rng.choice(data["faults"])
    fault["kind"] = str(rng.choice(_contradicting_kinds(fault)))
    return True


def _fault_deleted(data: Data, rng: random.Random) -> bool:
    if not data["faults"]:
        return False
    data["faults"].pop(rng.randrange(len(data["faults"])))
    return True


def _times(data: Data) -> list[tuple[dict, str]]:
    """Every recorded answer time, as (the dict holding it, its key)."""
    places = [(data["start_times_ms"], role) for role in data["start_times_ms"]]
    places += [(step["times_ms"], role) for step in data["steps"] for role in step["times_ms"]]
    return places + [(fault, "time_ms") for fault in data["faults"] if fault["time_ms"]]


def _impossible_value(data: Data, rng: random.Random) -> bool:
    times = _times(data)
    choices: list[Callable[[], None]] = [
        lambda: data["clocks"].update(play_ms=rng.choice([0, -1, 10**20])),
        lambda: data["clocks"].update(start_ms=rng.choice([0, -5])),
        lambda: data["clocks"].update(time_bank_ms=-1),
        lambda: data.update(ended_at="2001-01-01T00:00:00.000Z"),
        lambda: data.update(seed=rng.choice([-1, 2**64])),
    ]
    if times:

        def bad_time() -> None:
            holder, key = rng.choice(times)
            holder[key] = rng.choice([-0.5, -1000.0, 1e12])

        choices += [bad_time] * 3
    own_moves = [step["times_ms"] for step in data["steps"] if step["times_ms"]]
    if own_moves:
        # An answer over the allowance that is recorded as the player's own move, in time.
        choices.append(lambda: _set_any(rng.choice(own_moves), 10 * data["clocks"]["play_ms"]))
    if data["policy"] == "forfeit" and data["faults"]:
        choices.append(lambda: rng.choice(data["faults"]).update(replacement="(fly away)"))
    if data["goals"] is not None:
        choices.append(lambda: data["goals"].update({next(iter(data["goals"])): 101}))
    rng.choice(choices)()
    return True


def _set_any(times: dict, value: float) -> None:
    times[next(iter(times))] = value


def _seats_swapped(data: Data, rng: random.Random) -> bool:
    first, second = data["seats"]
    if first["player"] == second["player"]:
        return False
    for key in ("player", "command", "log"):
        first[key], second[key] = second[key], first[key]
    return True


def _other_legal_move(data: Data, rng: random.Random) -> bool:
    """A player's own move replaced with another legal one: no rule can see it by itself."""
    game = get_game(data["game"])
    candidates = [
        (number, role)
        for number, step in enumerate(data["steps"])
        for role in step["times_ms"]
        if len(game.legal_moves(state_after(data, number), game.roles.index(role))) > 1
    ]
    if not candidates:
        return False
    number, role = rng.choice(candidates)
    state = state_after(data, number)
    legal = game.legal_moves(state, game.roles.index(role))
    step = data["steps"][number]
    step["moves"][role] = rng.choice([move for move in legal if move != step["moves"][role]])
    return True


def _fault_moved(data: Data, rng: random.Random) -> bool:
    if not data["faults"]:
        return False
    fault = rng.choice(data["faults"])
    roles = [seat["role"] for seat in data["seats"]]
    fault["role"] = roles[1 - roles.index(fault["role"])]
    return True


def _time_changed(data: Data, rng: random.Random) -> bool:
    """An answer time changed within what the clocks allow: no check can see it."""
    times = [(holder, key) for holder, key in _times(data) if holder is not data["start_times_ms"]]
    if not times:
        return False
    holder, key = rng.choice(times)
    holder[key] = round(holder[key] * rng.uniform(0.1, 0.9), 3)
    return True


# The classes the consistency checks must catch every time, then the others.
REQUIRED: dict[str, Mutation] = {
    "terminal or forfeit to aborted": _result_removed,
    "fault kind against its time": _kind_against_time,
    "fault deleted": _fault_deleted,
    "impossible value": _impossible_value,
    "seats swapped": _seats_swapped,
}
OTHERS: dict[str, Mutation] = {
    "other legal move": _other_legal_move,
    "fault moved to other role": _fault_moved,
    "time changed in range": _time_changed,
}


def _outcome(path: Path, data: Data, expected_key: str | None) -> Outcome:
    path.write_text(json.dumps(data, indent=2))
    return verify_file(path, expected_key).outcome


def _resigned(data: Data) -> Data:
    """The transcript signed again, with a key that is not the results directory's."""
    signed = {key: value for key, value in data.items() if key != "signature"}
    other = Ed25519PrivateKey.generate()
    value = base64.b64encode(other.sign(canonical(signed))).decode("ascii")
    signed["signature"] = {"public_key": public_key_text(other.public_key()), "value": value}
    return signed


@pytest.mark.slow
def test_every_real_transcript_verifies_signed_and_unsigned(
    tmp_path: Path, corpus: list[tuple[Data, str]]
) -> None:
    kinds = Counter(fault["kind"] for data, _ in corpus for fault in data["faults"])
    timed = Counter(
        fault["kind"] for data, _ in corpus for fault in data["faults"] if fault["time_ms"]
    )
    ends = Counter(data["end_reason"] for data, _ in corpus)
    # The corpus holds what the mutations need: faults with and without times, both ends.
    assert kinds["illegal"] and kinds["protocol"] and kinds["crash"] and kinds["timeout"], kinds
    assert timed["illegal"] and timed["protocol"], timed
    assert ends["terminal"] and ends["forfeit"], ends
    for data, key in corpus:
        assert _outcome(tmp_path / "t.json", data, key) is Outcome.VERIFIED
        unsigned = {k: v for k, v in data.items() if k != "signature"}
        assert _outcome(tmp_path / "t.json", unsigned, None) is Outcome.VERIFIED
        assert _outcome(tmp_path / "t.json", unsigned, key) is Outcome.FAILED
        assert _outcome(tmp_path / "t.json", _resigned(data), key) is Outcome.FAILED


def test_seeded_mutations_are_caught(
    tmp_path: Path, corpus: list[tuple[Data, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    classes = {**REQUIRED, **OTHERS}
    names = list(classes)
    tried: Counter[str] = Counter()
    caught_signed: Counter[str] = Counter()
    caught_unsigned: Counter[str] = Counter()
    path = tmp_path / "mutated.json"
    for seed in range(MUTATIONS):
        rng = random.Random(seed)
        name = names[seed % len(names)]
        for _ in range(100):
            original, key = rng.choice(corpus)
            mutated = copy.deepcopy(original)
            if classes[name](mutated, rng) and mutated != original:
                break
        else:
            pytest.fail(f"mutation {name!r} applies to no transcript of the corpus")
        tried[name] += 1
        if _outcome(path, mutated, key) is not Outcome.VERIFIED:
            caught_signed[name] += 1
        unsigned = {k: v for k, v in mutated.items() if k != "signature"}
        if _outcome(path, unsigned, None) is not Outcome.VERIFIED:
            caught_unsigned[name] += 1
    with capsys.disabled():
        print(f"\n{sum(tried.values())} seeded mutations of {len(corpus)} real transcripts")
        print(f"{'class':34} {'tried':>5} {'signed':>7} {'unsigned':>9}")
        for name in names:
            print(
                f"{name:34} {tried[name]:5} {caught_signed[name]:3}/{tried[name]:<3}"
                f" {caught_unsigned[name]:4}/{tried[name]:<4}"
            )
    assert sum(tried.values()) >= 500
    assert caught_signed == tried, "a signed transcript was changed and still verified"
    for name in REQUIRED:
        assert caught_unsigned[name] == tried[name], f"{name}: a mutation went uncaught"
