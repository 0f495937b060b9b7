"""TorchAdapter: the aten ops a PyTorch model really runs, with module scopes and coverage.

The model runs once under a ``TorchDispatchMode`` that sees every aten call (forward, and
for training the backward and the optimizer step), lowers it through the aten table (see
``_torch/``) and records which buffers it reads and allocates. Module scopes come from
forward hooks on every submodule. Nothing the user can observe changes: hooks and modes
are removed even when the model raises, and parameters, buffers, gradients, optimizer
state and the RNG state are restored.
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..core.errors import AdapterError, HardwareError
from ..core.records import Coverage, Operation, Shape, TensorSpec, Trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement, benchmark
from . import _torch
from ._torch import ops_compute, ops_pointwise  # noqa: F401  (register the table)
from ._torch.table import EMPTY_REASONS, TABLE, AtenCall, Free, TorchContext
from .base import FrameworkAdapter

del _torch

PHASES = ("forward", "backward", "optimizer")


def _name_of(fn: Any) -> str:
    return type(fn).__name__ if isinstance(fn, torch.nn.Module) else getattr(fn, "__qualname__", repr(fn))


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif hasattr(value, "__dataclass_fields__") or hasattr(value, "to_tuple"):  # HF ModelOutput
        items = value.to_tuple() if hasattr(value, "to_tuple") else vars(value).values()
        for item in items:
            yield from _tensors(item)


class _Buffers:
    """Stable ids for the storages tensors live in (views share their base's id)."""

    def __init__(self) -> None:
        self._by_storage: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._ids: dict[int, int] = {}
        self._next = 0

    def id_of(self, tensor: torch.Tensor) -> tuple[int, bool]:
        """(buffer id, whether this is the first time the buffer is seen)."""
        try:
            storage = tensor.untyped_storage()
            key = storage.data_ptr() if storage.data_ptr() else id(storage)
        except (RuntimeError, NotImplementedError):  # sparse or meta tensors
            key = id(tensor)
        if key in self._ids and key in self._by_storage:
            return self._ids[key], False
        self._next += 1
        self._ids[key] = self._next
        with contextlib.suppress(TypeError):
            self._by_storage[key] = tensor.untyped_storage()
        return self._next, True


class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Lowers every aten call as it runs; counts what the table does not know."""

    def __init__(self, scopes: list[str], guard: _WriteGuard) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.scopes = scopes
        self.guard = guard
        self.phase: str | None = None
        self.operations: list[Operation] = []
        self.executed = 0
        self.modeled = 0
        self.free = 0
        self.unmodeled: Counter[str] = Counter()
        self.free_reasons: dict[str, str] = {}
        self.dataflow: list[tuple[tuple[int, ...], tuple[tuple[int, int], ...]]] = []
        self.buffers = _Buffers()
        self.notes: list[str] = []

    def scope(self) -> str | None:
        """The innermost module running; in a training trace, the phase instead."""
        if self.phase is not None:
            return self.phase
        return self.scopes[-1] if self.scopes else None

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.guard.before(func, args, kwargs)
        out = func(*args, **kwargs)
        call = AtenCall(func, tuple(args), dict(kwargs), out)
        name = call.name
        namespace = str(getattr(func, "namespace", "aten"))
        self.executed += 1
        entry = TABLE.get(name) if namespace == "aten" else None
        if namespace == "profiler":  # record_function markers around optimizer steps
            self.free += 1
            self.free_reasons[f"{namespace}.{name}"] = "a profiler marker: no data is read or written"
        elif isinstance(entry, Free):
            self.free += 1
            self.free_reasons[name] = entry.reason
        elif entry is None:
            self.unmodeled[f"{namespace}.{name}"] += 1
        else:
            try:
                records = list(entry(call, TorchContext(self.scope())))
            except Exception as error:  # a builder that cannot read this call: unmodeled, and said so
                self.unmodeled[f"{namespace}.{name}"] += 1
                self.notes.append(f"aten.{name}: not modeled for this call ({type(error).__name__}: {error})"[:300])
                self._dataflow(args, kwargs, out)
                return out
            if records:
                self.operations += records
                self.modeled += 1
            else:
                self.free += 1
                self.free_reasons.setdefault(name, EMPTY_REASONS.get(name, "aliases its input for this call"))
        self._dataflow(args, kwargs, out)
        return out

    def _dataflow(self, args: Any, kwargs: Any, out: Any) -> None:
        reads = []
        for tensor in _tensors((args, kwargs)):
            reads.append(self.buffers.id_of(tensor)[0])
        allocs = []
        for tensor in _tensors(out):
            buffer, new = self.buffers.id_of(tensor)
            if new:
                allocs.append((buffer, tensor.numel() * tensor.element_size()))
        self.dataflow.append((tuple(dict.fromkeys(reads)), tuple(allocs)))


@contextlib.contextmanager
def _module_scopes(model: Any, scopes: list[str]) -> Iterator[None]:
    """Push each submodule's qualified name while its forward runs; hooks always removed."""
    handles = []
    try:
        if isinstance(model, torch.nn.Module):
            for name, module in model.named_modules():
                if not name:
                    continue

                def enter(_module: Any, _args: Any, name: str = name) -> None:
                    scopes.append(name)

                def leave(_module: Any, _args: Any, _out: Any, name: str = name) -> None:
                    if scopes and scopes[-1] == name:
                        scopes.pop()

                handles.append(module.register_forward_pre_hook(enter))
                handles.append(module.register_forward_hook(leave, always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _storage_key(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return id(tensor)


class _WriteGuard:
    """Copies a parameter just before an op writes into it (per its schema), to restore it afterwards.

    Cheaper than cloning the whole model up front: inference rarely writes to its state
    (BatchNorm's running statistics in train mode do), so usually nothing is copied.
    """

    def __init__(self, module: torch.nn.Module | None) -> None:
        tensors = list(module.parameters()) if module is not None else []
        self.protected = {_storage_key(t): t for t in tensors}
        self.saved: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def before(self, func: Any, args: Any, kwargs: Any) -> None:
        if not self.protected or not func._schema.is_mutable:
            return
        for position, argument in enumerate(func._schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            for tensor in _tensors(value):
                key = _storage_key(tensor)
                target = self.protected.get(key)
                if target is not None and key not in self.saved:
                    self.saved[key] = (target, target.detach().clone())

    def restore(self) -> None:
        with torch.no_grad():
            for target, value in self.saved.values():
                target.copy_(value)


@contextlib.contextmanager
def _preserved(model: Any, optimizer: Any | None, guard: _WriteGuard) -> Iterator[None]:
    """Restore parameters, buffers, gradients, optimizer state and RNG state afterwards.

    A training step changes every parameter, so it is snapshotted whole; inference restores
    only what an op wrote into (``guard``)."""
    module = model if isinstance(model, torch.nn.Module) else None
    whole = optimizer is not None  # an optimizer step rewrites every parameter
    params = (
        [
            (p, p.detach().clone(), None if p.grad is None else p.grad.detach().clone())
            for p in (module.parameters() if module is not None else ())
        ]
        if whole
        else []
    )
    grads = [(p, p.grad) for p in (module.parameters() if module is not None else ())]
    # buffers are copied whole: some kernels write them without saying so in their schema
    # (native_batch_norm updates running_mean/var in train mode); they are usually small
    buffers = [(b, b.detach().clone()) for b in (module.buffers() if module is not None else ())]
    optimizer_state = copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None  # type: ignore[no-untyped-call]
    training = module.training if module is not None else None
    try:
        yield
    finally:
        guard.restore()
        with torch.no_grad():
            for param, value, _grad in params:
                param.copy_(value)
            for buffer, value in buffers:
                buffer.copy_(value)
        for param, grad in grads:  # the gradients the user had (None or their tensors), untouched
            param.grad = grad
        if optimizer is not None and optimizer_state is not None:
            optimizer.load_state_dict(optimizer_state)  # replaces the state the traced step created
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        if module is not None and training is not None:
            module.train(training)


def _positional(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def _shape(tensor: torch.Tensor) -> Shape:
    return tuple(int(d) for d in tensor.shape)


class TorchAdapter(FrameworkAdapter):
    """Trace, count and time PyTorch models and functions of tensors."""

    framework = "torch"
    coverage_unit = "aten ops"

    def trace(  # type: ignore[override]  # PyTorch's own keywords instead of **kwargs
        self,
        model: Any,
        inputs: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        training: bool = False,
        loss_fn: Callable[[Any], Any] | None = None,
        optimizer: Any | None = None,
    ) -> Trace:
        """Run ``model(*inputs, **kwargs)`` once and lower every aten op it executes.

        Inference runs under ``no_grad`` in the model's current train/eval mode. With
        ``training=True`` it traces forward, backward (of ``loss_fn(output)``, default the
        sum of the output) and ``optimizer.step()`` as the scopes ``forward``, ``backward``
        and ``optimizer``; everything is restored afterwards.
        """
        if not callable(model):
            raise AdapterError(f"TorchAdapter.trace: model={model!r} is not callable; pass an nn.Module or a function")
        args = _positional(inputs)
        kwargs = dict(kwargs or {})
        scopes: list[str] = []
        guard = _WriteGuard(model if isinstance(model, torch.nn.Module) else None)
        recorder = _Recorder(scopes, guard)
        notes: list[str] = []
        optimizer_ = optimizer if training else None
        try:
            with _preserved(model, optimizer_, guard), _module_scopes(model, scopes):
                if training:
                    output = self._training_step(model, args, kwargs, recorder, loss_fn, optimizer_, notes)
                else:
                    with torch.no_grad(), recorder:
                        output = model(*args, **kwargs)
        except AdapterError:
            raise
        except Exception as error:
            raise AdapterError(
                f"TorchAdapter.trace: running {_name_of(model)} raised {type(error).__name__}: {error}"
            ) from error
        coverage = Coverage(
            total=recorder.executed,
            modeled=recorder.modeled,
            free=recorder.free,
            unmodeled=tuple(recorder.unmodeled.items()),
            static_total=recorder.executed,
            unit=self.coverage_unit,
        )
        return Trace(
            operations=tuple(recorder.operations),
            coverage=coverage,
            input_shapes=tuple(
                [(f"arg{i}", _shape(a)) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
                + [(k, _shape(v)) for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
            ),
            framework="torch",
            boundary=self._boundary(model, args, kwargs, output),
            notes=tuple(dict.fromkeys([*notes, *recorder.notes])),
            dataflow=tuple(recorder.dataflow),
        )

    @staticmethod
    def _training_step(
        model: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        recorder: _Recorder,
        loss_fn: Callable[[Any], Any] | None,
        optimizer: Any | None,
        notes: list[str],
    ) -> Any:
        with torch.enable_grad(), recorder:
            recorder.phase = "forward"
            output = model(*args, **kwargs)
            if loss_fn is not None:
                loss = loss_fn(output)
            else:
                first = next(_tensors(output), None)
                if first is None:
                    raise AdapterError("TorchAdapter.trace(training=True): the model returned no tensor; pass loss_fn")
                loss = first.sum()
                notes.append("no loss_fn given: the backward is of the sum of the first output")
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
    def _boundary(model: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], output: Any) -> tuple[TensorSpec, ...]:
        specs = []
        for i, tensor in enumerate(_tensors(args)):
            specs.append(TensorSpec(f"arg{i}", _shape(tensor), TorchContext.dtype(tensor), "input"))
        for key, value in kwargs.items():
            for j, tensor in enumerate(_tensors(value)):
                specs.append(TensorSpec(f"{key}{j or ''}", _shape(tensor), TorchContext.dtype(tensor), "input"))
        if isinstance(model, torch.nn.Module):
            for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
                specs.append(TensorSpec(name, _shape(tensor), TorchContext.dtype(tensor), "parameter"))
        for i, tensor in enumerate(_tensors(output)):
            specs.append(TensorSpec(f"out{i}", _shape(tensor), TorchContext.dtype(tensor), "output"))
        return tuple(specs)

    def operations(self, model: Any, inputs: Any = (), **kwargs: Any) -> Sequence[Operation]:
        return self.trace(model, inputs, **kwargs).operations

    # -- timing -----------------------------------------------------------------------------
    def benchmark(  # type: ignore[override]
        self,
        model: Any,
        *inputs: Any,
        warmup: int = 10,
        repeats: int = 30,
        kwargs: Mapping[str, Any] | None = None,
    ) -> Measurement:
        """Time inference runs under ``inference_mode``, waiting for CUDA inside each run."""
        if not callable(model):
            raise AdapterError(f"TorchAdapter.benchmark: model={model!r} is not callable")
        device = next(_tensors((inputs, kwargs)), None)
        on_cuda = device is not None and device.device.type == "cuda"
        telemetry = _CudaTelemetry(device.device) if on_cuda and device is not None else None

        def run(*args: Any, **kw: Any) -> Any:
            with torch.inference_mode():
                return model(*args, **kw)

        return benchmark(run, *inputs, warmup=warmup, repeats=repeats, telemetry=telemetry, **dict(kwargs or {}))

    # -- hardware ---------------------------------------------------------------------------
    def hardware(self, device: Any = None) -> HardwareSpec:
        from ..hardware.detect import detect_hardware

        spec, _ = detect_hardware(device or "cpu")
        return spec

    def calibrate(  # type: ignore[override]
        self,
        device: Any = "cpu",
        dtypes: Sequence[str] = ("float32", "bfloat16"),
        size: int | None = None,
        copy_bytes: int | None = None,
        repeats: int = 3,
    ) -> tuple[HardwareSpec, Any]:
        """Measure matmul FLOP/s per dtype and copy bandwidth through PyTorch on ``device``."""
        from ..hardware.calibrate import calibrate_with
        from ..hardware.detect import detect_hardware, resolve_device
        from ._torch.calibrate import torch_copy_probe, torch_matmul_probe

        ref = resolve_device(device)
        target = torch.device("cpu" if ref.kind == "cpu" else f"{ref.platform}:{ref.index}")
        notes = []
        try:
            reference, _ = detect_hardware(device, memory_bandwidth=1.0 if ref.kind == "cpu" else None)
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
            dtypes=dtypes,
            size=size or (2048 if on_cpu else 8192),
            copy_bytes=copy_bytes or (256 << 20 if on_cpu else 1 << 30),
            repeats=repeats,
            reference=reference,
            notes=notes,
            compare_bandwidth=not on_cpu,
        )


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
