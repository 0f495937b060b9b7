"""``neural-cost example``: the bundled numpy MLP, estimated, timed and scored on this machine."""

from __future__ import annotations

import argparse

from ..analysis.gap import analyze_gap
from ..core.errors import NeuralCostError
from ..costs.estimate import estimate_operations
from ..examples import numpy_mlp
from ..hardware.spec import HardwareSpec
from ..measure.timing import benchmark
from .output import write_json_atomic


def host_spec(peak_flops: float | None, memory_bandwidth: float | None) -> HardwareSpec:
    from ..hardware.host import host_cpu_spec

    if peak_flops is not None and memory_bandwidth is not None:
        return HardwareSpec("host CPU (user-supplied peaks)", peak_flops, memory_bandwidth, kind="cpu")
    spec, _ = host_cpu_spec(memory_bandwidth=memory_bandwidth)
    if peak_flops is not None:
        return HardwareSpec(
            spec.name,
            peak_flops,
            spec.memory_bandwidth,
            kind=spec.kind,
            memory_capacity=spec.memory_capacity,
            source=f"peak user-supplied; {spec.source}",
        )
    return spec


def _framework(choice: str) -> str:
    if choice != "auto":
        return choice
    try:
        import jax  # noqa: F401
    except ImportError:
        return "numpy"
    return "jax"


def run_example(args: argparse.Namespace) -> int:
    batch = args.batch
    if _framework(args.framework) == "jax":
        from ..adapters import JaxAdapter
        from ..costs.estimate import estimate_trace
        from ..examples import jax_mlp

        adapter = JaxAdapter()
        forward, inputs = jax_mlp.build(batch=batch)
        # time first: the trace's cross-check compiles too, and a second compile is a cache hit
        measurement = adapter.benchmark(forward, *inputs, warmup=args.warmup, repeats=args.repeats)
        estimate = estimate_trace(adapter.trace(forward, inputs, param_argnums=0))
    else:
        forward, arrays = numpy_mlp.build(batch=batch)
        estimate = estimate_operations(
            numpy_mlp.operations(batch=batch),
            boundary=numpy_mlp.boundary(batch=batch),
            input_shapes=[("x", arrays[0].shape)],
            framework="numpy (hand-written operations)",
        )
        measurement = benchmark(forward, *arrays, warmup=args.warmup, repeats=args.repeats)
    hardware = host_spec(args.peak_flops, args.memory_bandwidth)
    report = analyze_gap(estimate, measurement, hardware)
    print(report.render(top=args.top, group_by_scope=args.group_by_scope), end="")
    if args.json:
        try:
            path = write_json_atomic(args.json, report.to_dict())
        except OSError as error:
            raise NeuralCostError(
                f"--json {args.json}: cannot write the report ({error.strerror or error}); pass a path to a file "
                f"in a writable directory"
            ) from error
        print(f"wrote {path}")
    return 0
