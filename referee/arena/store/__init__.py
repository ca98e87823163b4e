"""The arena's state: its directory, its config, its database (models, migrations, the
lock one `serve` holds, its outages) and the rules every room reads of it: a version's
lifecycle, a row looked up by name, id or key, the tokens as kept, the disk each author uses.

It imports no other room of the arena.
"""
