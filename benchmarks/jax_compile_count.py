"""Does analyzing a large JAX program compile it once, and what does the analysis cost?

Builds a deep, unrolled MLP (at least 4,000 equations) and, in one process:

1. the bare baseline: ``jax.jit(fn).lower(...).compile()``, then the same warmup and timed
   runs as the analysis (``block_until_ready`` in each);
2. ``analyze_workload(JaxAdapter(), fn, ...)``, counting the XLA compilations of the program
   through ``jax.monitoring`` (backend-compile events whose ``fun_name`` is ``jit(deep_mlp)``);
3. ``JaxAdapter().trace`` alone, which must compile nothing.

JAX's caches are cleared before each step, so no step reuses another's compile; the baseline
runs before and after the analysis and the faster is kept. Prints the compile counts, the
analysis's wall-time breakdown, and the ratio of its total to the bare compile + timing.
Scores against a fixed spec: detecting the hardware is not measured here.

    JAX_PLATFORMS=cpu .venv/bin/python benchmarks/jax_compile_count.py [--layers N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

from neural_cost import HardwareSpec, Measurement, Trace, analyze_workload
from neural_cost.adapters import JaxAdapter
from neural_cost.adapters import jax as jax_adapter_module
from neural_cost.adapters._jax.compiled import compile_log

SPEC = HardwareSpec("fixed spec", 1e12, 1e11, kind="cpu")
NAME = "deep_mlp"


def deep_mlp(x: jax.Array, weights: list[jax.Array], biases: list[jax.Array]) -> jax.Array:
    for w, b in zip(weights, biases, strict=True):
        x = jnp.tanh(x @ w + b)  # 4 equations: dot_general, broadcast_in_dim, add, tanh
    return x


class TimedAdapter(JaxAdapter):
    """``JaxAdapter`` with the wall time of each phase of an analysis recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] += time.perf_counter() - start

    def benchmark(self, model: Any, *args: Any, **options: Any) -> Measurement:
        with self.timed("benchmark"):
            measurement = super().benchmark(model, *args, **options)
        executable = self.executables.find(model, args, options.get("kwargs") or {}, ())
        with self.timed("cross-check"):  # read here, once; the trace then finds it read
            if executable is not None:
                executable.cross_check()
        return measurement

    def trace(self, model: Any, args: Any = (), kwargs: Any = None, **options: Any) -> Trace:
        read = jax_adapter_module.read_kernels

        def timed_read(*read_args: Any) -> Any:
            with self.timed("kernel mapping"):
                return read(*read_args)

        jax_adapter_module.read_kernels = timed_read  # the HLO read and record mapping, timed apart
        try:
            with self.timed("trace"):
                return super().trace(model, args, kwargs, **options)
        finally:
            jax_adapter_module.read_kernels = read


def bare_compile_and_time(args: tuple[Any, ...], warmup: int, repeats: int) -> tuple[float, float, float]:
    """``(compile seconds, timing seconds, median run)`` of the program with JAX alone."""
    start = time.perf_counter()
    compiled = jax.jit(deep_mlp).lower(*args).compile()
    compiled_at = time.perf_counter()
    for _ in range(warmup):
        jax.block_until_ready(compiled(*args))
    runs = []
    for _ in range(repeats):
        run_start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        runs.append(time.perf_counter() - run_start)
    return compiled_at - start, time.perf_counter() - compiled_at, statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=1100)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    options = parser.parse_args()
    args = (
        jnp.ones((32, 64), jnp.float32),
        [jnp.ones((64, 64), jnp.float32)] * options.layers,
        [jnp.ones((64,), jnp.float32)] * options.layers,
    )

    jax.clear_caches()
    with compile_log() as log:
        bare_runs = [bare_compile_and_time(args, options.warmup, options.repeats)]
    bare_compiles = len(log.of(NAME))

    jax.clear_caches()
    adapter = TimedAdapter()
    with compile_log() as log:
        start = time.perf_counter()
        report = analyze_workload(
            adapter, deep_mlp, args, hardware=SPEC, warmup=options.warmup, repeats=options.repeats
        )
        total = time.perf_counter() - start
    compiles, backend_seconds = len(log.of(NAME)), sum(log.of(NAME))

    jax.clear_caches()
    with compile_log() as log:
        start = time.perf_counter()
        alone = JaxAdapter().trace(deep_mlp, args)
        trace_alone = time.perf_counter() - start
    assert alone.cross_check is None

    jax.clear_caches()  # the baseline again, after: the first compile in a process pays JAX's own warm-up
    bare_runs.append(bare_compile_and_time(args, options.warmup, options.repeats))
    bare_compile, bare_timing, bare_median = min(bare_runs, key=lambda run: run[0] + run[1])

    seconds = adapter.seconds
    compile_seconds = report.measurement.compile_seconds or 0.0
    timing = seconds["benchmark"] - compile_seconds
    scoring = total - seconds["benchmark"] - seconds["cross-check"] - seconds["trace"]
    bare = bare_compile + bare_timing
    check = report.estimate.cross_check or {}
    print(f"equations:                    {report.estimate.coverage.static_total:,} ({options.layers} layers)")
    print(f"compiles of jit({NAME}):    analyze_workload {compiles} · trace alone {len(log.of(NAME))}")
    print(f"analyze_workload:             {total:.3f} s")
    mapping = seconds["kernel mapping"]
    print(f"  trace (make_jaxpr + walk):  {seconds['trace'] - mapping:.3f} s")
    print(f"  compile (lower + XLA):      {compile_seconds:.3f} s (XLA backend {backend_seconds:.3f} s)")
    print(f"  timing ({options.warmup} warmup + {options.repeats} runs): {timing:.3f} s")
    xla_flops = "unknown" if check.get("flops") is None else f"{check['flops']:,.0f}"
    print(f"  cross-check (read):         {seconds['cross-check']:.3f} s (XLA cost_analysis: {xla_flops} FLOPs)")
    print(f"  estimate + scoring:         {scoring:.3f} s")
    print(
        f"  kernel mapping (HLO read):  {mapping:.3f} s ({len(report.estimate.kernels):,} kernels, "
        f"{len(report.estimate.unmapped_operations):,} records unmapped)"
    )
    print(f"JaxAdapter().trace alone:     {trace_alone:.3f} s")
    print(
        f"bare jit compile + timing:    {bare:.3f} s (compile {bare_compile:.3f} s; the faster of 2, before and after)"
    )
    print(f"compiles of the bare jit:     {bare_compiles}")
    median = report.measurement.median_seconds
    print(f"median run:                   analyze {median * 1e3:.3f} ms · bare {bare_median * 1e3:.3f} ms")
    print(f"ratio analyze / bare:         {total / bare:.2f}")


if __name__ == "__main__":
    main()
