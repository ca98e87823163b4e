"""What a player may use and is kept from: limits, isolation, its processes watched and ended."""
