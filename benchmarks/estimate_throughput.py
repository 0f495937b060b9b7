"""How fast does neural-cost turn operations into an estimate?

Builds 100,000 synthetic operations of mixed kinds (each validated by its cost rule when
made), estimates them, and renders a report. Prints operations per second for each phase,
and the ratio of our total to a reference in the same process: a bare Python loop that
computes the same FLOP and byte totals from plain tuples, with no records or validation —
the floor any pure-Python counter pays.

    .venv/bin/python benchmarks/estimate_throughput.py [--operations N]
"""

from __future__ import annotations

import argparse
import math
import time

from neural_cost import HardwareSpec, Measurement, Operation, analyze_gap, estimate_operations


def specs(n: int) -> list[tuple[str, str, tuple[tuple[int, ...], ...], tuple[int, ...], dict]]:
    """A repeating mix of kinds with a different batch for every record: real programs repeat
    layers (and the cost-rule cache then helps), but this measures the uncached path."""
    items = []
    for i in range(n):
        b = 1 + i  # every record distinct: no cost-rule cache hit
        mix = [
            ("matmul", ((b, 256), (256, 512)), (b, 512), {}),
            ("elementwise", ((b, 512), (512,)), (b, 512), {"op": "add"}),
            ("conv", ((b, 32, 28, 28), (64, 32, 3, 3)), (b, 64, 28, 28), {"padding": 1}),
            ("layernorm", ((b, 512), (512,), (512,)), (b, 512), {}),
            ("gather", ((50_000, 128), (b,)), (b, 128), {}),
            ("softmax", ((b, 8, 128, 128),), (b, 8, 128, 128), {}),
        ]
        kind, inputs, output, attrs = mix[i % len(mix)]
        items.append((f"op{i}", kind, inputs, output, attrs))
    return items


def reference_totals(items: list) -> tuple[int, int]:
    """The same totals as plain arithmetic over tuples (the reference run)."""
    flops = nbytes = 0
    for _, kind, inputs, output, _attrs in items:
        out = math.prod(output)
        if kind == "matmul":
            flops += 2 * out * inputs[0][1]
        elif kind == "conv":
            flops += 2 * out * inputs[1][1] * inputs[1][2] * inputs[1][3]
        elif kind == "layernorm":
            length = output[-1]
            flops += (out // length) * (5 * length + 2) + 2 * out
        elif kind == "softmax":
            length = output[-1]
            flops += (out // length) * (5 * length - 2)
        elif kind == "elementwise":
            flops += out
        if kind == "gather":
            nbytes += 4 * out + 8 * math.prod(inputs[1]) + 4 * out
        else:
            nbytes += 4 * sum(math.prod(s) for s in inputs) + 4 * out
    return flops, nbytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=100_000)
    n = parser.parse_args().operations
    items = specs(n)

    start = time.perf_counter()
    ref_flops, ref_bytes = reference_totals(items)
    reference = time.perf_counter() - start

    start = time.perf_counter()
    ops = [Operation(name, kind, inputs, output, attrs=attrs) for name, kind, inputs, output, attrs in items]
    built = time.perf_counter() - start

    start = time.perf_counter()
    estimate = estimate_operations(ops)
    estimated = time.perf_counter() - start

    assert (estimate.flops, estimate.bytes) == (ref_flops, ref_bytes), "totals disagree with the reference"

    start = time.perf_counter()
    report = analyze_gap(estimate, Measurement((1.0,) * 5, device_kind="cpu"), HardwareSpec("cpu", 1e12, 1e11))
    text = report.render(top=10)
    rendered = time.perf_counter() - start
    assert text

    total = built + estimated + rendered
    print(f"operations:                {n:,}")
    print(f"build + validate records:  {built:.3f} s  ({n / built:,.0f} ops/s)")
    print(f"estimate_operations:       {estimated:.3f} s  ({n / estimated:,.0f} ops/s)")
    print(f"analyze_gap + render:      {rendered:.3f} s  ({n / rendered:,.0f} ops/s)")
    print(f"total:                     {total:.3f} s  ({n / total:,.0f} ops/s)")
    print(f"reference (bare loop):     {reference:.3f} s  ({n / reference:,.0f} ops/s)")
    print(f"ratio total / reference:   {total / reference:.1f}x")


if __name__ == "__main__":
    main()
