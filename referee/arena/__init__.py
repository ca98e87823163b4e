"""The arena: a service where authors submit bots, which are built in the jail, validated,
placed and rated on a ladder that keeps playing, all of it kept in one database."""
