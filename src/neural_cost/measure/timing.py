"""The timing harness: warm up, time every run, wait for asynchronous devices inside the clock."""

from __future__ import annotations

import contextlib
import math
import numbers
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.attrs import FrozenAttrs, attrs_to_json
from ..core.errors import MeasurementError
from .device import DeviceInfo, _leaves, infer_device


class Telemetry(Protocol):
    """Allocator telemetry an adapter supplies: reset before the timed runs, read after."""

    def reset(self) -> None: ...

    def read(self) -> Mapping[str, int]: ...


DEVICE_KINDS = ("cpu", "gpu", "tpu", "npu", "unknown", "mixed")


@dataclass(frozen=True, slots=True)
class Measurement:
    """Timed runs of one workload, the device it ran on, and allocator figures if known."""

    samples_seconds: tuple[float, ...]
    device: str = "unknown"
    device_kind: str = "unknown"
    device_source: str = "not recorded"
    warmup_seconds: tuple[float, ...] = ()
    peak_memory_bytes: int | None = None
    allocator: Mapping[str, Any] = field(default_factory=FrozenAttrs)
    sync: str = "none"
    clock: str = "time.perf_counter"
    #: Time to compile before the first run (JIT frameworks), kept out of the samples.
    compile_seconds: float | None = None

    def __post_init__(self) -> None:
        samples = self._check_samples(self.samples_seconds, "samples_seconds")
        if not samples:
            raise MeasurementError(
                "Measurement.samples_seconds is empty: a measurement needs at least one timed run (repeats >= 1)"
            )
        object.__setattr__(self, "samples_seconds", samples)
        object.__setattr__(self, "warmup_seconds", self._check_samples(self.warmup_seconds, "warmup_seconds"))
        if self.device_kind not in DEVICE_KINDS:
            raise MeasurementError(
                f"Measurement.device_kind={self.device_kind!r}; use one of {', '.join(DEVICE_KINDS)}"
            )
        if self.peak_memory_bytes is not None and (
            isinstance(self.peak_memory_bytes, bool)
            or not isinstance(self.peak_memory_bytes, int)
            or self.peak_memory_bytes < 0
        ):
            raise MeasurementError(f"Measurement.peak_memory_bytes={self.peak_memory_bytes!r} must be bytes (int >= 0)")
        if self.compile_seconds is not None:
            (compile_seconds,) = self._check_samples((self.compile_seconds,), "compile_seconds")
            object.__setattr__(self, "compile_seconds", compile_seconds)
        if not isinstance(self.allocator, FrozenAttrs):
            object.__setattr__(self, "allocator", FrozenAttrs(self.allocator, "Measurement.allocator"))

    @staticmethod
    def _check_samples(values: Any, field_name: str) -> tuple[float, ...]:
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise MeasurementError(f"Measurement.{field_name}={values!r} must be a sequence of seconds")
        result = []
        for i, value in enumerate(values):
            # numbers.Real admits numpy scalars (np.float32 from a device timer), which are numbers too.
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise MeasurementError(f"Measurement.{field_name}[{i}]={value!r} must be a number of seconds")
            try:
                seconds = float(value)
            except OverflowError:  # an int too large for a float
                seconds = math.inf
            if not math.isfinite(seconds) or seconds < 0:
                raise MeasurementError(
                    f"Measurement.{field_name}[{i}]={value!r} must be a finite, non-negative number of seconds"
                )
            result.append(seconds)
        return tuple(result)

    @property
    def runs(self) -> int:
        return len(self.samples_seconds)

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.samples_seconds)

    @property
    def mean_seconds(self) -> float:
        return statistics.fmean(self.samples_seconds)

    @property
    def stdev_seconds(self) -> float:
        """Sample standard deviation (0 for a single run)."""
        return statistics.stdev(self.samples_seconds) if self.runs > 1 else 0.0

    @property
    def min_seconds(self) -> float:
        return min(self.samples_seconds)

    @property
    def max_seconds(self) -> float:
        return max(self.samples_seconds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples_seconds": list(self.samples_seconds),
            "warmup_seconds": list(self.warmup_seconds),
            "runs": self.runs,
            "median_seconds": self.median_seconds,
            "mean_seconds": self.mean_seconds,
            "stdev_seconds": self.stdev_seconds,
            "device": self.device,
            "device_kind": self.device_kind,
            "device_source": self.device_source,
            "peak_memory_bytes": self.peak_memory_bytes,
            "allocator": attrs_to_json(self.allocator),
            "sync": self.sync,
            "clock": self.clock,
            "compile_seconds": self.compile_seconds,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        return cls(
            samples_seconds=tuple(data["samples_seconds"]),
            device=data.get("device", "unknown"),
            device_kind=data.get("device_kind", "unknown"),
            device_source=data.get("device_source", "not recorded"),
            warmup_seconds=tuple(data.get("warmup_seconds", ())),
            peak_memory_bytes=data.get("peak_memory_bytes"),
            allocator=FrozenAttrs(data.get("allocator") or {}),
            sync=data.get("sync", "none"),
            clock=data.get("clock", "time.perf_counter"),
            compile_seconds=data.get("compile_seconds"),
        )


def auto_sync(result: Any) -> str:
    """Wait for asynchronous work behind ``result``; return what was done.

    JAX arrays are waited on with ``block_until_ready``; torch tensors on CUDA/MPS with the
    framework's synchronize (through the already-imported module, never importing it).
    """
    waited = "none: the result holds no arrays to wait on"
    for leaf in _leaves(result):
        if waited.startswith("none:"):
            waited = "none needed"  # there are arrays, and none of them is asynchronous (so far)
        block = getattr(leaf, "block_until_ready", None)
        if callable(block):
            block()
            waited = "block_until_ready"
            continue
        dev_type = getattr(getattr(leaf, "device", None), "type", None)
        torch = sys.modules.get("torch")
        if torch is not None and dev_type in ("cuda", "mps"):
            getattr(torch, dev_type).synchronize()
            return f"torch.{dev_type}.synchronize"
    return waited


#: ``progress(stage, done, total)`` after each run of ``benchmark``; stage is "warmup" or "timing".
Progress = Callable[[str, int, int], None]

# A context variable, not a benchmark() keyword: adapters call benchmark() inside their own
# benchmark methods, so a keyword would have to be threaded through every adapter, and it
# would capture a workload's own ``progress=`` keyword (benchmark forwards **kwargs to fn).
_progress: ContextVar[Progress | None] = ContextVar("neural_cost_benchmark_progress", default=None)


@contextlib.contextmanager
def reporting_progress(callback: Progress) -> Iterator[None]:
    """While the block runs, every ``benchmark`` call (also those inside an adapter) calls
    ``callback(stage, done, total)`` after each warmup and each timed run."""
    token = _progress.set(callback)
    try:
        yield
    finally:
        _progress.reset(token)


_warm: ContextVar[float] = ContextVar("neural_cost_benchmark_warm_seconds", default=0.0)
_before_timed: ContextVar[Callable[[], None] | None] = ContextVar("neural_cost_before_timed", default=None)


@contextlib.contextmanager
def before_timing(callback: Callable[[], None]) -> Iterator[None]:
    """While the block runs, every ``benchmark`` call (also those inside an adapter) calls ``callback()`` after
    its warm-up (and ``warming``), then makes one more untimed run (the reading pins two threads to two cores
    for milliseconds; the framework's own threads come back before the clock starts) and times its runs: a
    reading of the machine's state (``hardware.wake``) that the timed runs follow, outside their clock. An
    inner block replaces an outer one's callback while it runs."""
    token = _before_timed.set(callback)
    try:
        yield
    finally:
        _before_timed.reset(token)


@contextlib.contextmanager
def warming(seconds: float) -> Iterator[None]:
    """While the block runs, every ``benchmark`` call (also those inside an adapter, after it
    compiled) keeps running untimed after its counted warm-up runs until ``seconds`` have passed
    since the first of them: on a shared VM an idle core's threads take about half a second to
    come back, and a count of runs says nothing of how long they took."""
    token = _warm.set(max(0.0, float(seconds)))
    try:
        yield
    finally:
        _warm.reset(token)


def keep_warm(run: Callable[[], Any]) -> int:
    """Run ``run()`` untimed until ``warming``'s seconds have passed (none outside ``warming``), as
    ``benchmark`` does before its timed runs: a profiler started after a pause (tracing, a hooked
    run) otherwise times the first kernels of its first run on an idle core's sleeping threads (a
    ViT's first matmuls read 4.6× their expected time). The number of runs made."""
    seconds, started, count = _warm.get(), time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        run()
        count += 1
    return count


def display_name(fn: Any) -> str:
    """What to call ``fn`` in a message: what it wraps (``__wrapped__``, as ``functools.wraps``
    sets it), by its qualified name without ``<locals>`` paths (``build.<locals>.f`` is ``f``,
    a lambda in it ``<lambda>``), an object by its type; a wrapper of neural-cost's own that
    names nothing is "the workload"."""
    for _ in range(100):  # a __wrapped__ chain, as inspect.unwrap follows it, cut short if it loops
        inner = getattr(fn, "__wrapped__", None)
        if inner is None or inner is fn:
            break
        fn = inner
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if isinstance(name, str) and "<locals>" in name and str(getattr(fn, "__module__", "")).startswith("neural_cost."):
        return "the workload"  # an adapter's closure around the user's model: its name means nothing to them
    if not isinstance(name, str):
        return type(fn).__name__
    return name.rpartition("<locals>.")[2]


def _minor_faults() -> int | None:
    """The process's minor page faults so far (every thread), or None where ``resource`` is missing."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def _page_bytes() -> int:
    import resource

    return int(resource.getpagesize())


def benchmark(
    fn: Callable[..., Any],
    *args: Any,
    warmup: int = 3,
    repeats: int = 10,
    sync: Callable[[Any], Any] | str | None = "auto",
    clock: Callable[[], float] = time.perf_counter,
    device: str | None = None,
    device_kind: str | None = None,
    telemetry: Telemetry | None = None,
    **kwargs: Any,
) -> Measurement:
    """Call ``fn(*args, **kwargs)`` ``warmup`` times, then time ``repeats`` calls one by one.

    ``sync`` runs inside the timed region after each call: ``"auto"`` waits on JAX arrays
    and CUDA/MPS tensors in the result, a callable receives the result, None waits for
    nothing. ``clock`` is injectable so the harness is testable without real time. The
    device is inferred from the arguments unless given. Progress goes to the callback of
    ``reporting_progress``, if one is active.
    """
    if not callable(fn):
        raise MeasurementError(f"benchmark: fn={fn!r} is not callable; pass the function or model to time")
    for name, value, minimum in (("warmup", warmup, 0), ("repeats", repeats, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise MeasurementError(f"benchmark: {name}={value!r} must be an integer >= {minimum}")
    if isinstance(sync, str) and sync != "auto":
        raise MeasurementError(f"benchmark: sync={sync!r}; use 'auto', None, or a callable taking the result")

    sync_label = "none"
    last_result: Any = None
    report = _progress.get()

    def run_once() -> float:
        nonlocal sync_label, last_result
        start = clock()
        try:
            result = last_result = fn(*args, **kwargs)
            if sync == "auto":
                sync_label = auto_sync(result)
            elif callable(sync):
                sync(result)
                sync_label = f"user hook {display_name(sync)}"
        except Exception as error:
            raise MeasurementError(
                f"benchmark: {display_name(fn)} raised {type(error).__name__} while being timed: {error}"
            ) from error
        return clock() - start

    def runs(stage: str, count: int) -> tuple[float, ...]:
        seconds = []
        for done in range(1, count + 1):
            seconds.append(run_once())
            if report is not None:
                report(stage, done, count)
        return tuple(seconds)

    warm_started = time.perf_counter()
    warm = runs("warmup", warmup)
    while time.perf_counter() - warm_started < _warm.get():  # warming(): untimed, not in warmup_seconds
        run_once()
    if (before := _before_timed.get()) is not None:
        before()
        run_once()  # untimed: after the reading, before the clock
    if telemetry is not None:
        telemetry.reset()
    faults_before = _minor_faults()
    samples = runs("timing", repeats)
    faults_after = _minor_faults()
    figures: dict[str, Any] = dict(telemetry.read()) if telemetry is not None else {}
    if faults_before is not None and faults_after is not None:
        # the whole process's (every thread's) first touches of fresh pages, per timed run
        figures["minor_page_faults_per_run"] = (faults_after - faults_before) / repeats
        figures["page_bytes"] = _page_bytes()
    peak = figures.pop("peak_memory_bytes", None)
    inferred = infer_device(args, kwargs)
    if inferred.source.startswith("assumed"):  # no arrays among the arguments: the result may say where it ran
        from_result = infer_device(last_result)
        if not from_result.source.startswith("assumed"):
            inferred = DeviceInfo(from_result.name, from_result.kind, f"the result: {from_result.source}")
    return Measurement(
        samples_seconds=samples,
        device=device or inferred.name,
        device_kind=device_kind or (inferred.kind if device is None else "unknown"),
        device_source="given by the caller" if device is not None else inferred.source,
        warmup_seconds=warm,
        peak_memory_bytes=peak,
        allocator=FrozenAttrs(figures),
        sync=sync_label,
        clock="time.perf_counter" if clock is time.perf_counter else display_name(clock),
    )
