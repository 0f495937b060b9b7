"""The package version, in a module of its own so that any layer can read it without
importing the package root (which imports every layer)."""

__version__ = "0.1.0"
