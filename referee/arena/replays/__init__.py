"""A match's records as the arena shows them: its facts, its transcript replayed in worker
processes and kept as files, a match followed live as it is played, and its downloads.

It imports `accounts` (who may read what) and `store`.
"""
