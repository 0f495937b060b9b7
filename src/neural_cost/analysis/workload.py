"""One workload — ``fn(*args, **kwargs)`` — timed, traced and scored through any adapter.

``neural-cost analyze``, ``neural-cost compare`` and ``Pipeline.run`` all go through
``analyze_workload``: what differs between frameworks is asked of the adapter (its
``workload_options``, ``device_of``, ``hardware``, ``compiles_when_timing``), never decided
here by the framework's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..costs.estimate import estimate_trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, benchmark
from .gap import GapReport, analyze_gap

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter
    from ..core.records import Trace


def time_workload(
    adapter: FrameworkAdapter | None,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    warmup: int = 10,
    repeats: int = 30,
    as_written: bool = False,
    clock: Callable[[], float] | None = None,
) -> Measurement:
    """Time ``fn(*args, **kwargs)`` with ``adapter.benchmark``; with the plain harness when
    there is no adapter, when a ``clock`` is injected, or when ``as_written`` and the adapter
    compiles what it times — a compiled whole program (JAX's jit, tf.function) would never
    time the Python dispatch and loops between its parts, which is what a pipeline's
    end-to-end run is there to show."""
    keywords = dict(kwargs or {})
    if clock is not None:
        return benchmark(fn, *args, warmup=warmup, repeats=repeats, clock=clock, **keywords)
    if adapter is None or (as_written and adapter.compiles_when_timing):
        return benchmark(fn, *args, warmup=warmup, repeats=repeats, **keywords)
    return adapter.benchmark(fn, *args, warmup=warmup, repeats=repeats, kwargs=keywords)


def trace_workload(
    adapter: FrameworkAdapter,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    trace_options: Mapping[str, Any] | None = None,
) -> Trace:
    """``adapter.trace`` with ``trace_options`` and the options the adapter reads off the
    workload itself. The model's keywords are passed as ``kwargs=`` only when there are some:
    an adapter written as ``trace(self, model, inputs, **kwargs)`` keeps working."""
    options = {**adapter.workload_options(fn, args, dict(kwargs or {})), **(trace_options or {})}
    if kwargs:
        return adapter.trace(fn, args, kwargs=dict(kwargs), **options)
    return adapter.trace(fn, args, **options)


def analyze_workload(
    adapter: FrameworkAdapter,
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    hardware: HardwareSpec | None = None,
    *,
    warmup: int = 10,
    repeats: int = 30,
    device: Any = None,
    measurement: Measurement | None = None,
    trace_options: Mapping[str, Any] | None = None,
) -> GapReport:
    """Time ``fn(*args, **kwargs)`` with ``adapter`` (unless ``measurement`` is given), trace
    it with the same adapter, and score it against ``hardware`` — by default the spec of
    ``device``, else of the device the workload runs on (``adapter.device_of``), else of the
    adapter's own device. ``trace_options`` go to ``adapter.trace`` (``param_argnums=``...)."""
    args = tuple(args)
    keywords = dict(kwargs or {})
    adapter.workload_options(fn, args, keywords)  # a workload that cannot run fails before it is timed
    if measurement is None:
        # time first: JAX's trace cross-check compiles too, and a second compile is a cache hit
        measurement = time_workload(adapter, fn, args, keywords, warmup=warmup, repeats=repeats)
    trace = trace_workload(adapter, fn, args, keywords, trace_options)
    if hardware is None:
        hardware = adapter.hardware(device if device is not None else adapter.device_of(fn, args, keywords))
    return analyze_gap(estimate_trace(trace), measurement, hardware)
