"""Signed transcripts: an Ed25519 key per results directory, and the check of a signature.

A transcript's signature covers its canonical content: every field but `signature`, as JSON
with sorted keys, no spaces and UTF-8 text. Anyone with the public key can check it with any
Ed25519 library; `docs/transcripts.md` says how, and how a key is kept and published.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from referee.errors import ConfigError
from referee.records.files import read_text

ALGORITHM = "ed25519"
# In a results directory: the private key (unless the user names another) and the public
# key every transcript there is signed with.
KEY_FILE = "signing.key"
PUBLIC_FILE = "signing.pub"
SIGNATURE_FIELD = "signature"
# A key file is a few hundred bytes; anything much larger is not one.
_MAX_KEY_BYTES = 4096


def canonical(data: dict[str, Any]) -> bytes:
    """The bytes a signature covers: every field but the signature, in one fixed layout."""
    content = {key: value for key, value in data.items() if key != SIGNATURE_FIELD}
    return json.dumps(
        content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def public_key_text(key: Ed25519PublicKey) -> str:
    """A public key as it is written and pinned: `ed25519:` and the raw 32 bytes in base64."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return f"{ALGORITHM}:{base64.b64encode(raw).decode('ascii')}"


def parse_public_key(text: str, where: str) -> Ed25519PublicKey:
    """A public key from its text; ConfigError naming `where` it came from if it is not one."""
    algorithm, _, encoded = text.strip().partition(":")
    if algorithm != ALGORITHM:
        raise ConfigError(f"{where}: not a public key (expected {ALGORITHM}:BASE64)")
    try:
        raw = base64.b64decode(encoded, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        raise ConfigError(
            f"{where}: not a public key (32 bytes in base64 after {ALGORITHM}:)"
        ) from None


def _public_key_file(path: Path) -> str:
    """The public key a file holds (a `signing.pub`), in its written form."""
    return public_key_text(
        parse_public_key(read_text(path, ConfigError, _MAX_KEY_BYTES), str(path))
    )


def pinned_key(given: str) -> str:
    """The public key `--key` names: its text, or a file holding it (a `signing.pub`)."""
    if given.startswith(f"{ALGORITHM}:"):
        return public_key_text(parse_public_key(given, "--key"))
    return _public_key_file(Path(given))


def directory_key(directory: Path) -> str | None:
    """The public key a results directory's transcripts are signed with, if it names one."""
    path = directory / PUBLIC_FILE
    return _public_key_file(path) if path.exists() else None


@dataclass(frozen=True)
class SigningKey:
    """A private key that signs transcripts, and the file it was read from."""

    private: Ed25519PrivateKey
    path: Path

    @property
    def public(self) -> str:
        return public_key_text(self.private.public_key())

    def sign(self, data: dict[str, Any]) -> dict[str, str]:
        """The signature field for a transcript's JSON data."""
        value = self.private.sign(canonical(data))
        return {"public_key": self.public, "value": base64.b64encode(value).decode("ascii")}


def load_key(path: Path) -> SigningKey:
    """Read a private key; it must be the user's own and readable by nobody else."""
    try:
        info = path.stat()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the signing key: {error.strerror}") from None
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        # As ssh does: a key others can read or replace signs nothing anyone can trust.
        raise ConfigError(f"{path}: the signing key must be yours and private (chmod 600 {path})")
    text = read_text(path, ConfigError, _MAX_KEY_BYTES)
    try:
        private = serialization.load_pem_private_key(text.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        raise ConfigError(f"{path}: not a signing key (an unencrypted Ed25519 PEM key)") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise ConfigError(f"{path}: not an Ed25519 key")
    return SigningKey(private, path)


def load_or_create_key(path: Path) -> tuple[SigningKey, bool]:
    """The key at `path`, made first if there is none; and whether it was made now."""
    if path.exists():
        return load_key(path), False
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(descriptor, "wb") as file:
            file.write(pem)
        try:
            # A link fails if the name exists: two referees making the key at once agree on one.
            os.link(temporary, path)
        except FileExistsError:
            return load_key(path), False
        finally:
            os.unlink(temporary)
    except OSError as error:
        raise ConfigError(f"{path}: cannot create the signing key: {error.strerror}") from None
    return SigningKey(private, path), True


def claim_directory(directory: Path, key: SigningKey) -> None:
    """Record `key` as the key of a results directory, or refuse one that has another."""
    recorded = directory_key(directory)
    if recorded is None:
        try:
            (directory / PUBLIC_FILE).write_text(key.public + "\n", encoding="ascii")
        except OSError as error:
            raise ConfigError(
                f"{directory / PUBLIC_FILE}: cannot write: {error.strerror}"
            ) from None
    elif recorded != key.public:
        raise ConfigError(
            f"{directory / PUBLIC_FILE}: the results here are signed with {recorded};"
            f" {key.path} is another key. Use that key, or another results directory"
        )


class SignatureStatus(StrEnum):
    """What checking a transcript's signature found."""

    VALID = "valid"
    INVALID = "invalid"
    UNSIGNED = "unsigned"


@dataclass(frozen=True)
class SignatureCheck:
    """A signature's status, the key it names, and why it fails (if it does)."""

    status: SignatureStatus
    public_key: str | None = None
    problem: str | None = None

    @property
    def fails(self) -> bool:
        return self.problem is not None

    def __str__(self) -> str:
        if self.status is SignatureStatus.VALID:
            return f"signature: valid (key {self.public_key})"
        if self.problem is not None:
            return f"signature: {self.status}: {self.problem}"
        return f"signature: {self.status}"

    def to_json(self) -> dict[str, Any]:
        return {"status": str(self.status), "key": self.public_key, "problem": self.problem}


def check_signature(data: dict[str, Any], expected: str | None) -> SignatureCheck:
    """Check a transcript's signature; with `expected`, it must be made with that public key.

    `data` has been read as a transcript: its signature, if any, is a public key and a value.
    """
    signature = data.get(SIGNATURE_FIELD)
    if signature is None:
        if expected is not None:
            return SignatureCheck(
                SignatureStatus.UNSIGNED, problem=f"the results must be signed with {expected}"
            )
        return SignatureCheck(SignatureStatus.UNSIGNED)
    key_text, value = signature["public_key"], signature["value"]
    try:
        key = parse_public_key(key_text, "public_key")
        key.verify(base64.b64decode(value, validate=True), canonical(data))
    except ConfigError as error:
        return SignatureCheck(SignatureStatus.INVALID, problem=str(error))
    except (binascii.Error, InvalidSignature):
        return SignatureCheck(
            SignatureStatus.INVALID,
            key_text,
            "the content is not what was signed (changed after it was written?)",
        )
    named = public_key_text(key)
    if expected is not None and named != expected:
        return SignatureCheck(
            SignatureStatus.INVALID, named, f"made with {named}, not with the expected {expected}"
        )
    return SignatureCheck(SignatureStatus.VALID, named)


def results_key(directory: Path, named: Path | None) -> tuple[SigningKey, bool]:
    """The key that signs a results directory's transcripts, and whether it was made now.

    The key named, or the directory's own (`signing.key`, made on first use); its public key
    is recorded in the directory (`signing.pub`), which then takes no other.
    """
    key, created = load_or_create_key(named or directory / KEY_FILE)
    try:
        claim_directory(directory, key)
    except ConfigError:
        if created:  # a key made only to be refused is no key anyone asked for
            key.path.unlink(missing_ok=True)
        raise
    return key, created
