"""The arena as a service, `referee arena serve`: three processes that share only the
database and the arena's files.

- **serve** (`supervisor`): holds the arena's lock and the socket the API listens on,
  starts the two rooms, passes the doors' calls to the ladder, starts again a room that
  dies, and stops both on SIGINT or SIGTERM.
- **the doors** (`doors_room`): the API and the pages on uvicorn.
- **the ladder** (`ladder_room`): the intake, the ladder and the final, on local workers
  started for both, a cluster, or itself.

Whatever the doors are asked, the ladder's matches are played and recorded in a process
of their own, at their own pace; and a room that dies (a crash, a kill, a disk that went
away under it) is started again while the other goes on.
"""

from referee.arena.service.supervisor import serve

__all__ = ["serve"]
