"""FrameworkAdapter: the small contract every framework (or your own) implements.

One shape for every adapter, so callers (the CLI, ``Pipeline``, ``profile_model``) never ask
which framework they hold:

- ``trace(model, args=(), kwargs=None, **options) -> Trace`` runs or traces
  ``model(*args, **kwargs)``; ``options`` are the framework's own keywords (JAX
  ``static_argnums``/``param_argnums``, PyTorch ``training``/``loss_fn``/``optimizer``,
  TensorFlow ``training``), and an option an adapter does not know is an error naming it.
- ``operations(...)``: the same arguments, the trace's records.
- ``benchmark(model, *args, warmup=10, repeats=30, kwargs=None, **options) -> Measurement``;
  PyTorch times a training step with the same ``training``/``loss_fn``/``optimizer`` as ``trace``.
- ``hardware(device=None)``, ``calibrate(device=None, *, dtypes, size, copy_bytes, repeats)``.
- ``profile(model, args=(), kwargs=None, *, trace, runs=3, **options) -> Profile``: run the
  workload ``runs`` more times under the framework's profiler (after the timed runs, never
  inside them) and join its events to ``trace.kernels`` by index (``core/profile.py``);
  ``profiles`` says whether an adapter has one.
- What differs between frameworks is said by attributes and small methods, not by name:
  ``compiles_when_timing``, ``traces_training_step``, ``device_from_environment``,
  ``program_options``, ``workload_options()``, ``device_of()``.

A subclass implements ``trace()`` — or only ``operations()``, in which case its trace is
100% modeled — and inherits timing, hardware and calibration. A trace that modeled no
operation (none at all, or only free and unmodeled ones) is an error naming its likely cause
(``require_modeled``): every adapter's ``trace`` calls it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import AdapterError, HardwareError
from ..core.profile import Profile
from ..core.records import Coverage, Operation, Trace, as_shape
from ..core.units import plural
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, benchmark


@dataclass(frozen=True, slots=True)
class MicroProgram:
    """One micro-benchmark of the kernel calibration (``analysis/calibrate_kernels.py``): a
    small program of one kernel class at one size, run through this adapter like a workload."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    trace_options: Mapping[str, Any] = field(default_factory=dict)
    #: A program whose kernels run in a compiled loop: its trip count, and the same program at fewer
    #: trips. The two wall times apart are the loop's own time per trip, profiler-free: a profiler's
    #: cost per event (0.2–0.4 µs under ``jax.profiler``) swamps a loop body's kernels of tens of ns.
    trips: int = 0
    shorter: MicroProgram | None = None
    #: A whole recurrent layer's program at fewer steps (``trips`` each: its steps): the two wall times apart
    #: are its steps' own time, the rest of its wall its cost per call (``wall_points``).
    fewer_steps: MicroProgram | None = None


def example_input_shapes(inputs: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Shapes of the example inputs that have one (arrays and tensors), by position or name, inside lists, tuples
    and dicts too, each named by its path (``named_leaves``)."""
    shapes = []
    for name, value in named_leaves(inputs):
        try:
            shapes.append((name, as_shape(tuple(value.shape), f"input {name} shape")))
        except Exception:  # symbolic or unknown dims: not a concrete example shape
            continue
    return tuple(shapes)


def named_leaves(inputs: Any) -> list[tuple[str, Any]]:
    """The values with a shape among the inputs (a sequence of arguments, ``arg0``, ``arg1``...; or a mapping of
    keyword arguments, by name), inside lists, tuples and dicts too, each named by its path as JAX's ``keystr``
    writes one: ``arg0[1]``, ``arg0['image']``, ``mask['a']``. A value with no shape (None, a number) is left out."""
    if isinstance(inputs, Mapping):
        items = [(str(name), value) for name, value in inputs.items()]
    elif isinstance(inputs, Sequence) and not isinstance(inputs, (str, bytes)):
        items = [(f"arg{i}", value) for i, value in enumerate(inputs)]
    else:
        items = [("arg0", inputs)]
    return [found for name, value in items for found in _leaves(value, name)]


def _leaves(value: Any, name: str) -> list[tuple[str, Any]]:
    if getattr(value, "shape", None) is not None:
        return [(name, value)]
    if isinstance(value, Mapping):
        return [found for key, item in value.items() for found in _leaves(item, f"{name}[{key!r}]")]
    if isinstance(value, (list, tuple)):
        return [found for i, item in enumerate(value) for found in _leaves(item, f"{name}[{i}]")]
    return []


def reject_options(owner: str, options: Mapping[str, Any], known: str) -> None:
    """An option no adapter parameter took is an error, never silently dropped: a model
    keyword passed loose (``trace(fn, args, scale=2)``) belongs in ``kwargs={...}``."""
    if options:
        names = ", ".join(repr(name) for name in options)
        raise AdapterError(
            f"{owner}: unknown option(s) {names}; its options are {known}. Keyword arguments of the model "
            f"itself go in kwargs={{...}}"
        )


def require_modeled(coverage: Coverage, owner: str, framework: str) -> None:
    """A trace that modeled nothing is an error, never a report of 100% coverage of no work.

    Its likely cause: the model runs in another framework (the wrong adapter saw none of its
    work) or does its work outside this one (numpy on the host). ``framework`` names where
    the work was looked for ("torch", "jax", "tensorflow", or a custom adapter's name).
    """
    if coverage.modeled:
        return
    unit = coverage.unit[:-1] if coverage.unit.endswith("s") else coverage.unit
    cause = f"the model may run in another framework (wrong --framework?) or do its work outside {framework} (numpy?)"
    if coverage.total == 0:
        raise AdapterError(f"{owner}: the trace holds no {coverage.unit} at all: {cause}")
    seen = f"free {coverage.free}"
    if coverage.unmodeled:
        seen += ", unmodeled " + ", ".join(f"{name} x{count}" for name, count in coverage.unmodeled[:5])
    raise AdapterError(f"{owner}: no {unit} was modeled (of {plural(coverage.total, coverage.unit)}: {seen}): {cause}")


def _keywords(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """``kwargs=`` passed on only when given: an adapter written as ``operations(self, model,
    inputs, **kwargs)`` keeps working."""
    return {} if kwargs is None else {"kwargs": kwargs}


class FrameworkAdapter:
    """Turns a framework's model into portable ``Operation`` records, and times it.

    Override ``trace`` (operations plus coverage, loops, scopes) or just ``operations``.
    """

    framework: str = "custom"
    coverage_unit: str = "operations"
    #: ``benchmark`` compiles the model into one program before timing it (JAX's jit,
    #: tf.function): Python dispatch and loops around the calls inside are not what it times.
    compiles_when_timing: bool = False
    #: ``trace(..., training=True)`` traces a whole training step (forward, backward, optimizer).
    traces_training_step: bool = False
    #: The device programs run on is chosen by the environment (``JAX_PLATFORMS``), not by
    #: where the workload put its arrays.
    device_from_environment: bool = False
    #: ``profile()`` reads the framework's profiler into measured time per kernel.
    profiles: bool = False
    #: How the kernel calibration measures a micro-program's kernels: ``"wall"`` (each program
    #: is one kernel, timed whole as the framework runs it eagerly: Python and dispatch count, as
    #: they do between eager ops) or ``"profile"`` (each kernel's time from the profiler: a
    #: compiled program's kernels run back to back, its dispatch is the framework floor).
    kernel_timing: str = "profile"
    #: Options that choose which program runs (a training step or a forward, which arguments are
    #: static): ``trace``, ``benchmark`` and ``profile`` all take them, and a report must time
    #: the program it traced (``analysis.workload.program_options``).
    program_options: frozenset[str] = frozenset()

    # -- tracing ----------------------------------------------------------------------------
    def trace(self, model: Any, args: Any = (), kwargs: Mapping[str, Any] | None = None, **options: Any) -> Trace:
        """The operations ``model(*args, **kwargs)`` executes, with their coverage."""
        if type(self).operations is FrameworkAdapter.operations:
            raise NotImplementedError(
                f"{type(self).__name__} must implement trace(model, args) or operations(model, args)"
            )
        ops = self.operations(model, args, **_keywords(kwargs), **options)
        try:
            ops = tuple(ops)
        except TypeError:
            raise AdapterError(
                f"{type(self).__name__}.operations() returned {type(ops).__name__}, not a sequence"
            ) from None
        for i, op in enumerate(ops):
            if not isinstance(op, Operation):
                raise AdapterError(
                    f"{type(self).__name__}.operations() item {i} is a {type(op).__name__}, not an Operation"
                )
        coverage = Coverage.full(ops, unit=self.coverage_unit)
        where = self.framework if self.framework != "custom" else f"what {type(self).__name__} records"
        require_modeled(coverage, f"{type(self).__name__}.trace", where)
        return Trace(
            operations=ops,
            coverage=coverage,
            input_shapes=example_input_shapes(args) + (example_input_shapes(kwargs) if kwargs else ()),
            framework=self.framework,
        )

    def operations(
        self, model: Any, args: Any = (), kwargs: Mapping[str, Any] | None = None, **options: Any
    ) -> Sequence[Operation]:
        """``trace(...).operations``: the records alone."""
        if type(self).trace is FrameworkAdapter.trace:
            raise NotImplementedError(
                f"{type(self).__name__} must implement trace(model, args) or operations(model, args)"
            )
        return self.trace(model, args, **_keywords(kwargs), **options).operations

    def workload_options(self, model: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The trace options this adapter reads off a workload given as ``(model, args,
        kwargs)`` (JAX: a Flax ``apply``'s variables are parameters); raises ``AdapterError``
        for a model that cannot run as given. None by default."""
        return {}

    # -- timing -----------------------------------------------------------------------------
    def benchmark(
        self,
        model: Any,
        *args: Any,
        warmup: int = 10,
        repeats: int = 30,
        kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Measurement:
        """Time ``model(*args, **kwargs)``; ``options`` go to ``measure.benchmark`` (``sync``,
        ``clock``...). Framework adapters add compilation, syncing and telemetry."""
        return benchmark(model, *args, warmup=warmup, repeats=repeats, **options, **dict(kwargs or {}))

    def profile(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        trace: Trace,
        runs: int = 3,
        **options: Any,
    ) -> Profile:
        """Measured time per kernel of ``trace`` over ``runs`` profiled runs (``core/profile.py``).
        ``options`` are the ones ``benchmark`` and ``trace`` took (``static_argnums``, ``training``...)."""
        raise AdapterError(f"{type(self).__name__} has no profiler: its report has no measured time per kernel")

    def first_touch_seconds_per_byte(self) -> float | None:
        """What writing a result to freshly mapped pages costs beyond warm ones, per byte (through
        this framework's own allocation where it can be asked for one fresh buffer); None where
        the adapter cannot say. An eager framework's expected time predicts the faults of results
        glibc maps anew; a compiled program's are measured and priced at this cost, never predicted."""
        return None

    def evicted_seconds_per_byte(self) -> float | None:
        """What an operand its caches no longer hold adds to a kernel timed on reused ones, per byte (hot against
        cold operands); None where the adapter cannot say (a compiled program's trace says no reuse)."""
        return None

    def keeping_compiled(self, count: int) -> AbstractContextManager[None]:
        """Inside the ``with`` block, keep at least ``count`` compiled programs (a calibration goes
        round hundreds in each pass; an adapter that keeps a few compiles each again every pass).
        Nothing to do for an adapter that compiles nothing."""
        return nullcontext()

    def microbenchmarks(self, quick: bool = False) -> list[MicroProgram]:
        """The kernel calibration's micro-programs for this framework (``quick``: a small grid,
        for tests); none for an adapter without them (its kernels are then expected at their bound)."""
        return []

    def harness_program(self) -> MicroProgram | None:
        """A wall-timed adapter's empty micro-program: nothing but the wrapper its micro-programs run in, whose
        time a timed run pays once and a model's ops do not (``analysis.harness.harness_seconds``); None where
        the kernels are timed from a profiler or the adapter cannot say."""
        return None

    # -- hardware ---------------------------------------------------------------------------
    def device_of(self, model: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """The device a workload runs on, when its model or arrays say (PyTorch: where its
        parameters live); None: the device this adapter runs on (``hardware()``'s default)."""
        return None

    def hardware(self, device: Any = None) -> HardwareSpec:
        """The spec of ``device``, else of the device this adapter runs on: the host CPU unless overridden."""
        from ..hardware.detect import detect_hardware

        spec, _ = detect_hardware(device)
        return spec

    def calibrate(
        self,
        device: Any = None,
        *,
        dtypes: Sequence[str] | None = None,
        size: int | None = None,
        copy_bytes: int | None = None,
        repeats: int = 3,
    ) -> tuple[HardwareSpec, Any]:
        """Measure matmul FLOP/s per dtype and copy bandwidth through the framework on
        ``device``: ``(spec, details)``, as ``neural_cost.calibrate`` returns."""
        raise HardwareError(
            f"{type(self).__name__} has no calibration: pass a HardwareSpec with measured or datasheet peaks, "
            f"or use a framework adapter whose calibrate() measures its device"
        )
