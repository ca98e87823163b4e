"""Authors and their credentials: tokens replaced and revoked, browsers signed in, who a
request is and what it may read, and the audit log of what was done.

It imports only `store`.
"""
