"""A submission's way to the ladder: taken in through the API, unpacked, built in the jail,
validated, here or on the venue's workers, in turns between authors; and a new bot's
starter written for an author.

It imports `accounts` (the audit log) and `store`.
"""
