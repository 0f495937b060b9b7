"""The ``neural-cost`` command line: thin wrappers over the library."""
