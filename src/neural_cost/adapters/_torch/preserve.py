"""Nothing the user can observe changes when a PyTorch model is traced, timed or profiled.

``trace``, ``benchmark`` and ``profile_model`` (which traces) all run the model inside
``preserved``, the one snapshot/restore path. Put back afterwards, also when the model raises:

- registered buffers: every buffer's values (copied whole: BatchNorm's running statistics
  are written by kernels that do not say so in their schema; buffers are usually small), and
  the very buffer objects in each submodule's ``_buffers`` (``self.steps = self.steps + 1``
  replaces the object; the original is put back);
- parameters: the very objects in ``_parameters``; their values when an op writes into them
  (``WriteGuard`` copies a tensor just before an op writes into it per the op's schema, so
  a forward that clamps a weight in place is undone at no cost when nothing writes); a
  training step's every parameter the optimizer holds (snapshotted whole);
- each submodule's plain attributes (``__dict__`` entries other than its parameters, buffers,
  submodules and PyTorch's own bookkeeping): ``.training`` and flags set in forward come
  back, attributes the forward added are removed, and a list, dict or set attribute gets its
  items back (one level deep); tensors held in such attributes are guarded like parameters;
- gradients (the very ``.grad`` tensors, or None), the optimizer's state and hyperparameters
  (the same dicts and tensors) and its other attributes (``_opt_called``, which an attached
  LR scheduler's wrapper adds on ``step()``); a scheduler itself is never stepped;
- the CPU and CUDA RNG states;
- inputs the model writes into in place: detected (the guard, and each input's version
  counter), put back, and named in a note on the trace;
- tensors that share a storage (q, k, v unbound from one tensor; parameters that are views of
  one flat buffer; an input that is a view of a parameter): the guard copies the whole storage
  before its first write and puts it back once, whichever view was written.

A training trace with an optimizer runs one untraced step before the traced one (so the optimizer
state exists, as in the timed runs after warmup); both are inside ``preserved``, so everything
is put back once, to what it was before the first.

Timing runs under ``no_grad``, not ``inference_mode``: a tensor the forward stores (a
reassigned buffer, a cache) is then an ordinary tensor, never an inference tensor that the
next ordinary in-place update refuses. Before timing, one untimed run under the guard learns
which parameters and inputs the forward writes; the timed runs are not watched.

What cannot be restored, in general: tensors the model reaches other than through its
modules and inputs (closures, globals, objects nested inside attributes) that it mutates in
place; state held outside PyTorch (files, counters in other objects); a write only some runs
make, which the untimed benchmark probe did not see; a lazy module materialized by its first
run. An input changed in place by an op whose schema does not say it writes is detected by
its version counter and named in a note, but kept.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .recorder import tensors_in

# PyTorch's own per-module bookkeeping (hook dicts, _parameters...): never restored as plain
# attributes. ``training`` is the user's flag and is restored like any attribute.
_INTERNAL = frozenset(torch.nn.Module().__dict__) - {"training"}


def _storage_key(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return id(tensor)


def _put(target: torch.Tensor, value: torch.Tensor) -> None:
    """``target[...] = value`` in place, also into a tensor the user made under inference_mode."""
    with torch.inference_mode(target.is_inference()), torch.no_grad():
        target.copy_(value)


def input_tensors(args: Any, kwargs: Mapping[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """The input tensors with the names a trace's boundary gives them (arg0..., key0...)."""
    named = [(f"arg{i}", t) for i, t in enumerate(tensors_in(args))]
    for key, value in kwargs.items():
        named.extend((f"{key}{j or ''}", t) for j, t in enumerate(tensors_in(value)))
    return named


class WriteGuard:
    """Copies a protected tensor's storage just before an op first writes into it (per its
    schema), to restore it afterwards: the module's parameters, tensors held in its attributes,
    and the inputs.

    Cheaper than cloning the whole model up front: inference rarely writes to its state, so
    usually nothing is copied. Views share a storage (q, k, v unbound from one tensor, parameters
    that are views of one flat buffer, an input that is a view of a parameter), so the whole
    storage is copied once and put back once, whichever view was written; the note names each
    input whose bytes overlap a written view."""

    def __init__(self, module: torch.nn.Module | None, inputs: Sequence[tuple[str, torch.Tensor]] = ()) -> None:
        tensors: list[torch.Tensor] = list(module.parameters()) if module is not None else []
        for submodule in module.modules() if module is not None else ():
            tensors.extend(v for k, v in vars(submodule).items() if k not in _INTERNAL and isinstance(v, torch.Tensor))
        named: list[tuple[str | None, torch.Tensor]] = [(None, t) for t in tensors]
        named.extend(inputs)
        self.inputs = [(name, t) for name, t in inputs if t.numel() > 0]
        self.protected: dict[int, list[torch.Tensor]] = {}
        for _, tensor in named:
            if tensor.numel() > 0:
                self.protected.setdefault(_storage_key(tensor), []).append(tensor)
        self.saved: dict[int, tuple[Any, Any]] = {}  # storage key: (storage or tensor, its copy)
        self.written: set[str] = set()

    def before(self, func: Any, args: Any, kwargs: Any) -> None:
        if not self.protected or not func._schema.is_mutable:
            return
        for position, argument in enumerate(func._schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = args[position] if position < len(args) else kwargs.get(argument.name)
            for tensor in tensors_in(value):
                key = _storage_key(tensor)
                held = self.protected.get(key)
                if held is None:
                    continue
                if key not in self.saved:
                    self.saved[key] = _snapshot(held[0])
                self.written.update(name for name, t in self.inputs if name not in self.written and _overlap(t, tensor))

    def restores(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor``'s storage was written and is put back (views share a version
        counter, so a write into one view bumps every other view's too)."""
        return _storage_key(tensor) in self.saved

    def written_inputs(self) -> list[str]:
        return [name for name, _ in self.inputs if name in self.written]

    def restore(self) -> None:
        for target, value in self.saved.values():
            if isinstance(target, torch.Tensor):
                _put(target, value)
            else:
                target.copy_(value)


def _snapshot(tensor: torch.Tensor) -> tuple[Any, Any]:
    """The whole storage ``tensor`` lives in and a copy of its bytes (a tensor without a storage,
    a subclass or a sparse one: the tensor and a copy of its values)."""
    try:
        storage = tensor.untyped_storage()
        return storage, storage.clone()  # type: ignore[no-untyped-call]
    except (RuntimeError, NotImplementedError):
        return tensor, tensor.detach().clone()


def _span(tensor: torch.Tensor) -> tuple[int, int]:
    """The bytes of its storage a strided tensor can touch: [first, last + 1)."""
    size = int(tensor.element_size())
    first = int(tensor.storage_offset()) * size
    reach = sum((int(n) - 1) * abs(int(s)) for n, s in zip(tensor.shape, tensor.stride(), strict=True))
    return first, first + (reach + 1) * size


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors of one storage may share bytes (by their spans: interleaved views,
    columns of one matrix, count as overlapping)."""
    if _storage_key(a) != _storage_key(b):
        return False
    try:
        (a0, a1), (b0, b1) = _span(a), _span(b)
    except (RuntimeError, NotImplementedError):
        return True
    return a0 < b1 and b0 < a1


class WriteWatch(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Runs each aten call after ``guard.before``: what the benchmark's untimed probe runs under."""

    def __init__(self, guard: WriteGuard) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.guard = guard

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.guard.before(func, args, kwargs)
        return func(*args, **kwargs)


def _optimizer_params(optimizer: Any | None) -> list[torch.Tensor]:
    if optimizer is None:
        return []
    return [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())]


def _unique(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor once (tied weights, a parameter both in the module and the optimizer)."""
    return list({id(t): t for t in tensors}.values())


class Grads:
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


def graph_leaves(output: Any) -> list[torch.Tensor]:
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


class _Attributes:
    """An object's plain attributes, put back as they were: the same objects under the same
    names, names added since removed, and the items of a list, dict or set one level deep."""

    def __init__(self, target: Any, skip: frozenset[str]) -> None:
        self.target = target
        self.skip = skip
        self.values = {k: v for k, v in vars(target).items() if k not in skip}
        self.items = {k: copy.copy(v) for k, v in self.values.items() if type(v) in (list, dict, set)}

    def restore(self) -> None:
        attributes = vars(self.target)
        for key in [k for k in attributes if k not in self.skip and k not in self.values]:
            del attributes[key]
        attributes.update(self.values)
        for key, items in self.items.items():
            held = self.values[key]
            held.clear()
            if isinstance(held, list):
                held.extend(items)
            else:
                held.update(items)


class _ModuleState:
    """Each submodule's ``_parameters``, ``_buffers`` and ``_modules`` mappings (the very
    tensor objects), its plain attributes, and every buffer's values."""

    def __init__(self, module: torch.nn.Module | None) -> None:
        modules = list(module.modules()) if module is not None else []
        maps: list[dict[str, Any]] = [
            m.__dict__[key] for m in modules for key in ("_parameters", "_buffers", "_modules")
        ]
        self.maps = [(mapping, dict(mapping)) for mapping in maps]
        self.attributes = [_Attributes(m, _INTERNAL) for m in modules]
        # copied whole: some kernels write buffers without saying so in their schema
        # (native_batch_norm updates running_mean/var in train mode); they are usually small
        self.buffers = [(b, b.detach().clone()) for b in (module.buffers() if module is not None else ())]

    def restore(self) -> None:
        for mapping, original in self.maps:
            mapping.clear()
            mapping.update(original)
        for attributes in self.attributes:  # .training of each submodule: a frozen BatchNorm stays in eval
            attributes.restore()
        for buffer, value in self.buffers:
            _put(buffer, value)


class _OptimizerState:
    """An optimizer's state and hyperparameters, restored in place: the same dicts and the same
    tensors (their values copied back), entries the traced step created removed; and its other
    attributes. Works for any ``torch.optim.Optimizer`` without its state_dict()/load_state_dict()
    (which replace every tensor, and which sharded optimizers cannot run locally)."""

    def __init__(self, optimizer: Any) -> None:
        self.optimizer = optimizer
        self.state = dict(optimizer.state)
        self.entries = {key: dict(entry) for key, entry in self.state.items()}
        self.values = {key: self._copy(entry) for key, entry in self.entries.items()}
        self.groups = [(group, dict(group), self._copy(group)) for group in optimizer.param_groups]
        self.attributes = _Attributes(optimizer, frozenset({"state", "param_groups"}))

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
                _put(original, values[key])
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
        self.attributes.restore()  # _opt_called, which an attached LR scheduler's wrapper sets


class Preserved:
    """What ``preserved`` hands the run: the training step's set-aside gradients, and after the
    restore, notes on what the model changed that the user should know about."""

    def __init__(self) -> None:
        self.grads = Grads()
        self.notes: list[str] = []


@contextlib.contextmanager
def preserved(
    model: Any,
    optimizer: Any | None,
    guard: WriteGuard,
    training: bool = False,
    inputs: Sequence[tuple[str, torch.Tensor]] = (),
) -> Iterator[Preserved]:
    """Run the body, then put back everything listed in this module's docstring.

    A training step changes every parameter the optimizer holds (the model's, and any other
    tensor in its param groups), so they are snapshotted whole; inference restores only what
    an op wrote into (``guard``). A training step runs with the gradients set aside
    (``Preserved.grads``), so the user's ``.grad`` tensors are never accumulated into."""
    module = model if isinstance(model, torch.nn.Module) else None
    module_params = list(module.parameters()) if module is not None else []
    stepped = _unique([*module_params, *_optimizer_params(optimizer)]) if optimizer is not None else []
    params = [(p, p.detach().clone()) for p in stepped]  # an optimizer step rewrites every parameter it holds
    grads = [(p, p.grad) for p in module_params]
    modules = _ModuleState(module)
    optimizer_state = _OptimizerState(optimizer) if optimizer is not None else None
    # inference tensors track no version counter: an op that writes one still shows in the guard
    versions = [(name, t, t._version) for name, t in inputs if not t.is_inference()]
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None  # type: ignore[no-untyped-call]
    done = Preserved()
    if training:
        done.grads.set_aside(_unique([*module_params, *_optimizer_params(optimizer)]))
    try:
        yield done
    finally:
        written = guard.written_inputs()
        unseen = [
            name
            for name, t, version in versions
            if t._version != version and name not in written and not guard.restores(t)
        ]
        guard.restore()
        for param, value in params:
            _put(param, value)
        modules.restore()
        done.grads.put_back()
        for param, grad in grads:  # the gradients the user had (None or their tensors), untouched
            param.grad = grad
        if optimizer_state is not None:
            optimizer_state.restore()  # removes the state the traced step created
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        if written:
            done.notes.append(
                f"the model wrote in place into its input {', '.join(written)}: the values were put back afterwards"
            )
        if unseen:
            done.notes.append(
                f"the model changed its input {', '.join(unseen)} in place through an op whose schema does "
                f"not say it writes: the change was kept"
            )
