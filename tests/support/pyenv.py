"""A version manager's shim, as pyenv makes it, for the tests of interpreters found by path
(the `pyenv_shim` fixture makes one)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PyenvShim:
    """A shim of pyenv's, and the interpreter it stands for."""

    shim: Path
    real: Path
