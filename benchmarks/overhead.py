"""The tool's tracing overhead against each framework's own tracer: the median of N runs.

Runs the three tracing benchmarks beside this file, each N times in a fresh process, and
prints the median (and range) of the ratio each one prints:

- ``jax_walk.py``: walk + estimate / ``jax.make_jaxpr``
- ``torch_trace.py``: ``TorchAdapter.trace`` / a forward under ``FlopCounterMode``
- ``tf_trace.py``: ``TensorFlowAdapter.trace`` / ``get_concrete_function``

Each ratio is measured within one process, so a noisy shared machine moves both sides.

    .venv/bin/python benchmarks/overhead.py [--runs 5] [--only jax,torch,tf]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = {
    "jax": ("jax_walk.py", r"ratio walk / make_jaxpr:\s+([0-9.]+)"),
    "torch": ("torch_trace.py", r"ratio trace / FlopCounterMode:\s+([0-9.]+)"),
    "tf": ("tf_trace.py", r"ratio trace / get_concrete_function:\s+([0-9.]+)"),
}


def ratio_of(script: str, pattern: str) -> float:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([sys.executable, str(HERE / script)], capture_output=True, text=True, env=env, check=False)
    match = re.search(pattern, result.stdout)
    if result.returncode != 0 or match is None:
        raise SystemExit(f"{script} failed (exit {result.returncode}):\n{result.stdout}\n{result.stderr[-2000:]}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", default=",".join(SCRIPTS))
    args = parser.parse_args()
    for name in args.only.split(","):
        script, pattern = SCRIPTS[name]
        ratios = [ratio_of(script, pattern) for _ in range(args.runs)]
        print(
            f"{script:16s} median ratio {statistics.median(ratios):.2f} "
            f"(range {min(ratios):.2f}–{max(ratios):.2f}, {args.runs} runs)",
            flush=True,
        )


if __name__ == "__main__":
    main()
