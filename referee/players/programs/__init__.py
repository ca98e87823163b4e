"""The built-in sample player programs, shipped with the package and run as any other program."""
