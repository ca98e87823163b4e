"""The results of a tournament as a static site people can open in a browser."""
