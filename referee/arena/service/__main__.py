"""A room of serve's, started by serve (`supervisor`): `python -m referee.arena.service ROOM
SPEC`, SPEC the JSON of what it needs (the arena's directory, serve's pid, its end of the
link, the doors' socket, the workers). Not a command for people."""

from __future__ import annotations

import sys

from referee.arena.service.rooms import run_room

if __name__ == "__main__":
    sys.exit(run_room(sys.argv[1:]))
