"""The GGP protocol: its messages (`messages`) and the HTTP/1.0 that carries them (`wire`).

Both directions use this package: the referee as a game manager speaking to GGP players
(`referee.players.http`), and a line-protocol program entered as a GGP player
(`referee.gateway`).
"""
