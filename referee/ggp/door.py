"""Who may talk to a served player: the networks allowed in, and how many connections each
address may hold at once.

A served player is a server on a network, and any address that reaches its port is a
stranger until the organiser says otherwise. With an allow list, a connection from any
other address is closed as it is accepted, before anything it sent is read: a stranger can
neither start a match nor make the player busy. Connections are counted per address as well
as in all, so that the slow connections of one address never take the places another
address's requests need, and memory stays bounded (each may hold a request's worth).
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from referee.errors import ConfigError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# A game manager sends a player one request at a time, and an INFO now and then.
PER_ADDRESS = 8
# What all the connections together may hold: each up to wire.REQUEST_LIMIT.
TOTAL = 64


class Refusal(Enum):
    """Why a connection is closed as it is accepted."""

    NOT_ALLOWED = "not an allowed address"
    ADDRESS_FULL = "too many connections from this address"
    FULL = "too many connections"


def network(text: str) -> Network:
    """An address or a network in CIDR notation; ConfigError naming the text otherwise."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ConfigError(
            f"--allow {text!r}: not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/24, ::1)"
        ) from None


@dataclass
class Door:
    """The allowed networks (none: every address) and the connections open, by address."""

    allowed: tuple[Network, ...] = ()
    per_address: int = PER_ADDRESS
    total: int = TOTAL
    _open: Counter[str] = field(default_factory=Counter)

    @classmethod
    def allowing(cls, texts: Iterable[str]) -> Door:
        """The door that lets in the addresses and networks `texts` name (all, for none)."""
        return cls(tuple(network(text) for text in texts))

    def enter(self, address: str) -> Refusal | None:
        """Take a connection from `address` in (None), or say why not; one taken in is
        counted until `leave`."""
        host = _plain(address)
        if self.allowed and (host is None or not any(host in net for net in self.allowed)):
            return Refusal.NOT_ALLOWED
        if self._open[address] >= self.per_address:
            return Refusal.ADDRESS_FULL
        if self._open.total() >= self.total:
            return Refusal.FULL
        self._open[address] += 1
        return None

    def leave(self, address: str) -> None:
        """A connection taken in has ended."""
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]


def _plain(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a peer's text names; an IPv4 address mapped into IPv6 as IPv4."""
    try:
        host = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped is not None:
        return host.ipv4_mapped
    return host
