"""What the arena shows, as JSON-ready data for the API and the pages: the read model
(`views`), the lists of matches and their cursor (`match_lists`), and answers kept for a
moment so that a crowd costs one query (`fresh`).

It imports `ladder` (tallies), `intake` (the intake's turns), `accounts` and `store`.
"""
