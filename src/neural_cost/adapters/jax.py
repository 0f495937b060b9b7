"""JaxAdapter: every equation of a JAX program accounted for.

Traces with ``jax.make_jaxpr`` and walks every equation and sub-jaxpr through the
primitive table (see ``_jax/``). Imported only when JAX is installed.

A library op counts as the op: ``jax.nn`` activations and softmax, and Flax's norm layers
(recognised while tracing, without importing Flax when the program does not use it), are
each one record of the op's kind (``_jax/composites.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import jax

from ..core.errors import AdapterError, HardwareError
from ..core.profile import Profile
from ..core.records import Coverage, Shape, Trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, auto_sync, benchmark, display_name
from . import _jax
from ._jax import (  # noqa: F401  (register the table)
    ops_attention,
    ops_collectives,
    ops_conv,
    ops_free,
    ops_indexing,
    ops_linalg,
    ops_matmul,
    ops_movement,
    ops_norms,
    ops_pointwise,
    ops_random_optim,
    ops_reduce,
)
from ._jax.boundary import boundary_of, global_shapes
from ._jax.compiled import Executable, Executables, failed_cross_check
from ._jax.compiled import parse_cost_analysis as parse_cost_analysis  # where callers have read it
from ._jax.composites import NormCall, flax_norms
from ._jax.keras_model import stateless
from ._jax.profile import profile_executable
from ._jax.program import read_kernels
from ._jax.walker import Walker, scope_path
from ._walk import check_loop_options
from .base import FrameworkAdapter, MicroProgram, reject_options, require_modeled

del _jax


def _name_of(fn: Any) -> str:
    return display_name(fn)  # without <locals> paths: build.<locals>.forward is forward


def _positional(args: Any) -> tuple[Any, ...]:
    """``trace(fn, args)``: a tuple is the positional arguments; anything else is the one argument."""
    return tuple(args) if isinstance(args, tuple) else (args,)


def _static(static_argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)


class JaxAdapter(FrameworkAdapter):
    """Trace, count and time JAX functions.

    ``trip_counts`` maps a while loop — its 0-based pre-order index, or the label the
    report prints (``"search/while_1"``) — to its trip count; loops not named are inferred
    when they count ``i < N`` from a constant, else take ``default_trip_count`` and are
    reported as assumed.

    A program is compiled once: ``benchmark`` compiles the executable it times and keeps it,
    and ``trace`` reads that same executable: its kernels (the optimized HLO's fusions, copies
    and custom calls, loops multiplied, each mapped to our records — ``Trace.kernels``) and
    XLA's own ``cost_analysis()`` shown beside our counts (never instead of them).
    ``cross_check``: None (default) — read them when this adapter already compiled the program
    to time it, and compile nothing for them (a trace alone then has no kernels: each record
    is scored at its unfused traffic); True — also compile on request when it has not (the
    executable is then kept, and a later ``benchmark`` times it without compiling again);
    False — never show XLA's figures (kernels are still read from a timed executable).
    """

    framework = "jax"
    coverage_unit = "equations"
    compiles_when_timing = True  # benchmark() jit-compiles the whole function
    program_options = frozenset({"static_argnums"})
    device_from_environment = True  # JAX_PLATFORMS picks the device, wherever the arrays were made
    profiles = True  # jax.profiler's events, joined to the kernels of the timed executable

    def __init__(
        self,
        trip_counts: Mapping[int | str, int] | None = None,
        default_trip_count: int = 8,
        cross_check: bool | None = None,
    ) -> None:
        check_loop_options("JaxAdapter", trip_counts, default_trip_count)
        if cross_check not in (None, True, False):
            raise AdapterError(f"JaxAdapter: cross_check={cross_check!r}; pass None (default), True or False")
        self.trip_counts = dict(trip_counts or {})
        self.default_trip_count = default_trip_count
        self.cross_check = cross_check
        self.executables = Executables()

    # -- tracing ----------------------------------------------------------------------------
    def trace(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        static_argnums: int | Sequence[int] = (),
        param_argnums: int | Sequence[int] = (),
        **options: Any,
    ) -> Trace:
        """Trace ``model(*args, **kwargs)`` — any function of arrays — and lower every equation
        it executes. ``param_argnums`` names the positional arguments that are parameters."""
        reject_options("JaxAdapter.trace", options, "static_argnums, param_argnums")
        if not callable(model):
            raise AdapterError(f"JaxAdapter.trace: fn={model!r} is not callable; pass the function to trace")
        # a Keras model runs as Keras runs it: its variables are arguments (``_jax/keras_model.py``)
        given, given_static, given_params = _positional(args), _static(static_argnums), _static(param_argnums)
        fn, positional, static, param_list = stateless(model, given, given_static, given_params)
        kwargs = dict(kwargs or {})
        params = set(param_list)
        norms: dict[str, NormCall | None] = {}
        try:
            with flax_norms(norms, scope_path):
                closed, returned = jax.make_jaxpr(fn, static_argnums=static, return_shape=True)(*positional, **kwargs)
        except Exception as error:
            raise AdapterError(
                f"JaxAdapter.trace: tracing {_name_of(fn)} with jax.make_jaxpr failed ({type(error).__name__}): {error}"
            ) from error
        walker = Walker(self.trip_counts, self.default_trip_count, norms)
        state = walker.run(closed)
        coverage = Coverage(
            total=state.executed,
            modeled=state.modeled,
            free=state.free,
            unmodeled=tuple(state.unmodeled.items()),
            static_total=state.static,
            unit=self.coverage_unit,
            unmodeled_work=state.work_entries(),
        )
        require_modeled(coverage, "JaxAdapter.trace", "jax")
        dynamic = tuple(a for i, a in enumerate(positional) if i not in static)
        dynamic_index = [i for i in range(len(positional)) if i not in static]
        operations = tuple(state.operations)
        executable, compile_error = self._executable(fn, positional, kwargs, static)
        program = read_kernels(executable, operations, tuple(state.loops), self.default_trip_count, coverage.unmodeled)
        cross_check = None
        if self.cross_check is not False:
            if compile_error is not None:
                cross_check = failed_cross_check(compile_error)
            elif executable is not None:
                cross_check = executable.cross_check()
        return Trace(
            # one device's records when the program is partitioned, then the partitioner's collectives
            operations=(program.records or operations) + program.operations,
            coverage=coverage,
            input_shapes=_input_shapes(given, kwargs, {*given_static, *given_params}, returned),  # as the user passed
            loop_assumptions=tuple(state.loops),
            framework="jax",
            boundary=boundary_of(closed, dynamic, dynamic_index, kwargs, params, executable, program.devices),
            notes=tuple(
                dict.fromkeys(
                    [*state.notes, *program.notes, *global_shapes(dynamic, dynamic_index, kwargs, program.devices)]
                )
            ),
            cross_check=cross_check,
            kernels=program.kernels,
            kernel_source=program.source,
            devices=program.devices,
            global_model_flops=program.global_model_flops,
        )

    def _executable(
        self, fn: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], static: tuple[int, ...]
    ) -> tuple[Executable | None, BaseException | None]:
        """The executable ``benchmark`` compiled for this program (its kernels and XLA's
        figures are read from it); compiled here only when ``cross_check=True`` asks."""
        executable = self.executables.find(fn, args, kwargs, static)
        if executable is None and self.cross_check:
            try:
                executable = self.executables.compile(fn, args, kwargs, static)
            except Exception as error:  # compilation unavailable: say so, never fail the trace
                return None, error
        return executable, None

    # -- timing -----------------------------------------------------------------------------
    def benchmark(
        self,
        model: Any,
        *args: Any,
        warmup: int = 10,
        repeats: int = 30,
        kwargs: Mapping[str, Any] | None = None,
        static_argnums: int | Sequence[int] = (),
        **options: Any,
    ) -> Measurement:
        """Compile once (timed separately; the executable is kept for ``trace``'s cross-check,
        and one this adapter already compiled for the same program is timed as it is), put
        the arguments on the device, warm up, then time ``repeats`` runs, waiting on the
        outputs with ``block_until_ready`` inside each timed run."""
        reject_options("JaxAdapter.benchmark", options, "static_argnums")
        kwargs = dict(kwargs or {})
        if not callable(model):
            raise AdapterError(f"JaxAdapter.benchmark: fn={model!r} is not callable; pass the function to time")
        fn, args, static, _ = stateless(model, tuple(args), _static(static_argnums), ())
        try:
            executable = self.executables.compile(fn, args, kwargs, static)
        except Exception as error:
            raise AdapterError(
                f"JaxAdapter.benchmark: compiling {_name_of(fn)} failed ({type(error).__name__}): {error}"
            ) from error
        compiled = executable.compiled
        # On the device once: a NumPy argument would otherwise be copied over in every timed
        # run, a transfer the estimate does not contain.
        dynamic = _on_device(tuple(a for i, a in enumerate(args) if i not in static))
        kwargs = _on_device(kwargs)
        outputs = compiled(*dynamic, **kwargs)
        auto_sync(outputs)
        device = _output_device(outputs)
        run: Callable[..., Any] = compiled
        measured = benchmark(run, *dynamic, warmup=warmup, repeats=repeats, sync="auto", **kwargs)
        return Measurement(
            samples_seconds=measured.samples_seconds,
            device=device[0],
            device_kind=device[1],
            device_source=device[2],
            warmup_seconds=measured.warmup_seconds,
            allocator=measured.allocator,  # the timed runs' page faults: XLA's buffers come from glibc too
            sync=measured.sync,
            clock=measured.clock,
            compile_seconds=executable.compile_seconds,
        )

    def profile(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        trace: Trace,
        runs: int = 3,
        static_argnums: int | Sequence[int] = (),
        param_argnums: int | Sequence[int] = (),
        **options: Any,
    ) -> Profile:
        """``runs`` runs of the executable ``benchmark`` timed (compiled now if none is kept) under
        ``jax.profiler``, joined to ``trace.kernels`` (``_jax/profile.py``)."""
        reject_options("JaxAdapter.profile", options, "static_argnums, param_argnums")
        fn, positional, static, _ = stateless(model, _positional(args), _static(static_argnums), ())
        kwargs = dict(kwargs or {})
        dynamic = _on_device(tuple(a for i, a in enumerate(positional) if i not in static))
        program = (fn, positional, kwargs, static)
        return profile_executable(self.executables, program, dynamic, _on_device(kwargs), trace=trace, runs=runs)

    def first_touch_seconds_per_byte(self) -> float | None:
        """Measured with NumPy (``measure/first_touch.py``): XLA's and the runtime's buffers come
        from glibc as NumPy's do, and a fresh page costs the same whoever writes it."""
        from ..measure.first_touch import first_touch_probe

        return first_touch_probe()

    def keeping_compiled(self, count: int) -> AbstractContextManager[None]:
        return self.executables.keeping(count)

    def microbenchmarks(self, quick: bool = False) -> list[MicroProgram]:
        """Jitted micro-programs per XLA kernel kind (``_jax/microbench.py``); each kernel of a
        program is timed from the profiler (``kernel_timing`` "profile")."""
        from ._jax.microbench import jax_microbenchmarks

        return jax_microbenchmarks(quick)

    # -- hardware ---------------------------------------------------------------------------
    def workload_options(self, model: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """A Flax ``model.apply``'s first argument is the variables: parameters; so are the Flax NNX
        objects passed positionally (a module, its optimizer: their state, not a batch — an NNX step
        ``step(model, optimizer, x, y)`` had its batch read off a 1,024-wide norm's bias). An unbound
        Flax module cannot run as ``model(*args)``: an error that says to pass ``apply``."""
        if _is_unbound_linen(model):
            raise AdapterError(
                f"{type(model).__name__} is a Flax module, which runs only through apply; pass or return "
                f"(model.apply, (variables, *inputs)) instead"
            )
        owner = getattr(model, "__self__", None)
        if owner is not None and getattr(model, "__name__", "") == "apply" and _is_unbound_linen(owner):
            return {"param_argnums": 0}
        nnx = sys.modules.get("flax.nnx")  # loaded by whoever made an NNX object: no flax import here
        state = getattr(nnx, "Pytree", None) or getattr(nnx, "Object", None)
        found = tuple(i for i, arg in enumerate(args) if state is not None and isinstance(arg, state))
        return {"param_argnums": found} if found else {}

    def hardware(self, device: Any = None) -> HardwareSpec:
        """The spec of ``device``, else of the device JAX selected (``JAX_PLATFORMS`` respected)."""
        from ..hardware.detect import detect_hardware

        spec, _ = detect_hardware(device if device is not None else jax.devices()[0])
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
        """Measure matmul FLOP/s per dtype (default float32) and copy bandwidth on ``device`` (a
        JAX device; default the one JAX selected), compared with its table or formula figures
        (see ``neural_cost.hardware.calibrate``)."""
        from ..hardware.calibrate import calibrate_with
        from ..hardware.detect import detect_hardware
        from ._jax.calibrate import jax_copy_probe, jax_matmul_probe

        device = _jax_device(device)
        platform = str(device.platform)
        notes = []
        try:
            reference, _ = detect_hardware(
                device, memory_bandwidth=1.0 if platform == "cpu" else None, calibrated=False
            )
        except HardwareError as error:
            reference = None
            notes.append(f"no table or formula reference: {error}")
        on_gpu = platform != "cpu"
        spec, result = calibrate_with(
            device=f"{platform}:{device.id} ({getattr(device, 'device_kind', platform)})",
            kind={"cpu": "cpu", "gpu": "gpu", "tpu": "tpu"}.get(platform, "unknown"),
            name=reference.name if reference is not None else str(getattr(device, "device_kind", platform)),
            framework=f"jax {jax.__version__}",
            matmul=jax_matmul_probe(device),
            copy=jax_copy_probe(device),
            dtypes=dtypes if dtypes is not None else ("float32",),
            size=size or (8192 if on_gpu else 2048),
            copy_bytes=copy_bytes or (1 << 30 if on_gpu else 256 << 20),
            repeats=repeats,
            reference=reference,
            notes=notes,
            compare_bandwidth=platform != "cpu",
        )
        return spec, result


def _on_device(tree: Any) -> Any:
    """``tree`` with its NumPy arrays placed on JAX's default device (other leaves as given:
    a Python scalar stays weakly typed, as the program was compiled for it)."""
    import numpy as np

    return jax.tree_util.tree_map(lambda leaf: jax.device_put(leaf) if isinstance(leaf, np.ndarray) else leaf, tree)


def _output_device(outputs: Any) -> tuple[str, str, str]:
    from ..measure.device import infer_device

    info = infer_device(outputs)
    if info.source.startswith("assumed"):
        device = jax.devices()[0]
        platform = str(getattr(device, "platform", "unknown"))
        kind = {"cpu": "cpu", "gpu": "gpu", "tpu": "tpu"}.get(platform, "unknown")
        return str(getattr(device, "device_kind", platform)), kind, f"jax default device ({platform})"
    return info.name, info.kind, info.source


def _input_shapes(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], skip: set[int], returned: Any
) -> tuple[tuple[str, Shape], ...]:
    """What the report's inputs line shows and the batch is read from: every array leaf of the
    arguments, inside tuples, lists, dicts and other pytrees too, named by its path (``arg2[0]``,
    ``arg0['w1']``, ``mask['a']``). Not listed: static arguments, parameters (``param_argnums``),
    and state the function hands back — a container argument with the pytree structure and
    shapes of one of its outputs, as a training step ``(params, opt_state, batch) -> (params,
    opt_state, loss)`` returns its params and optimizer state. Those are carried from step to
    step, never a batch (their leading dims are a weight's); unless nothing else is left."""
    outputs = [_tree_shapes(out) for out in (returned if isinstance(returned, (tuple, list)) else (returned,))]
    named = [(f"arg{i}", a) for i, a in enumerate(args) if i not in skip] + list(kwargs.items())
    carried = {name for name, value in named if _container(value) and _tree_shapes(value) in outputs}
    if len(carried) == len(named):
        carried = set()
    shapes = []
    for name, value in named:
        if name in carried:
            continue
        leaves, _ = jax.tree_util.tree_flatten_with_path(value)
        shapes += [
            (f"{name}{jax.tree_util.keystr(path)}", leaf.shape) for path, leaf in leaves if hasattr(leaf, "shape")
        ]
    return tuple((name, tuple(int(d) for d in shape)) for name, shape in shapes)


def _container(value: Any) -> bool:
    """A pytree that is more than one leaf (a dict of weights, an optimizer state)."""
    return not jax.tree_util.treedef_is_leaf(jax.tree_util.tree_structure(value))


def _tree_shapes(tree: Any) -> tuple[Any, tuple[tuple[int, ...], ...]]:
    """A pytree's structure and its leaves' shapes: what an argument and an output share when
    the function hands the argument back updated."""
    leaves, structure = jax.tree_util.tree_flatten(tree)
    return structure, tuple(tuple(int(d) for d in getattr(leaf, "shape", ())) for leaf in leaves)


def _is_unbound_linen(model: Any) -> bool:
    """A Flax linen module not bound to variables (found by its module path: no flax import)."""
    linen = any(str(cls.__module__).startswith("flax.linen") for cls in type(model).__mro__)
    return linen and getattr(model, "scope", None) is None


def _jax_device(device: Any) -> Any:
    """A JAX device from one (as given), a name (``"cpu"``, ``"gpu:1"``, ``"cuda:0"``), or None
    (the device JAX selected)."""
    if device is None:
        return jax.devices()[0]
    if hasattr(device, "platform"):
        return device
    platform, _, index = str(device).partition(":")
    try:
        return jax.devices({"cuda": "gpu", "rocm": "gpu"}.get(platform, platform))[int(index or 0)]
    except (RuntimeError, ValueError, IndexError) as error:
        raise HardwareError(f"JaxAdapter: no JAX device {device!r} ({error}); JAX sees {jax.devices()}") from error
