"""What speaks the protocol: player programs in the sandbox, people, the built-in players."""
