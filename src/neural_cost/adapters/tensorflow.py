"""TensorFlowAdapter: the graph ops a Keras model or tf.function really runs.

Traces a concrete function for the example inputs' shapes and dtypes and walks every graph
op — into called functions and control flow — through the op table (see ``_tf/``).
Imported only when TensorFlow is installed.

A library op counts as the op: Keras's norm layers and the ``Gelu``/``LogSigmoid`` scopes of
``tf.nn`` are each one record of the op's kind (``_tf/composites.py``). Each graph op that
does work is one kernel (``_tf/kernels.py``), its traffic the graph's unfused traffic; a
``tf.function(jit_compile=True)`` has XLA's kernels instead, read from its optimized HLO
(``_tf/xla.py``), or the graph's ops with a note saying why they could not be read.
``profile`` joins ``tf.profiler``'s events to those kernels (``_tf/profile.py``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import tensorflow as tf

from ..core.errors import AdapterError, HardwareError
from ..core.profile import Profile
from ..core.records import Coverage, Operation, Shape, TensorSpec, Trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, benchmark, display_name
from . import _tf
from ._tf import ops  # noqa: F401  (registers the table)
from ._tf.composites import norm_layers
from ._tf.kernels import KERNEL_SOURCE, XLA_NOTE
from ._tf.profile import keeping, kept, profile_concrete
from ._tf.table import TfContext
from ._tf.walker import Walker
from ._tf.xla import FALLBACK, XLA_SOURCE, optimized_hlo, xla_kernels
from ._walk import check_loop_options
from .base import FrameworkAdapter, MicroProgram, example_input_shapes, named_leaves, reject_options, require_modeled

del _tf


def _name_of(model: Any) -> str:
    name = getattr(model, "name", None)  # a Keras model's or tf.Module's own name
    return name if isinstance(name, str) and name else display_name(model)


def _positional(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _spec(value: Any, where: str) -> Any:
    """A ``tf.TensorSpec`` of a tensor, or the same structure of them for a list, tuple or dict of tensors (a Keras
    model of several inputs takes them so); ``where`` names the argument in an error."""
    if isinstance(value, dict):
        return {key: _spec(item, f"{where}[{key!r}]") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_spec(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)  # a namedtuple's fields
    if isinstance(value, tf.TensorSpec):
        tensor: Any = value
    else:
        try:
            tensor = tf.convert_to_tensor(value)
        except (TypeError, ValueError) as error:
            raise AdapterError(
                f"TensorFlowAdapter: {where} is not a tensor ({type(value).__name__}): {error}"
            ) from error
    if tensor.shape.rank is None or any(d is None for d in tensor.shape.as_list()):
        raise AdapterError(
            f"TensorFlowAdapter: {where} has an unknown dimension ({tensor.shape}); pass a concrete example input "
            f"(for example tf.zeros((batch, ...))) so every op has a static shape"
        )
    return tf.TensorSpec(tensor.shape, tensor.dtype)


def _callable(model: Any, training: bool, kwargs: Mapping[str, Any]) -> Any:
    """A tf.function calling ``model``: Keras models get ``training=``; tf.functions are used as they are,
    and so is a tf.Module's ``__call__`` that is a jit_compile tf.function (its XLA kernels are read)."""
    if hasattr(model, "get_concrete_function") and not kwargs:
        return model
    method = model.__call__  # a tf.Module's method, bound
    if not kwargs and hasattr(method, "get_concrete_function") and getattr(method, "_jit_compile", None) is True:
        return method
    is_keras = hasattr(model, "layers") or type(model).__module__.startswith("keras")

    def call(*args: Any) -> Any:
        return model(*args, training=training, **kwargs) if is_keras else model(*args, **kwargs)

    return tf.function(call)


class TensorFlowAdapter(FrameworkAdapter):
    """Trace, count and time Keras models, tf.Modules and (tf.function) callables."""

    framework = "tensorflow"
    coverage_unit = "graph ops"
    compiles_when_timing = True  # benchmark() times a tf.function: Python around the ops is traced away
    program_options = frozenset({"training"})  # a Keras model's training-mode forward
    profiles = True  # profile(): tf.profiler's events per kernel (``_tf/profile.py``)

    def __init__(self, trip_counts: Mapping[int | str, int] | None = None, default_trip_count: int = 8) -> None:
        check_loop_options("TensorFlowAdapter", trip_counts, default_trip_count)
        self.trip_counts = dict(trip_counts or {})
        self.default_trip_count = default_trip_count

    def trace(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        training: bool = False,
        **options: Any,
    ) -> Trace:
        """Trace ``model(*args, **kwargs)`` (Keras: with ``training=False`` unless asked) for the
        example inputs' shapes and dtypes, and lower every graph op it runs."""
        reject_options("TensorFlowAdapter.trace", options, "training")
        inputs = args
        if not callable(model):
            raise AdapterError(
                f"TensorFlowAdapter.trace: model={model!r} is not callable; pass a Keras model, "
                f"a tf.Module or a function"
            )
        positional = _positional(inputs)
        specs = [_spec(a, f"input {i}") for i, a in enumerate(positional)]
        function = _callable(model, training, dict(kwargs or {}))
        try:
            concrete = function.get_concrete_function(*specs)
        except Exception as error:
            raise AdapterError(
                f"TensorFlowAdapter.trace: tracing {_name_of(model)} for inputs "
                f"{[shape for _, shape in example_input_shapes(specs)]} failed ({type(error).__name__}): {error}"
            ) from error
        walker = Walker(self.trip_counts, self.default_trip_count, norm_layers(model), training)
        state = walker.run(concrete.graph)
        coverage = Coverage(
            total=state.executed,
            modeled=state.modeled,
            free=state.free,
            unmodeled=tuple(state.unmodeled.items()),
            static_total=state.static,
            unit=self.coverage_unit,
            unmodeled_work=state.work_entries(),
        )
        require_modeled(coverage, "TensorFlowAdapter.trace", "tensorflow")
        clean = _scope_cleaner(model)
        operations = tuple(state.operations if clean is None else _keras_scopes(state.operations, clean))
        kernels = walker.kernels.kernels(walker.walked, operations, clean or (lambda scope: scope))
        kernel_source, kernel_notes = KERNEL_SOURCE, walker.kernels.notes()
        if getattr(function, "_jit_compile", None) is True:  # the traced function itself, not a wrapper of ours
            try:
                text = optimized_hlo(function, specs)
                names = walker.kernels.hlo_names(walker.walked)
                read = xla_kernels(text, operations, names, walker.hlo_loops, self.default_trip_count)
                kernels, kernel_source, kernel_notes = read.kernels, XLA_SOURCE, list(read.notes)
            except AdapterError as error:
                kernel_notes.append(FALLBACK.format(why=error))
        elif walker.xla:
            kernel_notes.append(XLA_NOTE)
        notes = [*state.notes, *kernel_notes]
        return Trace(
            operations=operations,
            coverage=coverage,
            input_shapes=example_input_shapes(specs),
            loop_assumptions=tuple(state.loops),
            framework="tensorflow",
            boundary=_boundary(concrete),
            notes=tuple(dict.fromkeys(notes)),
            kernels=kernels,
            kernel_source=kernel_source,
        )

    def benchmark(
        self,
        model: Any,
        *args: Any,
        warmup: int = 10,
        repeats: int = 30,
        kwargs: Mapping[str, Any] | None = None,
        jit_compile: bool = False,
        training: bool = False,
        **options: Any,
    ) -> Measurement:
        """Time the compiled ``tf.function`` (with XLA when ``jit_compile``), forcing completion
        inside each timed run; the first call (tracing and compiling) is timed apart. A Keras
        model runs with ``training=`` (its training-mode forward, as ``trace(training=True)``
        traces it). A function that writes variables (a training step applying gradients, a
        batch norm's moving statistics) gets every variable it uses put back after the timed
        runs: timing leaves the model and the optimizer as they were."""
        reject_options("TensorFlowAdapter.benchmark", options, "jit_compile, training")
        inputs = args
        if not callable(model):
            raise AdapterError(f"TensorFlowAdapter.benchmark: model={model!r} is not callable")
        is_keras = hasattr(model, "layers") or type(model).__module__.startswith("keras")
        extra = dict(kwargs or {})

        def call(*positional: Any) -> Any:
            return model(*positional, training=training, **extra) if is_keras else model(*positional, **extra)

        # inside keeping_compiled (a calibration's passes) a tf.function's wrapper is kept: its graph only calls
        # that function's own, and a fresh one is traced and instantiated again each pass
        store, key = kept(), ("benchmark", id(model), training, jit_compile)
        reused = store is not None and not extra and hasattr(model, "get_concrete_function")
        function = store.get(key, (None, None))[1] if store is not None and reused else None
        if function is None:
            function = tf.function(call, jit_compile=jit_compile)
            if store is not None and reused:
                store[key] = (model, function)
        start = time.perf_counter()
        try:
            # traced before it runs, so that what it writes is saved before the first write
            saved = _written_variables(function.get_concrete_function(*inputs))
            _finish(function(*inputs))
        except Exception as error:
            raise AdapterError(
                f"TensorFlowAdapter.benchmark: running {_name_of(model)} failed ({type(error).__name__}): {error}"
            ) from error
        compile_seconds = time.perf_counter() - start
        try:
            measured = benchmark(function, *inputs, warmup=warmup, repeats=repeats, sync=_finish)
        finally:
            for variable, value in saved:
                variable.assign(value)
        return Measurement(
            samples_seconds=measured.samples_seconds,
            device=measured.device,
            device_kind=measured.device_kind,
            device_source=measured.device_source,
            warmup_seconds=measured.warmup_seconds,
            allocator=measured.allocator,  # the timed runs' page faults
            sync="tensorflow: device sync"
            if tf.config.list_logical_devices("GPU")
            else "none needed (CPU runs synchronously)",
            clock=measured.clock,
            compile_seconds=compile_seconds,
            peak_memory_bytes=_gpu_peak(),
        )

    def profile(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        trace: Trace,
        runs: int = 3,
        training: bool = False,
        **options: Any,
    ) -> Profile:
        """Measured time per kernel of ``trace`` over ``runs`` runs under ``tf.profiler``: the concrete
        function the trace walked (same model, inputs and ``training``), run as ``benchmark`` runs it
        (one warm run outside; variables a training step writes are put back). See ``_tf/profile.py``."""
        reject_options("TensorFlowAdapter.profile", options, "training")
        positional = _positional(args)
        specs = [_spec(a, f"input {i}") for i, a in enumerate(positional)]
        function = _callable(model, training, dict(kwargs or {}))
        try:
            concrete = function.get_concrete_function(*specs)
        except Exception as error:
            raise AdapterError(
                f"TensorFlowAdapter.profile: tracing {_name_of(model)} failed ({type(error).__name__}): {error}"
            ) from error
        walker = Walker(self.trip_counts, self.default_trip_count, norm_layers(model), training)
        clean, saved = _scope_cleaner(model), _written_variables(concrete)
        return profile_concrete(
            concrete, positional, trace, runs, walker=walker, clean=clean, saved=saved, finish=_finish
        )

    def first_touch_seconds_per_byte(self) -> float | None:
        """Measured with NumPy (``measure/first_touch.py``): XLA's and the runtime's buffers come
        from glibc as NumPy's do, and a fresh page costs the same whoever writes it."""
        from ..measure.first_touch import first_touch_probe

        return first_touch_probe()

    def keeping_compiled(self, count: int) -> AbstractContextManager[None]:
        """Inside the block, ``benchmark`` keeps its wrapper of a tf.function and ``profile`` its runner, the graph
        run and the kernels' graph ops, and reuse them for the same function (``_tf.profile.keeping``): fresh ones
        traced and instantiated each pass took a calibration's grid 165 s where it takes 119–127 s with them kept
        (a 2-core VM). Everything kept goes when the block ends; ``count`` is not needed."""
        return keeping()

    def microbenchmarks(self, quick: bool = False) -> list[MicroProgram]:
        """tf.function micro-programs of graph ops (``_tf/microbench.py``), each kernel profiled."""
        from ._tf.microbench import tf_microbenchmarks

        return tf_microbenchmarks(quick)

    def hardware(self, device: Any = None) -> HardwareSpec:
        """The spec of ``device``, else of the first GPU TensorFlow sees, else of the CPU."""
        from ..hardware.detect import detect_hardware

        if device is None:
            device = "cuda:0" if tf.config.list_logical_devices("GPU") else "cpu"
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
        """Measure matmul FLOP/s per dtype through TensorFlow on ``device`` (default the CPU):
        float32, and bfloat16 where the chip has a bfloat16 rate (AVX512_BF16 or AMX on a CPU),
        with the copy bandwidth; compared with the table or formula figures."""
        from ..hardware.calibrate import calibrate_with, numpy_copy_probe
        from ..hardware.detect import detect_hardware, resolve_device
        from ._tf.calibrate import tf_copy_probe, tf_matmul_probe

        ref = resolve_device("cpu" if device is None else device)
        on_cpu = ref.kind == "cpu"
        target = "/CPU:0" if on_cpu else f"/GPU:{ref.index}"
        notes = []
        try:
            reference, _ = detect_hardware(
                "cpu" if on_cpu else f"{ref.platform}:{ref.index}",
                memory_bandwidth=1.0 if on_cpu else None,  # a CPU has no bandwidth to compare: the copy is it
                calibrated=False,
            )
        except HardwareError as error:
            reference = None
            notes.append(f"no table or formula reference: {error}")
        if dtypes is None:
            has_bf16 = reference is not None and reference.has_peak("bfloat16")
            dtypes = ("float32", "bfloat16") if has_bf16 else ("float32",)
        if on_cpu:  # TensorFlow's copy would time fresh pages on the host: the all-core numpy copy
            notes.append("copy measured with numpy on all cores (a TensorFlow copy allocates fresh host pages)")
        return calibrate_with(
            device=target,
            kind=ref.kind,
            name=reference.name if reference is not None else target,
            framework=f"tensorflow {tf.__version__}",
            matmul=tf_matmul_probe(target),
            copy=numpy_copy_probe() if on_cpu else tf_copy_probe(target),
            dtypes=dtypes,
            size=size or (2048 if on_cpu else 8192),
            copy_bytes=copy_bytes or (0 if on_cpu else 1 << 30),
            repeats=repeats,
            reference=reference,
            notes=notes,
            compare_bandwidth=not on_cpu,
        )


# graph ops that write a variable: assignments, optimizer updates, scatters into a resource
_WRITES = ("Assign", "ResourceApply", "ResourceSparseApply", "ResourceScatter", "ResourceStridedSliceAssign")


def _written_variables(concrete: Any) -> list[tuple[Any, Any]]:
    """``(variable, saved value)`` for every variable ``concrete`` uses, when any of its ops (or
    of the functions it calls) writes one; none for a program that only reads its weights."""
    graph_def = concrete.graph.as_graph_def()
    types = {node.op for node in graph_def.node}
    types.update(node.op for function in graph_def.library.function for node in function.node_def)
    if not any(kind.startswith(_WRITES) for kind in types):
        return []
    # a read is copied on the variable's next write (TensorFlow's copy-on-write), so the value stays
    return [(variable, tf.identity(variable)) for variable in concrete.variables]


def _layer_names(model: Any) -> set[str]:
    names: set[str] = set()
    stack = [model]
    while stack:
        layer = stack.pop()
        name = getattr(layer, "name", None)
        if isinstance(name, str) and name not in names:
            names.add(name)
            stack.extend(getattr(layer, "layers", ()) or ())
            cell = getattr(layer, "cell", None)  # an RNN's cell is not in .layers; its scope re-enters too
            if cell is not None:
                stack.append(cell)
    return names


def _scope_cleaner(model: Any) -> Callable[[str | None], str | None] | None:
    """Keras 3 re-enters a layer's name scope as ``hidden_1``: a scope with the layer's name
    instead (None when the model has no layers to name)."""
    names = _layer_names(model)
    if not names:
        return None

    def clean(scope: str | None) -> str | None:
        if scope is None:
            return None
        parts = []
        for part in scope.split("/"):
            base, _, suffix = part.rpartition("_")
            parts.append(base if suffix.isdigit() and base in names else part)
        return "/".join(parts)

    return clean


def _keras_scopes(operations: list[Operation], clean: Callable[[str | None], str | None]) -> tuple[Operation, ...]:
    """Each record with its scope cleaned (``_scope_cleaner``)."""
    return tuple(
        op if clean(op.scope) == op.scope else dataclasses.replace(op, scope=clean(op.scope)) for op in operations
    )


def _finish(result: Any) -> None:
    """Wait for asynchronous device work (GPU); CPU execution has already finished."""
    if tf.config.list_logical_devices("GPU"):
        sync = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)
        if sync is not None:
            sync()
        else:
            for tensor in tf.nest.flatten(result):
                if hasattr(tensor, "numpy"):
                    tensor.numpy()


def _gpu_peak() -> int | None:
    if not tf.config.list_logical_devices("GPU"):
        return None
    try:
        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
    except (ValueError, RuntimeError):
        return None


def _boundary(concrete: Any) -> tuple[TensorSpec, ...]:
    specs = []
    arguments = concrete.structured_input_signature[0] if concrete.structured_input_signature else ()
    for name, tensor in named_leaves(arguments):  # a non-tensor argument (None, a Python value) moves no bytes
        shape: Shape = tuple(int(d) for d in tensor.shape)
        specs.append(TensorSpec(name, shape, TfContext.dtype(tensor), "input"))
    for variable in concrete.variables:
        specs.append(
            TensorSpec(variable.name, tuple(int(d) for d in variable.shape), TfContext.dtype(variable), "parameter")
        )
    for i, tensor in enumerate(concrete.outputs):
        if tensor.shape.rank is not None and None not in tensor.shape.as_list():
            specs.append(TensorSpec(f"out{i}", TfContext.shape(tensor), TfContext.dtype(tensor), "output"))
    return tuple(specs)
