"""Nothing the user can observe changes when a PyTorch model is traced or timed.

Parameters, buffers, gradients, optimizer state, the RNG state and each submodule's
train/eval flag are put back after a trace (``preserved``); the RNG state and the buffers
of submodules in train mode after timing runs (``kept_while_timing``).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import torch

from .recorder import tensors_in


def _storage_key(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return id(tensor)


class WriteGuard:
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
            for tensor in tensors_in(value):
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
def preserved(model: Any, optimizer: Any | None, guard: WriteGuard, training: bool = False) -> Iterator[Grads]:
    """Restore parameters, buffers, gradients, optimizer state, RNG state and every submodule's
    train/eval flag afterwards.

    A training step changes every parameter the optimizer holds (the model's, and any other
    tensor in its param groups), so they are snapshotted whole; inference restores only what
    an op wrote into (``guard``). A training step runs with the gradients set aside
    (``Grads``), so the user's ``.grad`` tensors are never accumulated into."""
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
    set_aside = Grads()
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


@contextlib.contextmanager
def kept_while_timing(model: Any) -> Iterator[None]:
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
