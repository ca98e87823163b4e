"""What runtimes that size themselves from the machine are told of a seat's memory.

In the jail a runtime sees neither the memory cgroup nor its limit, only the machine: a JVM
would size its heap at a quarter of the machine's memory and be killed at `memory_mb` long
before it collected. Each is told the seat's limit the way its own documentation gives one
(docs/protocol.md, "Runtimes"), so that it collects before the cgroup kills it. Its heap may
grow to the whole limit, as contest judges give Java `-Xmx` at the memory limit: the cgroup,
not the runtime, decides when a program uses too much, and names `memory_mb`.
"""

from __future__ import annotations

from referee.sandbox.limits import MIB, Limits


def runtime_environment(limits: Limits) -> dict[str, str]:
    """The variables that tell the JVM, Go, Node and .NET the seat's memory limit."""
    megabytes = limits.memory_mb
    return {
        # MaxRAM, not -Xmx: a program's own -Xms or -Xmx still wins, with no clash. Start-up
        # errors go to standard error, where they are logged, not taken for an answer.
        "JAVA_TOOL_OPTIONS": (
            f"-XX:MaxRAM={megabytes}m -XX:MaxRAMPercentage=100 -XX:+DisplayVMOutputToStderr"
        ),
        "GOMEMLIMIT": f"{megabytes}MiB",
        "NODE_OPTIONS": f"--max-old-space-size={megabytes}",
        "DOTNET_GCHeapHardLimit": f"{megabytes * MIB:x}",
    }
