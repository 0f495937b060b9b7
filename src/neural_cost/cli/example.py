"""``neural-cost example``: the bundled numpy MLP, estimated, timed and scored on this machine."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from ..adapters.base import FrameworkAdapter, reject_options
from ..analysis.workload import analyze_workload
from ..core.errors import NeuralCostError
from ..core.records import Coverage, Trace
from ..examples import numpy_mlp
from ..hardware.spec import HardwareSpec
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
            memory_levels=spec.memory_levels,  # the caches the kernel bound places footprints in
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


class HandWrittenNumpy(FrameworkAdapter):
    """The numpy MLP's operations, written out by hand (numpy has no graph to trace)."""

    framework = "numpy (hand-written operations)"

    def __init__(self, batch: int) -> None:
        self.batch = batch

    def trace(self, model: Any, args: Any = (), kwargs: Mapping[str, Any] | None = None, **options: Any) -> Trace:
        reject_options("the numpy example", options, "none")
        operations = tuple(numpy_mlp.operations(batch=self.batch))
        return Trace(
            operations,
            Coverage.full(operations),
            input_shapes=(("x", tuple(args[0].shape)),),
            boundary=tuple(numpy_mlp.boundary(batch=self.batch)),
            framework=self.framework,
        )


Workload = tuple[FrameworkAdapter, Any, tuple[Any, ...], dict[str, Any]]


def _numpy_workload(batch: int) -> Workload:
    forward, arrays = numpy_mlp.build(batch=batch)
    return HandWrittenNumpy(batch), forward, arrays, {}


def _jax_workload(batch: int) -> Workload:
    from ..adapters import adapter_for
    from ..examples import jax_mlp

    forward, inputs = jax_mlp.build(batch=batch)
    return adapter_for("jax"), forward, inputs, {"param_argnums": 0}  # (params, x)


#: the bundled MLP in each framework: (adapter, forward, its arguments, trace options)
WORKLOADS: dict[str, Callable[[int], Workload]] = {"numpy": _numpy_workload, "jax": _jax_workload}


def run_example(args: argparse.Namespace) -> int:
    adapter, forward, inputs, options = WORKLOADS[_framework(args.framework)](args.batch)
    hardware = host_spec(args.peak_flops, args.memory_bandwidth)
    report = analyze_workload(
        adapter,
        forward,
        inputs,
        hardware=hardware,
        warmup=args.warmup,
        repeats=args.repeats,
        trace_options=options,
        profile=getattr(args, "profile", True),
        profile_runs=getattr(args, "profile_runs", 3),
        warm_seconds=getattr(args, "warm_seconds", 0.0),
    )
    print(report.render(top=args.top, by=args.by), end="")
    if args.json:
        try:
            path = write_json_atomic(args.json, report.to_dict())
        except OSError as error:
            raise NeuralCostError(
                f"--json {args.json}: cannot write the report ({error.strerror or error}); pass a path to a file "
                f"in a writable directory"
            ) from error
        print(f"wrote {path}")
    if getattr(args, "trace_out", None):
        from .analyze import write_trace_out

        print(f"wrote {write_trace_out(args.trace_out, report)}")
    return 0
