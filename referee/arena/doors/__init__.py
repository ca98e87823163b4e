"""What a stranger may cost the arena's process: a connection's deadlines and count, a
request body's cap and pace, the upload slots, and each client's rate.

It imports `accounts` (who a request is) and `store`.
"""
