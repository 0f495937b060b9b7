"""TorchAdapter: the aten ops a PyTorch model really runs, with module scopes and coverage.

The model runs once under a ``TorchDispatchMode`` that sees every aten call (forward, and
for training the backward and the optimizer step), lowers it through the aten table (see
``_torch/``) and records which buffers it reads and allocates. A composite op that
reaches the mode whole (under ``inference_mode``) and has no table entry runs as its
decomposition, so its parts are counted, once. Module scopes come from forward hooks on every submodule. Nothing
the user can observe changes: hooks and modes are removed even when the model raises, and
parameters, buffers, gradients, optimizer state, the RNG state and each submodule's
train/eval flag are restored.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import weakref
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..core.errors import AdapterError, HardwareError
from ..core.records import Coverage, Operation, Shape, TensorSpec, Trace
from ..hardware.spec import HardwareSpec
from ..measure.device import array_device
from ..measure.timing import Measurement, benchmark
from . import _torch
from ._torch import (  # noqa: F401  (register the table)
    ops_attention,
    ops_conv,
    ops_free,
    ops_indexing,
    ops_matmul,
    ops_movement,
    ops_norms,
    ops_pointwise,
    ops_random_optim,
    ops_reduce,
    ops_rnn,
)
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

    def alive(self) -> list[int]:
        """Ids of the buffers whose storage something still holds (an output, a cache, the
        optimizer's state): they outlive the traced program."""
        return sorted(self._ids[key] for key in list(self._by_storage.keys()) if key in self._ids)


_COMPOSITE = torch._C.DispatchKey.CompositeImplicitAutograd
_COMPOSITES: dict[Any, bool] = {}


def _is_composite(func: Any) -> bool:
    """Whether ``func``'s C++ kernel is CompositeImplicitAutograd: it only calls other aten ops
    (a Python-only decomposition, as upsample_* have for tracing, does not count: eager runs
    the real kernel)."""
    known = _COMPOSITES.get(func)
    if known is None:
        known = _COMPOSITES[func] = bool(torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _COMPOSITE))
    return known


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
        namespace = str(getattr(func, "namespace", "aten"))
        entry = TABLE.get(str(func.overloadpacket.__name__)) if namespace == "aten" else None
        if entry is None and namespace == "aten" and _is_composite(func):
            # A composite op (conv2d, einsum, scaled_dot_product_attention...) reaches this mode
            # whole under inference_mode; run the decomposition eager runs, with the mode on, so
            # that its parts are recorded (once: the composite itself records nothing).
            with self:
                return func._op_dk(_COMPOSITE, *args, **kwargs)
        self.guard.before(func, args, kwargs)
        out = func(*args, **kwargs)
        call = AtenCall(func, tuple(args), dict(kwargs), out)
        name = call.name
        self.executed += 1
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

    def finish(self) -> None:
        """A last dataflow step that reads every buffer still held when the program ends, so the
        liveness walk keeps outputs and state to the end and frees everything else after its
        last use."""
        self.dataflow.append((tuple(self.buffers.alive()), ()))

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


def _optimizer_params(optimizer: Any | None) -> list[torch.Tensor]:
    if optimizer is None:
        return []
    return [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())]


def _unique(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor once (tied weights, a parameter both in the module and the optimizer)."""
    return list({id(t): t for t in tensors}.values())


class _Grads:
    """The ``.grad`` of every tensor a training step may give a gradient to, set aside for
    the step (so that backward writes fresh gradients instead of adding into the user's in
    place) and put back afterwards: the very tensors, or None, as they were."""

    def __init__(self) -> None:
        self.saved: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}

    def set_aside(self, tensors: list[torch.Tensor]) -> None:
        for tensor in tensors:
            if id(tensor) not in self.saved:
                self.saved[id(tensor)] = (tensor, tensor.grad)
                tensor.grad = None

    def put_back(self) -> None:
        for tensor, grad in self.saved.values():
            tensor.grad = grad


def _graph_leaves(output: Any) -> list[torch.Tensor]:
    """The leaf tensors backward from ``output`` accumulates a gradient into: inputs that
    require grad and tensors a plain function closes over, as well as parameters."""
    pending: list[Any] = [output.grad_fn] if isinstance(output, torch.Tensor) else []
    seen: set[Any] = set()  # holds the nodes, so their Python wrappers stay the same objects
    leaves = []
    while pending:
        node = pending.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        pending.extend(child for child, _ in node.next_functions)
    return leaves


class _OptimizerState:
    """An optimizer's state and hyperparameters, restored in place: the same dicts and the same
    tensors (their values copied back), entries the traced step created removed. Works for any
    ``torch.optim.Optimizer`` without its state_dict()/load_state_dict() (which replace every
    tensor, and which sharded optimizers cannot run locally)."""

    def __init__(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        self.state = dict(optimizer.state)
        self.entries = {key: dict(entry) for key, entry in self.state.items()}
        self.values = {key: self._copy(entry) for key, entry in self.entries.items()}
        self.groups = [(group, dict(group), self._copy(group)) for group in optimizer.param_groups]

    @staticmethod
    def _copy(entries: dict[Any, Any]) -> dict[Any, Any]:
        return {
            k: v.detach().clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
            for k, v in entries.items()
            if k != "params"
        }

    @staticmethod
    def _refill(target: dict[Any, Any], originals: dict[Any, Any], values: dict[Any, Any]) -> None:
        target.clear()
        for key, original in originals.items():
            if isinstance(original, torch.Tensor):
                with torch.no_grad():
                    original.copy_(values[key])
                target[key] = original
            else:
                target[key] = values.get(key, original)

    def restore(self) -> None:
        state = self.optimizer.state
        for key in [k for k in state if k not in self.state]:
            del state[key]
        for key, entry in self.state.items():
            self._refill(entry, self.entries[key], self.values[key])
            state[key] = entry
        for group, originals, values in self.groups:
            self._refill(group, originals, values)  # "params": the same list, never copied


@contextlib.contextmanager
def _preserved(model: Any, optimizer: Any | None, guard: _WriteGuard, training: bool = False) -> Iterator[_Grads]:
    """Restore parameters, buffers, gradients, optimizer state, RNG state and every submodule's
    train/eval flag afterwards.

    A training step changes every parameter the optimizer holds (the model's, and any other
    tensor in its param groups), so they are snapshotted whole; inference restores only what
    an op wrote into (``guard``). A training step runs with the gradients set aside
    (``_Grads``), so the user's ``.grad`` tensors are never accumulated into."""
    module = model if isinstance(model, torch.nn.Module) else None
    module_params = list(module.parameters()) if module is not None else []
    stepped = _unique([*module_params, *_optimizer_params(optimizer)]) if optimizer is not None else []
    # an optimizer step rewrites every parameter it holds
    params = [(p, p.detach().clone()) for p in stepped]
    grads = [(p, p.grad) for p in module_params]
    # buffers are copied whole: some kernels write them without saying so in their schema
    # (native_batch_norm updates running_mean/var in train mode); they are usually small
    buffers = [(b, b.detach().clone()) for b in (module.buffers() if module is not None else ())]
    optimizer_state = _OptimizerState(optimizer) if optimizer is not None else None
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None  # type: ignore[no-untyped-call]
    modes = [(m, m.training) for m in module.modules()] if module is not None else []
    set_aside = _Grads()
    if training:
        set_aside.set_aside(_unique([*module_params, *_optimizer_params(optimizer)]))
    try:
        yield set_aside
    finally:
        guard.restore()
        with torch.no_grad():
            for param, value in params:
                param.copy_(value)
            for buffer, value in buffers:
                buffer.copy_(value)
        set_aside.put_back()
        for param, grad in grads:  # the gradients the user had (None or their tensors), untouched
            param.grad = grad
        if optimizer_state is not None:
            optimizer_state.restore()  # removes the state the traced step created
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        for submodule, flag in modes:  # each its own: a frozen BatchNorm in eval stays in eval
            submodule.training = flag


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
            with _preserved(model, optimizer_, guard, training) as grads, _module_scopes(model, scopes):
                if training:
                    output = self._training_step(model, args, kwargs, recorder, loss_fn, optimizer_, notes, grads)
                else:
                    with torch.no_grad(), recorder:
                        output = model(*args, **kwargs)
                recorder.finish()  # before the restore drops the optimizer state the step made
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
        grads: _Grads,
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
            grads.set_aside(_graph_leaves(loss))  # inputs or closed-over tensors that require grad
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
        """Time inference runs under ``inference_mode`` on the device the model's parameters
        (else its inputs) live on, waiting for that CUDA device inside each run. The RNG state
        and the buffers of submodules in train mode (BatchNorm's running statistics) are put
        back afterwards: timing changes nothing in the model."""
        if not callable(model):
            raise AdapterError(f"TorchAdapter.benchmark: model={model!r} is not callable")
        keywords = dict(kwargs or {})  # bound here: a model keyword never meets benchmark()'s own
        reference, source = _reference_tensor(model, inputs, keywords)
        device = reference.device if reference is not None else None
        on_cuda = device is not None and device.type == "cuda"
        telemetry = _CudaTelemetry(device) if on_cuda and device is not None else None

        def run(*args: Any) -> Any:
            with torch.inference_mode():
                return model(*args, **keywords)

        def wait(_result: Any) -> None:  # the model's device, whatever the result holds
            torch.cuda.synchronize(device)

        with _kept_while_timing(model):
            measured = benchmark(
                run, *inputs, warmup=warmup, repeats=repeats, telemetry=telemetry, sync=wait if on_cuda else "auto"
            )
        changes: dict[str, Any] = {"sync": f"torch.cuda.synchronize({device})"} if on_cuda else {}
        info = array_device(reference) if reference is not None else None
        if info is not None and (info.name, info.kind) != (measured.device, measured.device_kind):
            changes.update(device=info.name, device_kind=info.kind, device_source=f"{source}: {info.source}")
        return dataclasses.replace(measured, **changes) if changes else measured

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


def _reference_tensor(model: Any, inputs: Any, kwargs: Any) -> tuple[torch.Tensor | None, str]:
    """The tensor that says where the model runs: its first parameter or buffer (a model on the
    GPU may take its inputs on the CPU), else its first input."""
    if isinstance(model, torch.nn.Module):
        for tensor in itertools.chain(model.parameters(), model.buffers()):
            return tensor, "the model's parameters"
    return next(_tensors((inputs, kwargs)), None), "the inputs"


@contextlib.contextmanager
def _kept_while_timing(model: Any) -> Iterator[None]:
    """The RNG state and the buffers of submodules in train mode, restored after timing runs."""
    modules = list(model.modules()) if isinstance(model, torch.nn.Module) else []
    buffers = [(b, b.detach().clone()) for m in modules if m.training for b in m.buffers(recurse=False)]
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in buffers:
                buffer.copy_(value)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


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
