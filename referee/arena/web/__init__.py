"""The arena's face: the JSON API (`api`) and the pages (`pages`, `templates/`, `assets/`),
with the page "Write a bot" (`guide`).

It imports every room below it: `reading`, `replays`, `doors`, `ladder`, `intake`,
`accounts`, `store`.
"""
