"""Signed transcripts: the key of a results directory, what is refused, and checking a
signature with nothing but an Ed25519 library, as docs/transcripts.md tells."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from typer.testing import CliRunner

from referee.cli import app

runner = CliRunner()
SEATS = ["-p", "xcplayer=random", "-p", "obplayer=random", "--play-clock", "500"]


def _play(out: Path, *options: str) -> str:
    result = runner.invoke(app, ["play", "ticblock", *SEATS, "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results directory with two signed transcripts."""
    directory = tmp_path_factory.mktemp("signed") / "results"
    said = _play(directory / "one.json")
    assert f"signing key: made {directory / 'signing.key'} (keep it private)" in said
    said = _play(directory / "two.json")
    assert f"signing key: {directory / 'signing.key'};" in said
    return directory


def _copy(results: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    return copy


def test_the_key_is_private_and_its_public_half_is_published_beside_the_results(
    results: Path,
) -> None:
    assert (results / "signing.key").stat().st_mode & 0o777 == 0o600
    public = (results / "signing.pub").read_text().strip()
    for name in ("one.json", "two.json"):
        assert json.loads((results / name).read_text())["signature"]["public_key"] == public


def test_a_signature_checks_with_any_ed25519_library_as_documented(results: Path) -> None:
    data = json.loads((results / "one.json").read_text())
    signature = data.pop("signature")
    content = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    algorithm, _, key = (results / "signing.pub").read_text().strip().partition(":")
    assert algorithm == "ed25519"
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key))
    public.verify(base64.b64decode(signature["value"]), content.encode("utf-8"))


def test_verify_names_the_key_and_a_pinned_key_must_match(results: Path, tmp_path: Path) -> None:
    path = results / "one.json"
    public = (results / "signing.pub").read_text().strip()
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"signature: valid (key {public})"
    for pinned in (public, str(results / "signing.pub")):
        assert runner.invoke(app, ["replay", "--verify", str(path), "--key", pinned]).exit_code == 0
    other = _copy(results, tmp_path)
    (other / "signing.key").unlink()
    (other / "signing.pub").unlink()
    _play(other / "three.json")  # a new key for the copy
    result = runner.invoke(app, ["replay", "--verify", str(other / "three.json"), "--key", public])
    assert result.exit_code == 1
    assert result.stdout.startswith(f"FAILED {other / 'three.json'}: signature: invalid: made with")
    assert f"not with the expected {public}" in result.stdout


def test_an_unsigned_transcript_fails_where_the_directory_has_a_key(
    results: Path, tmp_path: Path
) -> None:
    directory = _copy(results, tmp_path)
    path = directory / "one.json"
    data = json.loads(path.read_text())
    del data["signature"]
    path.write_text(json.dumps(data))
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 1
    assert result.stdout == (
        f"FAILED {path}: signature: unsigned: the results must be signed with"
        f" {(directory / 'signing.pub').read_text().strip()}\n"
    )
    (directory / "signing.pub").unlink()
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "signature: unsigned"


def test_the_standings_leave_out_changed_transcripts_one_line_each(
    results: Path, tmp_path: Path
) -> None:
    directory = _copy(results, tmp_path)
    for name in ("one.json", "two.json"):
        data = json.loads((directory / name).read_text())
        data["goals"] = dict.fromkeys(data["goals"], 100)
        (directory / name).write_text(json.dumps(data))
    result = runner.invoke(app, ["standings", str(directory), "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["matches"] == 0
    assert result.stderr.splitlines() == [
        f"referee: error: left out of the standings: {directory / name}: signature: invalid:"
        " the content is not what was signed (changed after it was written?)"
        for name in ("one.json", "two.json")
    ]


def test_a_directory_verification_counts_the_signatures(results: Path) -> None:
    result = runner.invoke(app, ["replay", str(results)])
    assert result.exit_code == 0, result.output
    public = (results / "signing.pub").read_text().strip()
    assert result.stdout.splitlines()[-1] == f"signatures: 2 valid (key {public})"


def test_a_key_others_can_read_is_refused(results: Path, tmp_path: Path) -> None:
    directory = _copy(results, tmp_path)
    os.chmod(directory / "signing.key", 0o644)
    result = runner.invoke(app, ["play", "ticblock", *SEATS, "--out", str(directory / "x.json")])
    assert result.exit_code == 2
    assert result.stderr == (
        f"referee: error: {directory / 'signing.key'}: the signing key must be yours and"
        f" private (chmod 600 {directory / 'signing.key'})\n"
    )
    assert not (directory / "x.json").exists()


def test_a_directory_signed_with_one_key_takes_no_other(results: Path, tmp_path: Path) -> None:
    directory = _copy(results, tmp_path)
    mine = tmp_path / "elsewhere" / "my.key"
    result = runner.invoke(
        app,
        [
            "play",
            "ticblock",
            *SEATS,
            "--out",
            str(directory / "x.json"),
            "--signing-key",
            str(mine),
        ],
    )
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"referee: error: {directory / 'signing.pub'}: the results here are")
    assert f"{mine} is another key" in line
    # A key of the user's own, kept away from the results, signs a directory of its own.
    said = _play(tmp_path / "mine" / "m.json", "--signing-key", str(mine))
    assert f"signing key: made {mine} (keep it private)" in said
    assert not (tmp_path / "mine" / "signing.key").exists()
    assert (tmp_path / "mine" / "signing.pub").exists()


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("ed25519:not-base64!", "--key: not a public key"),
        ("rsa:AAAA", "rsa:AAAA: cannot read: No such file or directory"),
    ],
)
def test_a_bad_pinned_key_is_one_line(results: Path, key: str, said: str) -> None:
    result = runner.invoke(app, ["replay", "--verify", str(results / "one.json"), "--key", key])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert said in line, line


def test_a_damaged_public_key_file_is_one_line(results: Path, tmp_path: Path) -> None:
    directory = _copy(results, tmp_path)
    (directory / "signing.pub").write_text("ed25519:AAAA\n")
    result = runner.invoke(app, ["standings", str(directory)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"referee: error: {directory / 'signing.pub'}: not a public key"
        " (32 bytes in base64 after ed25519:)\n"
    )
