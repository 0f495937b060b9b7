"""``neural-cost merge R0.json R1.json ...``: every rank's saved report of one run, in one table."""

from __future__ import annotations

import argparse
import sys

from ..report.merge import merge_files
from ..report.printable import printable


def run_merge(args: argparse.Namespace) -> int:
    """Print the merged view; exit 0 even when some ranks are missing (a warning line names them).

    Reports of different programs or specs, or no readable report, raise MergeError (exit 2)."""
    merged = merge_files(args.reports, max_bytes=args.max_bytes)
    print(merged.render(), end="")
    if merged.missing:
        names = ", ".join(printable(m.name) for m in merged.missing)
        total = len(merged.missing) + len(merged.ranks)
        print(
            f"neural-cost merge: warning: {len(merged.missing)} of {total} reports could not be read "
            f"(a rank that crashed?): {names}; merged the other {len(merged.ranks)}",
            file=sys.stderr,
        )
    return 0
