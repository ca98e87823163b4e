"""Bearer tokens: random, shown once, kept only as their hash.

A token has 256 bits of randomness, so a plain SHA-256 is enough to keep it: there is nothing
to guess that a slow hash would protect, and a lookup by hash costs one index probe.
"""

from __future__ import annotations

import hashlib
import secrets

# Longer than any token we make; what a header may hold is checked before it is hashed.
MAX_TOKEN_CHARS = 128


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
