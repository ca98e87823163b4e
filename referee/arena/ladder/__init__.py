"""The continuous ladder and the season's final: the field paired, its matches queued,
claimed, played on the venue and recorded, the ratings fitted, each version's tallies.

It imports `intake` (submissions closed for the final), `accounts` and `store`.
"""
