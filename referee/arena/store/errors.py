"""The arena's refusals of a request, each named for the HTTP status the API answers it
with. The reads, the changes and the sign-in raise them; the API and the pages each show
them in their own way."""

from __future__ import annotations

from referee.errors import ArenaError


class NotFound(ArenaError):
    """Nothing of that name or id (HTTP 404)."""


class Forbidden(ArenaError):
    """Another author's: not for this viewer (HTTP 403)."""


class Unauthorised(ArenaError):
    """No valid token where one is needed (HTTP 401)."""


class Busy(ArenaError):
    """As much of that under way as the arena takes at once, or the arena unable to do it
    for now (HTTP 503); with `retry_after_s`, when to ask again (its Retry-After)."""

    retry_after_s: int | None = None
