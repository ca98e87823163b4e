"""The arena's doors to the world: the JSON API, the pages and what they show (views,
the lists of matches, the write-a-bot guide).

It imports every room below it: `replays`, `doors`, `ladder`, `intake`, `accounts`, `store`.
"""
