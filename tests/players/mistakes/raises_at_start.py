"""Dies at its start on a module that is not installed, as a bot does on a machine without
its dependencies."""

import no_such_module_here  # noqa: F401

print("ready", flush=True)
