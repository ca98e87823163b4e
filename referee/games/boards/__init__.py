"""Boards shared by several games: bit masks, the tic-tac-toe and crossing grids, text layout."""
