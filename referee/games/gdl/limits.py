"""What computing one state of a rulesheet may take, as the referee sets it: address space
and time. Its own module so that the command line can offer these limits as options without
loading a reasoner."""

from __future__ import annotations

from dataclasses import dataclass

from referee.errors import ConfigError

# Default limits, from the corpus (docs/benchmarks.md): its heaviest per-state game needs a
# few hundred MiB of address space and its slowest state under a second.
STATE_MEMORY_MB = 2048
STATE_SECONDS = 10.0
# What a state's memory may be set to: the child's Python and clingo take 175 MiB of address
# space before any state (below that it dies starting, which would look like a fault of the
# rules), and a cap must fit the kernel's limits.
MEMORY_MB = (256, 1 << 20)
# The longest a state may be given: an hour, as a GGP match's clocks go.
SECONDS = 3600.0


@dataclass(frozen=True)
class StateLimits:
    """What computing one state of a rulesheet may take: address space and time."""

    memory_mb: int = STATE_MEMORY_MB
    seconds: float = STATE_SECONDS

    def __post_init__(self) -> None:
        if not MEMORY_MB[0] <= self.memory_mb <= MEMORY_MB[1]:
            raise ConfigError(
                f"state_memory_mb: {self.memory_mb} MiB is not in [{MEMORY_MB[0]}, {MEMORY_MB[1]}]"
            )
        if not 0 < self.seconds <= SECONDS:
            raise ConfigError(f"state_seconds: {self.seconds} is not in (0, {SECONDS:g}]")


DEFAULT_LIMITS = StateLimits()
