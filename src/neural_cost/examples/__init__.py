"""Bundled examples the CLI can run with no framework installed."""
