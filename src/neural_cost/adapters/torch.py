"""TorchAdapter: the aten ops a PyTorch model really runs, with module scopes and coverage.

The model runs once under a ``TorchDispatchMode`` (``_torch/recorder.py``) that sees every
aten call (forward, and for training the backward and the optimizer step), lowers it through
the aten table (see ``_torch/``) and records which buffers it reads and allocates; each call
that does work is one kernel (``_torch/kernels.py``). Module scopes come from forward hooks
on every submodule. Nothing the user can observe changes
(``_torch/preserve.py``, which lists what is restored and what cannot be): hooks and modes
are removed even when the model raises, and parameters, buffers (the very objects),
gradients, optimizer state and attributes, the RNG state and each submodule's attributes and
train/eval flag are restored, after ``trace``, ``benchmark``, ``profile`` (``_torch/profile.py``:
torch.profiler's events joined to the trace's kernels) and ``profile_model`` alike.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from ..core.errors import AdapterError, HardwareError, MeasurementError
from ..core.profile import Profile
from ..core.records import Coverage, Shape, TensorSpec, Trace
from ..hardware.spec import HardwareSpec
from ..measure.device import array_device
from ..measure.timing import Measurement, benchmark, display_name
from . import _torch
from ._torch import (  # noqa: F401  (register the table)
    microbench,
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
    ops_rnn,
)
from ._torch.evicted import evicted_probe
from ._torch.kernels import COMPILED_NOTE, KERNEL_SOURCE, is_compiled
from ._torch.preserve import Grads, WriteGuard, WriteWatch, graph_leaves, input_tensors, preserved
from ._torch.profile import profile_eager
from ._torch.recorder import Recorder, module_scopes, tensors_in
from ._torch.table import TorchContext
from ._walk import check_loop_options
from .base import FrameworkAdapter, MicroProgram, example_input_shapes, reject_options, require_modeled

del _torch

PHASES = ("forward", "backward", "optimizer")
TRACE_OPTIONS = "training, loss_fn, optimizer"


def _name_of(fn: Any) -> str:
    return display_name(fn)  # a module by its class; a function without <locals> paths


def _positional(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _shape(tensor: torch.Tensor) -> Shape:
    return tuple(int(d) for d in tensor.shape)


class TorchAdapter(FrameworkAdapter):
    """Trace, count and time PyTorch models and functions of tensors."""

    framework = "torch"
    coverage_unit = "aten ops"
    traces_training_step = True
    program_options = frozenset({"training", "loss_fn", "optimizer"})
    profiles = True
    kernel_timing = "wall"  # eager: each op pays Python and dispatch, as between a model's ops

    def __init__(self, trip_counts: Mapping[int | str, int] | None = None, default_trip_count: int = 8) -> None:
        """The loop options every adapter takes (so ``adapter_for`` and the CLI make any
        adapter alike); eager PyTorch runs its loops for real, so there is none to assume."""
        check_loop_options("TorchAdapter", trip_counts, default_trip_count)
        if trip_counts:
            raise AdapterError(
                "TorchAdapter: trip_counts applies to JAX and TensorFlow loops; PyTorch runs its loops for real and "
                "records every iteration"
            )

    def trace(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        training: bool = False,
        loss_fn: Callable[[Any], Any] | None = None,
        optimizer: Any | None = None,
        **options: Any,
    ) -> Trace:
        """Run ``model(*args, **kwargs)`` once and lower every aten op it executes.

        Inference runs under ``no_grad`` in the model's current train/eval mode. With
        ``training=True`` it traces forward, backward (of ``loss_fn(output)``, default the
        sum of the output) and ``optimizer.step()`` as the scopes ``forward``, ``backward``
        and ``optimizer``; everything is restored afterwards. With an optimizer, one untraced
        step runs first and the trace is of the second: the step the timed runs repeat after
        warmup, with the optimizer's state in place (a first SGD-momentum step only copies the
        gradient into its buffer; a first Adam step zero-fills its moments).
        """
        reject_options("TorchAdapter.trace", options, TRACE_OPTIONS)
        if not callable(model):
            raise AdapterError(f"TorchAdapter.trace: model={model!r} is not callable; pass an nn.Module or a function")
        args = _positional(args)
        kwargs = dict(kwargs or {})
        scopes: list[str] = []
        inputs = input_tensors(args, kwargs)
        guard = WriteGuard(model if isinstance(model, torch.nn.Module) else None, inputs)
        recorder = Recorder(scopes, guard)
        notes: list[str] = []
        optimizer_ = optimizer if training else None
        try:
            with preserved(model, optimizer_, guard, training, inputs) as kept, module_scopes(model, scopes):
                if optimizer_ is not None:  # the timed runs after warmup are steady-state steps
                    self._untraced_step(model, args, kwargs, guard, loss_fn, optimizer_, kept.grads)
                if training:
                    output = self._training_step(model, args, kwargs, recorder, loss_fn, optimizer_, notes, kept.grads)
                else:
                    with torch.no_grad(), recorder:
                        output = model(*args, **kwargs)
                recorder.finish()  # before the restore drops the optimizer state the step made
            notes.extend(kept.notes)  # inputs the model wrote into
            notes.extend(filter(None, [recorder.values.note()]))  # a sigmoid's values that slow it
        except AdapterError:
            raise
        except Exception as error:
            raise AdapterError(
                f"TorchAdapter.trace: running {_name_of(model)} raised {type(error).__name__}: {error}"
            ) from error
        state = recorder.state
        coverage = Coverage(
            total=state.executed,
            modeled=state.modeled,
            free=state.free,
            unmodeled=tuple(state.unmodeled.items()),
            static_total=state.static,
            unit=self.coverage_unit,
            unmodeled_work=state.work_entries(),
        )
        require_modeled(coverage, "TorchAdapter.trace", "torch")
        if is_compiled(model):
            notes.append(COMPILED_NOTE)
        return Trace(
            operations=tuple(state.operations),
            coverage=coverage,
            input_shapes=example_input_shapes(args) + example_input_shapes(kwargs),
            framework="torch",
            boundary=self._boundary(model, args, kwargs, output),
            notes=tuple(dict.fromkeys([*notes, *state.notes])),
            dataflow=tuple(recorder.dataflow),
            kernels=recorder.kernels.kernels(state.operations),
            kernel_source=KERNEL_SOURCE,
        )

    @staticmethod
    def _training_step(
        model: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        recorder: Recorder,
        loss_fn: Callable[[Any], Any] | None,
        optimizer: Any | None,
        notes: list[str],
        grads: Grads,
    ) -> Any:
        with torch.enable_grad(), recorder:
            recorder.phase = "forward"
            output = model(*args, **kwargs)
            loss = _loss(output, loss_fn)
            if loss_fn is None:
                notes.append("no loss_fn given: the backward is of the sum of the first output")
            grads.set_aside(graph_leaves(loss))  # inputs or closed-over tensors that require grad
            recorder.phase = "backward"
            loss.backward()
            if optimizer is not None:
                recorder.phase = "optimizer"
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            else:
                notes.append("no optimizer given: the trace has no optimizer step")
        return output

    @staticmethod
    def _untraced_step(
        model: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        guard: WriteGuard,
        loss_fn: Callable[[Any], Any] | None,
        optimizer: Any,
        grads: Grads,
    ) -> None:
        """One training step, not recorded, so that the traced step finds the optimizer state a
        timed step finds; under the write guard (an input it writes into is put back) and with
        the gradients it leaves cleared, so the traced backward writes fresh ones as before."""
        with torch.enable_grad(), WriteWatch(guard):
            loss = _loss(model(*args, **kwargs), loss_fn)
            leaves = graph_leaves(loss)
            grads.set_aside(leaves)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        for leaf in leaves:  # an input or closed-over tensor the optimizer does not hold
            leaf.grad = None

    @staticmethod
    def _boundary(model: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], output: Any) -> tuple[TensorSpec, ...]:
        specs = []
        for i, tensor in enumerate(tensors_in(args)):
            specs.append(TensorSpec(f"arg{i}", _shape(tensor), TorchContext.dtype(tensor), "input"))
        for key, value in kwargs.items():
            for j, tensor in enumerate(tensors_in(value)):
                specs.append(TensorSpec(f"{key}{j or ''}", _shape(tensor), TorchContext.dtype(tensor), "input"))
        if isinstance(model, torch.nn.Module):
            for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
                specs.append(TensorSpec(name, _shape(tensor), TorchContext.dtype(tensor), "parameter"))
        for i, tensor in enumerate(tensors_in(output)):
            specs.append(TensorSpec(f"out{i}", _shape(tensor), TorchContext.dtype(tensor), "output"))
        return tuple(specs)

    # -- timing -----------------------------------------------------------------------------
    def benchmark(
        self,
        model: Any,
        *args: Any,
        warmup: int = 10,
        repeats: int = 30,
        kwargs: Mapping[str, Any] | None = None,
        training: bool = False,
        loss_fn: Callable[[Any], Any] | None = None,
        optimizer: Any | None = None,
        **options: Any,
    ) -> Measurement:
        """Time inference runs under ``no_grad`` on the device the model's parameters (else its
        inputs) live on, waiting for that CUDA device inside each run. Everything the runs
        change is put back afterwards (``_torch/preserve.py``, as for ``trace``): timing
        changes nothing in the model. One untimed run first, under a write guard, learns which
        parameters and inputs the forward writes in place.

        With ``training=True`` each run is a training step, as ``trace(training=True)`` traces
        it: the forward with grad enabled, the backward of ``loss_fn(output)`` (default the sum
        of the first output) and ``optimizer.step()`` then ``zero_grad``. The parameters, the
        gradients and the optimizer state are put back once, after the timed runs."""
        reject_options("TorchAdapter.benchmark", options, TRACE_OPTIONS)
        if not callable(model):
            raise AdapterError(f"TorchAdapter.benchmark: model={model!r} is not callable")
        keywords = dict(kwargs or {})  # bound here: a model keyword never meets benchmark()'s own
        reference, source = _reference_tensor(model, args, keywords)
        device = reference.device if reference is not None else None
        on_cuda = device is not None and device.type == "cuda"
        telemetry = _CudaTelemetry(device) if on_cuda and device is not None else None
        optimizer_ = optimizer if training else None
        leaves_set_aside: list[bool] = []

        def infer(*positional: Any) -> Any:
            # no_grad, not inference_mode: a tensor the forward keeps (a reassigned buffer, a
            # cache) must stay an ordinary tensor that the user's next in-place update accepts
            with torch.no_grad():
                return model(*positional, **keywords)

        def step(*positional: Any) -> Any:
            with torch.enable_grad():
                output = model(*positional, **keywords)
                loss = _loss(output, loss_fn)
                if not leaves_set_aside:  # the probe run: inputs or closed-over tensors that require grad
                    kept.grads.set_aside(graph_leaves(loss))  # (a graph walk kept out of the timed runs)
                    leaves_set_aside.append(True)
                loss.backward()
                if optimizer_ is not None:
                    optimizer_.step()
                    optimizer_.zero_grad(set_to_none=True)
                elif isinstance(model, torch.nn.Module):
                    model.zero_grad(set_to_none=True)  # each run writes fresh gradients, as a step would
            return loss

        run = step if training else infer

        def wait(_result: Any) -> None:  # the model's device, whatever the result holds
            torch.cuda.synchronize(device)

        inputs = input_tensors(args, keywords)
        guard = WriteGuard(model if isinstance(model, torch.nn.Module) else None, inputs)
        with preserved(model, optimizer_, guard, training, inputs) as kept:
            # one untimed run under the guard learns what the forward writes in place (a
            # clamped weight, an input), so that it can be put back; the timed runs are not watched
            try:
                with WriteWatch(guard):
                    run(*args)
            except Exception as error:
                raise MeasurementError(
                    f"TorchAdapter.benchmark: {_name_of(model)} raised {type(error).__name__}: {error}"
                    + (_TRAINING_HINT if "does not require grad" in str(error) and not training else "")
                ) from error
            measured = benchmark(
                run, *args, warmup=warmup, repeats=repeats, telemetry=telemetry, sync=wait if on_cuda else "auto"
            )
        changes: dict[str, Any] = {"sync": f"torch.cuda.synchronize({device})"} if on_cuda else {}
        info = array_device(reference) if reference is not None else None
        if info is not None and (info.name, info.kind) != (measured.device, measured.device_kind):
            changes.update(device=info.name, device_kind=info.kind, device_source=f"{source}: {info.source}")
        return dataclasses.replace(measured, **changes) if changes else measured

    def profile(
        self,
        model: Any,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        trace: Trace,
        runs: int = 3,
        training: bool = False,
        loss_fn: Callable[[Any], Any] | None = None,
        optimizer: Any | None = None,
        **options: Any,
    ) -> Profile:
        """Measured time per kernel of ``trace`` over ``runs`` runs under ``torch.profiler``, run
        as ``trace`` ran it (``training``/``loss_fn``/``optimizer`` alike), everything put back
        afterwards; how events join kernels is in ``_torch/profile.py``."""
        reject_options("TorchAdapter.profile", options, TRACE_OPTIONS)
        keywords = dict(kwargs or {})
        device = _reference_tensor(model, _positional(args), keywords)[0]
        return profile_eager(
            model, _positional(args), keywords, trace=trace, runs=runs, training=training, loss_fn=loss_fn,
            optimizer=optimizer, loss=_loss, device=device.device if device is not None else None,
        )  # fmt: skip

    # -- hardware ---------------------------------------------------------------------------
    def device_of(self, model: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """Where the model runs: its first parameter or buffer, else its first input tensor."""
        return _reference_tensor(model, args, kwargs)[0]

    def first_touch_seconds_per_byte(self) -> float | None:
        return microbench.first_touch_probe()

    def evicted_seconds_per_byte(self) -> float | None:
        return evicted_probe()

    def microbenchmarks(self, quick: bool = False) -> list[MicroProgram]:
        return microbench.torch_microbenchmarks(quick)

    def harness_program(self) -> MicroProgram | None:
        return microbench.harness_program()

    def hardware(self, device: Any = None) -> HardwareSpec:
        """The spec of ``device`` (a device, its name, or a tensor on it); the CPU by default."""
        from ..hardware.detect import detect_hardware

        spec, _ = detect_hardware(device if device is not None else "cpu")
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
        """Measure matmul FLOP/s per dtype (default float32 and bfloat16) and copy bandwidth
        through PyTorch on ``device`` (default the CPU)."""
        from ..hardware.calibrate import calibrate_with
        from ..hardware.detect import detect_hardware, resolve_device
        from ._torch.calibrate import torch_copy_probe, torch_matmul_probe

        device = "cpu" if device is None else device
        ref = resolve_device(device)
        target = torch.device("cpu" if ref.kind == "cpu" else f"{ref.platform}:{ref.index}")
        notes = []
        try:
            reference, _ = detect_hardware(
                device, memory_bandwidth=1.0 if ref.kind == "cpu" else None, calibrated=False
            )
        except HardwareError as error:
            reference = None
            notes.append(f"no table or formula reference: {error}")
        on_cpu = ref.kind == "cpu"
        return calibrate_with(
            device=str(target),
            kind=ref.kind,
            name=reference.name if reference is not None else str(target),
            framework=f"torch {torch.__version__}",
            matmul=torch_matmul_probe(target),
            copy=torch_copy_probe(target),
            dtypes=dtypes if dtypes is not None else ("float32", "bfloat16"),
            size=size or (2048 if on_cpu else 8192),
            copy_bytes=copy_bytes or (256 << 20 if on_cpu else 1 << 30),
            repeats=repeats,
            reference=reference,
            notes=notes,
            compare_bandwidth=not on_cpu,
        )


# timing a function that calls backward() itself under no_grad fails with this error
_TRAINING_HINT = (
    " (inference is timed under no_grad; for a training step pass the model with training=True, loss_fn and "
    "optimizer, or from the CLI return {'model': model, 'args': (x,), 'training': True, 'loss_fn': ..., "
    "'optimizer': ...} from build())"
)


def _loss(output: Any, loss_fn: Callable[[Any], Any] | None) -> Any:
    """What a training step differentiates: ``loss_fn(output)``, else the sum of the first output tensor."""
    if loss_fn is not None:
        return loss_fn(output)
    first = next(tensors_in(output), None)
    if first is None:
        raise AdapterError("TorchAdapter (training=True): the model returned no tensor; pass loss_fn")
    return first.sum()


def _reference_tensor(model: Any, inputs: Any, kwargs: Any) -> tuple[torch.Tensor | None, str]:
    """The tensor that says where the model runs: its first parameter or buffer (a model on the
    GPU may take its inputs on the CPU), else its first input."""
    if isinstance(model, torch.nn.Module):
        for tensor in itertools.chain(model.parameters(), model.buffers()):
            return tensor, "the model's parameters"
    return next(tensors_in((inputs, kwargs)), None), "the inputs"


class _CudaTelemetry:
    """CUDA allocator figures: peak allocated and reserved over the timed runs."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def reset(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def read(self) -> dict[str, int]:
        return {
            "peak_memory_bytes": int(torch.cuda.max_memory_allocated(self.device)),
            "peak_reserved_bytes": int(torch.cuda.max_memory_reserved(self.device)),
        }
