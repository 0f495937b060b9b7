"""What does the profiled pass cost? ``neural-cost analyze --profile`` against ``--no-profile``.

Runs the CLI in fresh processes on the same build, alternating the two modes, and prints the
median wall time of each and their ratio (the target is at most 2×). Each process pays the
same interpreter, import and hardware-cache start, so the ratio isolates the profiled runs
and the event join.

    .venv/bin/python benchmarks/profile_overhead.py [--build examples/mlp.py:build] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def run(build: str, profile: bool, extra: list[str]) -> float:
    command = [
        sys.executable,
        "-m",
        "neural_cost.cli.main",
        "analyze",
        build,
        "--profile" if profile else "--no-profile",
    ]
    start = time.perf_counter()
    done = subprocess.run(
        command + extra, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="examples/mlp.py:build")
    parser.add_argument("--rounds", type=int, default=3)
    options, extra = parser.parse_known_args()
    on, off = [], []
    for _ in range(options.rounds):
        off.append(run(options.build, False, extra))
        on.append(run(options.build, True, extra))
    print(f"build:                {options.build}")
    print(f"analyze --no-profile: {statistics.median(off):.2f} s (median of {options.rounds})")
    print(f"analyze --profile:    {statistics.median(on):.2f} s (median of {options.rounds})")
    print(f"ratio profile / none: {statistics.median(on) / statistics.median(off):.2f} (target ≤ 2)")


if __name__ == "__main__":
    main()
