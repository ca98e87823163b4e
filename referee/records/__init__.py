"""The records of matches: transcripts, replay and verification, exports, conformance, files."""
