"""A stand-in for bubblewrap's command line: checks the options, runs the program, exits as bwrap.

It isolates nothing. Like bwrap, it runs the program as its child and exits with the
program's code, or 128 + N when a signal N killed it. It appends its options to the file
named by FAKE_BWRAP_LOG.
"""

import os
import subprocess
import sys

options, command = sys.argv[1 : sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1 :]
with open(os.environ["FAKE_BWRAP_LOG"], "a") as log:
    log.write(" ".join(options) + "\n")
code = subprocess.run(command, check=False).returncode
sys.exit(128 - code if code < 0 else code)
