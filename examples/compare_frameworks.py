"""One Linear-style layer over a sweep of batch sizes, in every installed framework.

Each row: framework, shape, FLOPs, bytes (MB), arithmetic intensity, median ms, ± ms,
roofline efficiency, a 20-cell bar, achieved GFLOP/s and GB/s, and which side bounds it.
Counts follow neural-cost's conventions (the weight is read once per call). Hardware is
detected on this machine unless --peak-flops and --memory-bandwidth are given; frameworks
that are not installed are skipped with a note.

    .venv/bin/python examples/compare_frameworks.py [--batches 1,16,64,256] [--features 1024]
"""

from __future__ import annotations

import argparse
import importlib.util
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from neural_cost import GapReport, HardwareSpec, analyze_gap, detect_hardware, estimate_trace


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def torch_row(batch: int, features: int, warmup: int, repeats: int, hardware: HardwareSpec) -> GapReport:
    import torch

    from neural_cost.adapters import TorchAdapter

    layer = torch.nn.Linear(features, features, bias=False).eval()
    x = torch.randn(batch, features)
    adapter = TorchAdapter()
    measured = adapter.benchmark(layer, x, warmup=warmup, repeats=repeats)
    return analyze_gap(estimate_trace(adapter.trace(layer, (x,))), measured, hardware)


def jax_row(batch: int, features: int, warmup: int, repeats: int, hardware: HardwareSpec) -> GapReport:
    import jax

    from neural_cost.adapters import JaxAdapter

    w = jax.random.normal(jax.random.key(0), (features, features))
    x = jax.random.normal(jax.random.key(1), (batch, features))
    adapter = JaxAdapter(cross_check=False)

    def layer(w, x):
        return x @ w

    measured = adapter.benchmark(layer, w, x, warmup=warmup, repeats=repeats)
    return analyze_gap(estimate_trace(adapter.trace(layer, (w, x), param_argnums=0)), measured, hardware)


def tensorflow_row(batch: int, features: int, warmup: int, repeats: int, hardware: HardwareSpec) -> GapReport:
    import keras
    import tensorflow as tf

    from neural_cost.adapters import TensorFlowAdapter

    layer = keras.Sequential([keras.Input((features,)), keras.layers.Dense(features, use_bias=False)])
    x = tf.random.normal((batch, features))
    adapter = TensorFlowAdapter()
    measured = adapter.benchmark(layer, x, warmup=warmup, repeats=repeats)
    return analyze_gap(estimate_trace(adapter.trace(layer, (x,))), measured, hardware)


FRAMEWORKS = {"PyTorch": ("torch", torch_row), "JAX": ("jax", jax_row), "TensorFlow": ("tensorflow", tensorflow_row)}


def bar(fraction: float, cells: int = 20) -> str:
    filled = max(0, min(cells, round(fraction * cells)))
    return "[" + "█" * filled + "░" * (cells - filled) + "]"


def table(rows: list[tuple[str, str, GapReport]]) -> str:
    header = (
        f"{'framework':11s}{'shape':>16s}{'FLOPs':>14s}{'bytes(MB)':>11s}{'AI':>8s}{'ms(med)':>10s}{'±ms':>8s}"
        f"{'effic.':>9s}   {'roofline':22s}{'GFLOP/s':>9s}{'GB/s':>9s}  bound"
    )
    rule = "─" * len(header)
    lines = [rule, header, rule]
    for framework, shape, report in rows:
        e, m = report.estimate, report.measurement
        lines.append(
            f"{framework:11s}{shape:>16s}{e.flops:>14,}{e.bytes / 1e6:>11.1f}{e.arithmetic_intensity:>8.1f}"
            f"{m.median_seconds * 1e3:>10.3f}{m.stdev_seconds * 1e3:>8.3f}{report.efficiency * 100:>8.1f}%   "
            f"{bar(report.efficiency):22s}{report.achieved_flops_per_second / 1e9:>9.1f}"
            f"{report.achieved_bytes_per_second / 1e9:>9.1f}  {report.bound_side}"
        )
    lines.append(rule)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,16,64,256")
    parser.add_argument("--features", type=int, default=1024)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--peak-flops", type=float)
    parser.add_argument("--memory-bandwidth", type=float)
    args = parser.parse_args(argv)
    if args.peak_flops and args.memory_bandwidth:
        hardware = HardwareSpec("given peaks", args.peak_flops, args.memory_bandwidth, kind="cpu")
    else:
        hardware, _ = detect_hardware("cpu")
    rows, notes = [], []
    for framework, (module, row) in FRAMEWORKS.items():
        if not _installed(module):
            notes.append(f"{framework}: not installed, skipped (pip install 'neural-cost[{module}]')")
            continue
        for batch in (int(b) for b in args.batches.split(",")):
            shape = f"{batch}×{args.features}→{args.features}"
            rows.append((framework, shape, row(batch, args.features, args.warmup, args.repeats, hardware)))
    if any(report.efficiency > 1 for _, _, report in rows):
        notes.append(
            "an efficiency above 100% is shown, not clamped: that row beat its bound, so the bound is wrong for it — "
            "typically a working set that stays in cache between runs, so DRAM bandwidth is the wrong roof"
        )
    text = f"peaks for {hardware.name} ({hardware.source})\n" + table(rows) + "".join(f"\nnote: {n}" for n in notes)
    print(text)
    return text


if __name__ == "__main__":
    main()
